"""botqa17: conversations played through the real bot process that nobody had tried, each fixed gap held
here over the fake Discord API (real engine, no LLM)."""

from __future__ import annotations

import dataclasses

import pytest

from bot.adding import Tally
from bot.hints import LINK_HINT, files_outcome
from tests.bot.conftest import BOT_ID, CHAN_A, GUILD, text_of, thread_payload
from tests.bot.test_bot_answers import bot_reply_in, footer_of, open_archive_thread
from tests.bot.test_bot_flows import add_doc
from tests.bot.test_bot_mentions import replies_to
from tests.bot.test_bot_real_process import MANUAL, MINUTES


async def test_a_follow_up_that_names_what_its_own_it_means_is_not_read_against_the_last_answer(
    make_harness, bot_settings
):
    """The thread's answer quoted archive.md; "How many members were present at the meeting of the
    allotment society and who chaired it?" names its own 'it' (the meeting), so it is searched as asked and
    answered from minutes.md alone. Before, 'it' was read as the archive ("Searched as: … who chaired the
    archive?") and the answer quoted the archive's committee beside the minutes."""
    h = await make_harness(settings=dataclasses.replace(bot_settings, questions_per_minute=100))
    thread = await open_archive_thread(h)
    await add_doc(h, "minutes.md", MINUTES)
    question = "How many members were present at the meeting of the allotment society and who chaired it?"
    h.user_message(thread, question, mention_bot=True)
    reply = await bot_reply_in(h, thread, 1)
    assert "Joan Petrie (chair)" in reply["content"], reply["content"]
    sources = reply["embeds"][0]["description"]
    assert "minutes.md" in sources and "archive.md" not in sources, sources
    assert "archive" not in footer_of(reply), footer_of(reply)


async def test_a_question_that_is_only_a_link_gets_the_links_sentence(make_harness, bot_settings):
    """/ask with nothing but a URL, and the same typed in the answer's thread: one sentence saying links are
    not read (privately to /ask, as a reply in the thread), no search. Before, the address's words were
    searched and the answer quoted passages sharing them ("https://example.com/keeper" quoted the keepers)."""
    h = await make_harness(settings=dataclasses.replace(bot_settings, questions_per_minute=100), message_content=True)
    thread = await open_archive_thread(h)
    token = h.ask("https://example.com/archive/keeper")
    reply = (await h.replies_done(token))[0]
    assert text_of(reply) == LINK_HINT and reply["flags"] & 64, reply
    link = h.say(thread, "<https://example.com/archive/keeper>")
    answer = await h.fake.wait_for(lambda: replies_to(h, link), what="the thread's reply")
    assert answer == [LINK_HINT], answer
    assert not [m for m in h.fake.channel_messages(thread) if m["embeds"]]  # nothing was searched


async def test_a_question_beside_files_that_auto_ingest_adds_is_not_left_in_silence(make_harness):
    """A member mentions the bot with a file and a question where auto-ingest is on: the file is added and
    the question is told where to go (before: the file's progress only, the question unanswered); files
    posted with a bare mention still get no sentence."""
    h = await make_harness(message_content=True)
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    asked = h.user_message(
        CHAN_A, "what oil does it take?", mention_bot=True, attachments=[h.fake.add_file("manual.md", MANUAL.encode())]
    )
    bare = h.user_message(CHAN_A, "", mention_bot=True, attachments=[h.fake.add_file("minutes.md", MINUTES.encode())])
    added = files_outcome(Tally(added=1))
    await h.fake.wait_for(lambda: added in replies_to(h, asked), 240, "the hint")
    await h.fake.wait_for(
        lambda: sum(text_of(m).startswith("Done") for m in h.fake.channel_messages(CHAN_A)) >= 2, 240, "both files"
    )
    progress = [r for r in replies_to(h, asked) + replies_to(h, bare) if r.startswith("Done")]
    assert len(progress) == 2 and "✅ **manual.md** added" in progress[0], progress  # each file added
    assert [r for r in replies_to(h, bare) if not r.startswith("Done")] == []
    assert replies_to(h, asked).count(added) == 1


@pytest.mark.parametrize("unarchived_first", [True, False])
async def test_a_follow_up_in_an_archived_answer_thread_is_answered(make_harness, bot_settings, unarchived_first):
    """The answer's thread auto-archived (THREAD_UPDATE: discord.py drops it from its cache); a member posts
    a follow-up in it, which unarchives it. Discord's THREAD_UPDATE may come before the message or after
    it: either way the follow-up is answered (the message that came first was dropped in silence, its
    thread unknown)."""
    h = await make_harness(settings=dataclasses.replace(bot_settings, questions_per_minute=100), message_content=True)
    thread = await open_archive_thread(h)
    payload = thread_payload(thread, CHAN_A, "archive", owner=BOT_ID)
    payload["thread_metadata"]["archived"] = True
    h.state.parse_thread_update(payload)
    assert h.bot.get_guild(GUILD).get_thread(thread) is None
    unarchived = thread_payload(thread, CHAN_A, "archive", owner=BOT_ID)
    if unarchived_first:
        h.state.parse_thread_update(unarchived)
    h.say(thread, "Who was the first keeper?")
    if not unarchived_first:
        h.state.parse_thread_update(unarchived)
    reply = await bot_reply_in(h, thread, 1)
    assert "Thomas Reid" in reply["content"], reply["content"]
