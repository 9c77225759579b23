"""A member who mentions the bot outside its answer threads gets one sentence pointing at the command that
does what they wanted (bot/hints.py): a link is not fetched, files wait for a manager, questions go to /ask.
A message that does not mention the bot by name (@everyone) gets nothing."""

from __future__ import annotations

import asyncio

from bot.hints import ASK_HINT, FILES_HINT, LINK_HINT
from tests.bot.bot_samples import LIGHTHOUSE
from tests.bot.conftest import CHAN_A, CHAN_B, text_of


def replies_to(h, message: dict) -> list[str]:
    return [
        text_of(m)
        for m in h.fake.channel_messages(int(message["channel_id"]))
        if str((m.get("message_reference") or {}).get("message_id")) == message["id"]
    ]


async def test_a_mention_outside_answer_threads_gets_the_sentence_for_what_it_carries(make_harness):
    h = await make_harness(message_content=True)
    link = h.user_message(CHAN_A, "please read https://example.com/manual.pdf", mention_bot=True)
    question = h.user_message(CHAN_A, "how is the lens cleaned?", mention_bot=True)
    manual = h.fake.add_file("manual.md", LIGHTHOUSE.encode())
    files = h.user_message(CHAN_B, "the manual", mention_bot=True, attachments=[manual])
    everyone = h.user_message(CHAN_B, "@everyone https://example.com/manual.pdf")
    for message, hint in ((link, LINK_HINT), (question, ASK_HINT), (files, FILES_HINT)):
        assert await h.fake.wait_for(lambda m=message: replies_to(h, m), what="a hint") == [hint]
    await asyncio.sleep(0.5)
    assert replies_to(h, everyone) == []
    assert not h.fake.cdn_hits  # nothing was downloaded, and nothing added
