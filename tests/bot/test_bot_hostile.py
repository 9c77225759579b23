"""Issue 9 through the bot: hostile uploads each get one sentence naming the reason, nothing of them is
stored, and another channel is answered while they are read."""

from __future__ import annotations

import asyncio
import logging

from raptor_tools.hostile import (
    HIDDEN_MARK,
    MB,
    VISIBLE,
    encrypted_office_file,
    entity_bomb_docx,
    hidden_html,
    hidden_runs_docx,
    inflating_stream_pdf,
    invisible_text,
    many_pages_pdf,
)
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
    assert "Done: 1 file added and 2 not added." in content
    assert [d.name for d in h.engine.documents(KB_A)] == ["hidden.txt"]
    with h.engine.in_space(KB_A):  # the server's own store
        stored = " ".join(n.text for n in h.engine.store.nodes_of_kb(h.engine.store.kb_id(KB_A)))
    assert not any(0xE0000 <= ord(ch) <= 0xE007F or ch in "\u202e\u2066" for ch in stored)


async def test_disguised_files_and_hidden_text_through_the_bot(harness):
    """A PDF named .docx and a password-protected Word file each get the sentence that says what they
    are, under names written as Discord markup (shown inert); text no reader of an HTML page or a Word
    document sees is not stored."""
    h = harness
    disguised = h.fake.add_file("@everyone **[report]** ||x||.docx", many_pages_pdf(1))
    locked = h.fake.add_file("<@123456789012345678> locked.docx", encrypted_office_file())
    page = h.fake.add_file("page.html", hidden_html())
    word = h.fake.add_file("hidden.docx", hidden_runs_docx())
    token = h.kb_add(disguised, locked, page, word, channel=CHAN_A)
    replies = await h.replies_done(token, lambda r: "Done" in text_of(r[0]), what="the disguised uploads")
    content = replies[0]["content"]
    assert "is a PDF file, not a Word document" in content
    assert "encrypted (password-protected) or old-style (.doc) Word file" in content
    assert "\\@everyone \\*\\*\\[report\\]\\*\\* \\|\\|x\\|\\|.docx" in content
    assert "\\<@123456789012345678\\>" in content
    assert "Done: 2 files added and 2 not added." in content
    assert sorted(d.name for d in h.engine.documents(KB_A)) == ["hidden.docx", "page.html"]
    with h.engine.in_space(KB_A):  # the server's own store
        stored = " ".join(n.text for n in h.engine.store.nodes_of_kb(h.engine.store.kb_id(KB_A)))
    assert HIDDEN_MARK not in stored and VISIBLE in stored


async def test_a_file_name_shows_in_its_status_line_as_it_is_stored_without_controls_or_direction_marks(harness):
    """Names Discord passes through: a right-to-left override ('invoice\\u202etxt.md' reads as 'invoicedm.txt'),
    a line break, a zero-width space, a bell, a Windows folder path. The status line, refusals included, shows
    each as /kb list does: the stored name, one line, nothing that reorders or hides characters."""
    h = harness
    names = ["invoice\u202etxt.md", "two\nlines.md", "zero\u200bwidth.md", "bell\x07.txt", "..\\..\\etc\\passwd.txt"]
    files = [h.fake.add_file(n, f"Fact {i}: the tide turns at {i} o'clock.".encode()) for i, n in enumerate(names)]
    replies = await h.replies_done(h.kb_add(*files), lambda r: "Done" in text_of(r[0]), what="the uploads")
    content = replies[0]["content"]
    stored = sorted(d.name for d in h.engine.documents(KB_A))
    assert stored == ["bell.txt", "invoicetxt.md", "passwd.txt", "two lines.md", "zerowidth.md"]
    for name in stored:
        assert f"✅ **{name}** added" in content, content
    assert not any(ch in content for ch in "\u202e\u200b\x07"), content
    assert len(content.splitlines()) == 1 + len(names), content  # the header, one line per file
    refused = h.fake.add_file("odd\u202egnp.png", b"\x89PNG")
    [reply] = await h.replies_done(h.kb_add(refused))
    assert "\n❌ **oddgnp.png** has an unsupported file type" in text_of(reply), text_of(reply)


async def test_a_file_name_cannot_write_lines_of_its_own_into_the_bots_log(harness, caplog):
    """A name with line breaks ('x\\n2026-01-01 ERROR bot: ...') is logged quoted, on its record's one line,
    accepted or refused: a member cannot forge log lines for the operator to read."""
    h = harness
    caplog.set_level(logging.INFO)
    forged = "\n2026-01-01 00:00:00,000 ERROR bot: forged"
    files = [h.fake.add_file(f"notes{forged}.md", b"The tide turns at noon."), h.fake.add_file(f"x{forged}.exe", b"MZ")]
    for attachment in files:
        await h.replies_done(h.kb_add(attachment), lambda r: "Done" in text_of(r[0]) or "❌" in text_of(r[0]))
    logged = [r.getMessage() for r in caplog.records if "forged" in r.getMessage()]
    assert len(logged) >= 2 and not any("\n" in line for line in logged), logged
