"""Issue 9 through the bot: hostile uploads each get one sentence naming the reason, nothing of them is
stored, and another channel is answered while they are read."""

from __future__ import annotations

import asyncio

from raptor_tools.hostile import MB, entity_bomb_docx, inflating_stream_pdf, invisible_text
from tests.bot.bot_samples import LIGHTHOUSE
from tests.bot.conftest import CHAN_A, CHAN_B, text_of
from tests.bot.test_bot_flows import KB_A, add_doc, ask, sources_of


async def test_hostile_uploads_get_their_reason_while_another_channel_answers(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE, channel=CHAN_B)
    bomb = h.fake.add_file("inflate.pdf", inflating_stream_pdf(40 * MB))
    laughs = h.fake.add_file("laughs.docx", entity_bomb_docx())
    hidden = h.fake.add_file("hidden.txt", invisible_text())
    token = h.kb_add(bomb, laughs, hidden, channel=CHAN_A)
    (_, answer), replies = await asyncio.gather(
        ask(h, "How is the lighthouse lens cleaned?", channel=CHAN_B),
        h.replies_done(token, lambda r: "Done" in text_of(r[0]), what="the hostile uploads"),
    )
    assert "kestrel.md" in sources_of(answer)
    content = replies[0]["content"]
    assert "inflate.pdf" in content and "expands to more than 32 MB when unpacked" in content
    assert "laughs.docx" in content and "XML entity declarations" in content
    assert "Done: 1 of 3 file(s) added." in content
    assert [d.name for d in h.engine.documents(KB_A)] == ["hidden.txt"]
    stored = " ".join(n.text for n in h.engine.store.nodes_of_kb(h.engine.store.kb_id(KB_A)))
    assert not any(0xE0000 <= ord(ch) <= 0xE007F or ch in "\u202e\u2066" for ch in stored)
