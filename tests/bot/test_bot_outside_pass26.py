"""botqa26's outside pass (docs/BOT.md, last section), played with real discord.py objects against the fake
Discord API over the real engine; each test fails on the code before its fix."""

from __future__ import annotations

import asyncio

from tests.bot.conftest import BOB, BOT_ID, text_of, upload_finished
from tests.bot.test_bot_flows import add_doc, ask
from tests.bot.test_bot_outside_pass23 import bot_answer_after

HANDBOOK = """# Harrowgate Community Choir: members' handbook

Rehearsals are on Tuesday evenings from 7.30 pm in St Aldhelm's church hall on Fenwick Road.
The musical director is Priya Natarajan, who joined in 2019 after twelve years at the Leeds conservatoire.
Tomasz Wójcik runs the music library; scores are returned in the blue box by the piano.
"""

SPRING = """# Spring concert programme

The spring concert is on 9 May at the Corn Exchange, starting at 7 pm. The choir sings Fauré's Requiem
and three Gershwin songs; tickets cost twelve pounds from Siobhán Kelly.
"""


async def _choir_thread(h) -> int:
    """Auto-ingest on, the handbook added, "Who runs the music library?" asked: the answer's thread."""
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    await add_doc(h, "handbook.md", HANDBOOK)
    _, replies = await ask(h, "Who runs the music library?")
    assert "Tomasz Wójcik" in replies[0]["content"]
    return next(t for t in h.bot.get_guild(h.bot.guilds[0].id).threads).id


def _statuses(h, thread: int) -> list[dict]:
    return [
        m for m in h.fake.channel_messages(thread) if int(m["author"]["id"]) == BOT_ID and upload_finished(m)
    ]


async def test_a_question_posted_with_a_file_in_an_answer_thread_is_answered_from_that_file(make_harness):
    """Bob posts the spring programme in the answer's thread and asks beside it "when is the spring concert?".
    Before, the question was answered first, from the documents already there ("nothing … answers this"),
    and the file was added after."""
    h = await make_harness(message_content=True)
    thread = await _choir_thread(h)
    sent = h.say(
        thread,
        "here's the programme - when is the spring concert?",
        user=BOB,
        attachments=[h.fake.add_file("spring.md", SPRING.encode())],
    )
    reply = await h.fake.wait_for(
        lambda: bot_answer_after(h, thread, sent), what="the answer beside the file"
    )
    assert "9 May" in reply["content"], reply["content"]
    assert "✅ **spring.md** added" in text_of(_statuses(h, thread)[0])


async def test_a_file_posted_with_a_caption_in_an_answer_thread_is_not_searched_as_a_question(make_harness):
    """ "here's the programme for the spring concert" with the file asks nothing: the upload's status answers
    it. Before, the caption was searched as a follow-up and answered with passages."""
    h = await make_harness(message_content=True)
    thread = await _choir_thread(h)
    sent = h.say(
        thread,
        "here's the programme for the spring concert",
        user=BOB,
        attachments=[h.fake.add_file("spring.md", SPRING.encode())],
    )
    await h.fake.wait_for(lambda: _statuses(h, thread), what="the upload's status")
    later = h.say(thread, "who sells the tickets?", user=BOB)
    reply = await h.fake.wait_for(
        lambda: bot_answer_after(h, thread, later), what="the next follow-up's answer"
    )
    assert "Siobhán Kelly" in reply["content"], reply["content"]
    await asyncio.sleep(0.5)
    assert bot_answer_after(h, thread, sent) is None
