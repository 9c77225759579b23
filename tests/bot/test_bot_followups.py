"""A follow-up sent as a Discord reply to an older message of the thread is read against that exchange,
not the latest one; a follow-up edited is answered again in its answer's place (fake Discord, real engine,
no LLM)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from types import SimpleNamespace

import discord
import pytest

from bot.answering import reconcile_questions
from bot.state import ThreadRecord
from raptor_engine.types import Turn
from tests.bot.bot_samples import SOURDOUGH
from tests.bot.conftest import ALICE, BOT_ID, GUILD, NOW, snowflake, user_payload
from tests.bot.test_bot_answers import (
    bot_reply_in,
    footer_of,
    open_archive_thread,
    quotes_of,
    remembered_turns,
)
from tests.bot.test_bot_flows import KB_A, add_doc
from tests.bot.test_bot_state import open_state


async def test_a_reply_to_an_older_answer_or_question_follows_that_exchange(make_harness, bot_settings):
    h = await make_harness(settings=dataclasses.replace(bot_settings, questions_per_minute=100))
    thread = await open_archive_thread(h)
    asked = h.user_message(thread, "Who computerised the catalogue?", mention_bot=True)
    computerised = await bot_reply_in(h, thread, 1)
    assert "David Orr" in quotes_of(computerised["content"])[0]
    h.user_message(thread, "Who was the first keeper?", mention_bot=True)
    first_keeper = await bot_reply_in(h, thread, 2)
    assert "Thomas Reid" in first_keeper["content"]

    # a plain follow-up leans on the latest exchange
    h.user_message(thread, "and when?", mention_bot=True)
    assert footer_of(await bot_reply_in(h, thread, 3)).startswith("Searched as: When was the first keeper?")

    # a reply to the older answer, and one to the member's own older question, lean on that exchange
    for count, older in enumerate((int(computerised["id"]), int(asked["id"])), start=4):
        h.user_message(thread, "and when?", mention_bot=True, reply_to=older)
        reply = await bot_reply_in(h, thread, count)
        assert footer_of(reply).startswith("Searched as: When was the catalogue computerised?"), footer_of(reply)
        assert "1985" in quotes_of(reply["content"])[0]

    # the reply's exchange is stored as the newest: a plain follow-up after it leans on it
    h.user_message(thread, "who?", mention_bot=True)
    latest = footer_of(await bot_reply_in(h, thread, 6))
    assert latest.startswith("Searched as: Who computerised the catalogue?"), latest


async def test_a_reply_gets_the_turns_up_to_its_exchange_however_old(tmp_path):
    """Fifteen exchanges, each turn with its Discord message: a reply to one of the latest is given the
    usual turns and the index of its exchange among them; a reply to an older one the opening exchange
    and the turns ending with its own (the later ones would not fit); an unknown message nothing."""
    spaces, state = open_state(tmp_path)
    for i in range(15):
        turns = [Turn("user", f"q{i}"), Turn("assistant", f"a{i}")]
        await state.add_turns(1, 9, turns, posted=[[1000 + i], [2000 + i, 3000 + i]])
    latest = await state.history(1, 9)
    turns, follows = await state.reply_history(1, 9, 3013)  # the second message of answer 13
    assert turns == latest and turns[2 * follows].content == "q13"
    turns, follows = await state.reply_history(1, 9, 1007)  # the member's question 7
    assert [t.content for t in turns] == ["q0", "a0", *(f"{r}{i}" for i in range(3, 8) for r in "qa")]
    assert turns[2 * follows].content == "q7"
    assert await state.reply_history(1, 9, 42) is None
    spaces.close()


async def test_an_edited_follow_up_is_answered_again_in_its_answers_place(make_harness, bot_settings):
    """Edit the question, the answer follows: the same message edited (no second answer), and the thread's
    memory holds the question as edited, so the next follow-up leans on it. An edit that leaves the
    question's words as they were (Discord shows an embed, the message is pinned) answers nothing."""
    h = await make_harness(settings=dataclasses.replace(bot_settings, questions_per_minute=100))
    thread = await open_archive_thread(h)
    asked = h.user_message(thread, "When did Thomas Reid leave?", mention_bot=True)
    answer = await bot_reply_in(h, thread, 1)
    assert "1948" in answer["content"] and "David Orr" not in answer["content"]
    answer_id = int(answer["id"])
    h.state.parse_message_update(dict(asked, edited_timestamp=NOW, pinned=True))  # the words unchanged
    edited = dict(asked, content=f"<@{BOT_ID}> Who computerised the catalogue?", edited_timestamp=NOW)
    h.state.parse_message_update(edited)
    await h.fake.wait_for(lambda: "David Orr" in h.fake.messages[answer_id]["content"], what="the answer edited")
    assert len(h.fake.versions[answer_id]) == 2  # one edit: the unchanged words were not answered again
    assert [m["id"] for m in h.fake.channel_messages(thread) if m["embeds"]] == [answer["id"]]

    h.user_message(thread, "and when?", mention_bot=True)
    later = footer_of(await bot_reply_in(h, thread, 2))
    assert later.startswith("Searched as: When was the catalogue computerised?"), later


async def test_an_edited_question_the_bot_never_answered_is_answered_as_a_follow_up(make_harness):
    h = await make_harness()
    thread = await open_archive_thread(h)
    unanswered = {
        "id": str(snowflake()), "channel_id": str(thread), "guild_id": str(GUILD),
        "author": user_payload(ALICE, "alice"), "content": f"<@{BOT_ID}> Who computerised the catalogue?",
        "timestamp": NOW, "edited_timestamp": NOW, "tts": False, "mention_everyone": False,
        "mentions": [user_payload(BOT_ID, "raptor", True)], "mention_roles": [], "attachments": [],
        "embeds": [], "pinned": False, "type": 0, "flags": 0, "components": [],
    }  # sent while the bot was down: only its edit reaches it
    h.state.parse_message_update(unanswered)
    assert "David Orr" in (await bot_reply_in(h, thread, 1))["content"]


async def test_a_follow_up_after_the_cited_document_was_removed_says_so_once(make_harness, bot_settings):
    """The thread's answer cited archive.md; /kb remove takes it out; the follow-up's answer (from what
    remains) says in one sentence that the earlier answer's document is gone, and the next one does not
    say it again."""
    h = await make_harness(settings=dataclasses.replace(bot_settings, questions_per_minute=100))
    thread = await open_archive_thread(h)
    await add_doc(h, "bread.txt", SOURDOUGH)
    h.user_message(thread, "How long does the dough rise?", mention_bot=True)
    before = await bot_reply_in(h, thread, 1)
    assert NOTICE not in before["content"]  # nothing removed yet

    token = h.slash("kb", [{"name": "document", "type": 3, "value": "archive.md"}], sub="remove")
    prompt = (await h.replies_done(token))[0]
    h.click(prompt, "raptor:confirm")
    await h.fake.wait_for(lambda: "Removed" in h.fake.messages[int(prompt["id"])]["content"], what="removal")

    h.user_message(thread, "Who was the keeper after her?", mention_bot=True)
    after = await bot_reply_in(h, thread, 2)
    assert f"⚠️ The document “archive.md”, {NOTICE}" in after["content"], after["content"]
    assert "bread.txt" not in after["content"].split("⚠️")[1]  # only the removed document is named
    h.user_message(thread, "And how is the bread baked?", mention_bot=True)
    assert NOTICE not in (await bot_reply_in(h, thread, 3))["content"]  # said once


NOTICE = "cited by an earlier answer in this thread, was removed from the knowledge base since"


async def two_questions(h) -> tuple[int, dict, dict, dict]:
    """A thread on the archive, two follow-ups answered: (thread, the first, the second, its answer)."""
    thread = await open_archive_thread(h)
    kept = h.say(thread, "Who was the first keeper?")
    await bot_reply_in(h, thread, 1)
    asked = h.say(thread, "Who computerised the catalogue?")
    answer = await bot_reply_in(h, thread, 2)
    assert "David Orr" in answer["content"]
    # the bot records an exchange just after posting its answer: a close before that would lose it
    state = h.bot.services.state
    await h.fake.wait_for(lambda: remembered_turns(state, thread, 6), what="the second exchange remembered")
    return thread, kept, asked, answer


async def assert_forgotten(h, thread: int, kept: dict) -> None:
    """The second question's exchange left the thread's memory, and its 'Show context' page went with it."""
    turns = await h.bot.services.state.history(GUILD, thread)
    assert not [t for t in turns if "computerised" in t.content or "David Orr" in t.content], turns
    assert [t.content for t in turns if t.role == "user"][-1] == kept["content"]
    with h.engine.in_space(KB_A):
        pages = h.engine.store.db.execute("SELECT question FROM bot_answers").fetchall()
    assert pages and "Who computerised the catalogue?" not in [p[0] for p in pages], pages


async def test_a_deleted_question_leaves_the_threads_memory_with_its_answer(make_harness, bot_settings):
    """A member deletes a question they asked in the thread: its exchange leaves the thread's memory (the
    next follow-up does not lean on it) and the bot deletes its answer, which repeats the question; the
    other exchanges stay."""
    h = await make_harness(settings=dataclasses.replace(bot_settings, questions_per_minute=100), message_content=True)
    thread, kept, asked, answer = await two_questions(h)
    h.delete(asked)
    await h.fake.wait_for(lambda: int(answer["id"]) not in h.fake.messages, what="the answer's deletion")
    await assert_forgotten(h, thread, kept)
    h.say(thread, "and when?")
    footer = footer_of(await bot_reply_in(h, thread, 2))
    assert footer.startswith("Searched as: When was the first keeper?"), footer


async def test_a_question_deleted_while_the_bot_was_down_leaves_the_threads_memory_at_the_next_start(
    make_harness, bot_settings
):
    """The deletion event never reached the bot: its next start checks the questions of its recently active
    threads in Discord (a 404 is a deleted question) and takes each deleted one's exchange out of the
    thread's memory, its answer message and 'Show context' page with it."""
    settings = dataclasses.replace(bot_settings, questions_per_minute=100)
    h = await make_harness(settings=settings, message_content=True)
    thread, kept, asked, answer = await two_questions(h)
    await h.bot.close()
    h.delete(asked, dispatch=False)  # deleted while the bot was down: no event
    again = await make_harness(settings=settings, message_content=True)
    await again.bot._reconciling
    assert int(answer["id"]) not in again.fake.messages  # its answer repeated the question
    await assert_forgotten(again, thread, kept)


async def test_the_start_checks_the_questions_of_the_latest_active_threads_only(tmp_path):
    """Which questions a start checks: the latest active threads, at most so many, each with the questions
    its follow-ups are given."""
    spaces, state = open_state(tmp_path)
    for thread in (1, 2, 3):
        await state.add_thread(ThreadRecord(thread, KB_A, GUILD, 9), opened_by="alice")
        for turn in range(3):
            ids = [[thread * 100 + turn], [thread * 100 + 50 + turn]]
            await state.add_turns(GUILD, thread, [Turn("user", f"q{turn}"), Turn("assistant", "a")], posted=ids)
    found = await state.recent_questions(threads=2)
    assert len(found) == 2 and {r.thread_id for r, _ in found} <= {1, 2, 3}
    assert all(ids == [r.thread_id * 100 + t for t in range(3)] for r, ids in found)
    assert await state.recent_questions(days=-1) == []  # none used since tomorrow
    spaces.close()


class Reading:
    """A thread as the start reads it: each question's fetch answers with `error` (an HTTP status and a
    Discord error code, 0 for a response without one), or the message when None."""

    def __init__(self, thread_id: int, error: tuple[int, int] | None):
        self.id, self.error, self.fetched = thread_id, error, []

    async def fetch_message(self, message_id: int):
        self.fetched.append(message_id)
        if self.error is None:
            return SimpleNamespace(id=message_id)
        status, code = self.error
        response = SimpleNamespace(status=status, reason="Not Found" if status == 404 else "Error")
        body = {"code": code, "message": "Unknown Message"} if code else "<html>404 Not Found</html>"
        raise (discord.NotFound if status == 404 else discord.HTTPException)(response, body)


@pytest.mark.parametrize(
    "error, forgotten",
    [
        ((404, 10008), True),  # Unknown Message: the question was deleted
        ((404, 0), False),  # a 404 with no Discord error code (a proxy, an outage's page): nothing is known
        ((404, 10004), False),  # Unknown Guild: the server cannot be read, which says nothing of the question
        ((403, 50001), False),  # Missing Access
        ((503, 0), False),
        (None, False),
    ],
)
async def test_the_start_forgets_a_question_only_on_discords_unknown_message(tmp_path, error, forgotten):
    """Only Discord's "Unknown Message" is a deleted question: any other failure to read it (a 404 without
    Discord's code, another resource unknown, no access, an outage) leaves the thread's memory as it is."""
    spaces, state = open_state(tmp_path)
    await state.add_thread(ThreadRecord(7, KB_A, GUILD, 9), opened_by="alice")
    await state.add_turns(GUILD, 7, [Turn("user", "q1"), Turn("assistant", "a1")], posted=[[701], [702]])
    services = SimpleNamespace(state=state, jobs=SimpleNamespace(track=contextlib.nullcontext))
    thread = Reading(7, error)
    deleted = await reconcile_questions(services, lambda guild_id, thread_id: asyncio.sleep(0, thread))
    assert thread.fetched[0] == 701  # (then, forgotten, its answer 702 to delete it)
    assert deleted == (1 if forgotten else 0)
    assert [t.content for t in await state.history(GUILD, 7)] == ([] if forgotten else ["q1", "a1"])
    spaces.close()
