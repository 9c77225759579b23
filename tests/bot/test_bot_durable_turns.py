"""A thread's exchange outlives a bot stopped while posting its answer (bot/answering.py
`posting_remembered`, `settle_pending`): it is recorded, pending, before the answer is posted, and the
answer's messages attached after. A bot killed in between (here: closed at that step, and a second bot
started on the same data folder, as a restart does) finds the answer in Discord at its next start and
keeps the exchange; one killed before posting finds none and drops it (no member saw that answer). Each
test fails on the code before (the exchange was written only after posting: lost)."""

from __future__ import annotations

import asyncio
import sqlite3

from bot.state import BotState
from tests.bot.conftest import BOT_ID, CHAN_A, GUILD, thread_payload
from tests.bot.test_bot_answers import (
    ARCHIVE,
    FIRST_QUESTION,
    add_doc,
    bot_reply_in,
    footer_of,
    open_archive_thread,
    remembered_turns,
)

ASKED = "Who was the first keeper of the archive?"


def stored_questions(h) -> list[str]:
    """Every question turn in the data folder's store files (the server's space), pending or not."""
    found = []
    for path in h.bot.settings.data_dir.rglob("*.db"):
        with sqlite3.connect(path) as db:
            if db.execute("select 1 from sqlite_master where name = 'bot_turns'").fetchone():
                found += [r[0] for r in db.execute("select content from bot_turns where role = 'user'")]
    return found


def killed_at(h, monkeypatch, name: str, when=lambda *a, **k: True):
    """`BotState.<name>` stops the bot where it is called (the process dies there: nothing after it runs);
    the original is put back for the next bot. Returns an event set when it happened."""
    original = getattr(BotState, name)
    happened = asyncio.Event()

    async def kill(self, *args, **kwargs):
        if not when(*args, **kwargs):
            return await original(self, *args, **kwargs)
        if name == "add_turns":
            await original(self, *args, **kwargs)  # recorded: the kill comes right after
        monkeypatch.setattr(BotState, name, original)
        happened.set()
        await h.bot.close()
        raise asyncio.CancelledError

    monkeypatch.setattr(BotState, name, kill)
    return happened


async def restarted(make_harness, thread: int):
    """A new bot on the same data folder, the thread in its cache as GUILD_CREATE would bring it."""
    again = await make_harness(message_content=True)
    again.state.parse_thread_create(dict(thread_payload(thread, CHAN_A, "Who was appointed", owner=BOT_ID)))
    return again


async def settled(h) -> bool:
    return not await h.bot.services.state.pending_exchanges()


async def test_a_bot_killed_after_posting_a_follow_ups_answer_keeps_its_exchange(make_harness, monkeypatch):
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    happened = killed_at(h, monkeypatch, "attach_answer")
    h.say(thread, ASKED)
    first = await bot_reply_in(h, thread, 1)
    assert "Thomas Reid" in first["content"]
    await h.fake.wait_for(happened.is_set, what="the kill")
    again = await restarted(make_harness, thread)
    await again.fake.wait_for(lambda: settled(again), what="the pending exchange settled")
    turns = await again.fake.wait_for(lambda: remembered_turns(again.bot.services.state, thread, 4), what="turns")
    assert turns[2].content == ASKED and "Thomas Reid" in turns[3].content
    again.say(thread, "and when did he leave?")
    footer = footer_of(await bot_reply_in(again, thread, 2))
    assert "Thomas Reid" in footer.split("\n")[0], footer  # read against the kept exchange
    # a reply to the kept answer finds its exchange: its message was attached at the start
    exchange = await again.bot.services.state.reply_history(GUILD, thread, int(first["id"]))
    assert exchange is not None and exchange[0][2].content == ASKED


async def test_a_bot_killed_before_posting_drops_the_exchange_no_one_saw(make_harness, monkeypatch):
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    happened = killed_at(h, monkeypatch, "add_turns", when=lambda *a, **k: k.get("pending"))
    h.say(thread, ASKED)
    await h.fake.wait_for(happened.is_set, what="the kill")
    assert ASKED in stored_questions(h)  # recorded, pending
    assert not [m for m in h.fake.channel_messages(thread) if m["embeds"]]  # never posted
    again = await restarted(make_harness, thread)
    await again.fake.wait_for(lambda: settled(again), what="the pending exchange settled")
    assert ASKED not in stored_questions(again)  # dropped, from the file too
    assert len(await again.bot.services.state.history(GUILD, thread)) == 2  # the opening exchange only


async def test_a_question_deleted_while_its_exchange_was_pending_leaves_with_it(make_harness, monkeypatch):
    """Killed after posting; the member deletes the question while the bot is down: the start keeps the
    exchange (its answer is there), then finds the question gone and forgets both, deleting the answer."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    happened = killed_at(h, monkeypatch, "attach_answer")
    question = h.say(thread, ASKED)
    answer = await bot_reply_in(h, thread, 1)
    await h.fake.wait_for(happened.is_set, what="the kill")
    h.delete(question, dispatch=False)
    again = await restarted(make_harness, thread)
    await again.fake.wait_for(lambda: int(answer["id"]) not in again.fake.messages, what="the answer deleted")
    assert ASKED not in stored_questions(again)
    assert await settled(again)


async def test_a_follow_up_answer_that_cannot_be_posted_leaves_no_exchange(make_harness):
    """Posting refused (the bot lost Send Messages in Threads): the pending exchange is dropped at once."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    h.fake.forbid("POST", rf"^channels/{thread}/messages$")
    h.say(thread, ASKED)
    await h.fake.wait_for(lambda: h.fake.calls_to("POST", rf"^channels/{thread}/messages$"), what="the refusal")
    await h.fake.wait_for(lambda: settled(h), what="the exchange dropped")
    assert ASKED not in stored_questions(h)


async def asked_in_channel(h, monkeypatch, name: str, when=lambda *a, **k: True) -> int:
    """/ask FIRST_QUESTION in the channel, the bot killed at `BotState.<name>` while opening its thread;
    returns the thread's id (the answer's first message's, as Discord gives a thread started from it)."""
    await add_doc(h, "archive.md", ARCHIVE)
    happened = killed_at(h, monkeypatch, name, when)
    token = h.ask(FIRST_QUESTION)
    replies = await h.replies_done(token, lambda r: "Margaret Hale" in r[0]["content"], what="the answer")
    await h.fake.wait_for(happened.is_set, what="the kill")
    return int(replies[0]["id"])


async def test_a_bot_killed_after_opening_an_ask_thread_keeps_the_thread_and_its_exchange(make_harness, monkeypatch):
    """Killed after the thread was opened on the answer, before its opening exchange was attached: the
    start finds the thread and keeps both (before: recorded after opening, in two writes, both lost; the
    thread's follow-ups went unanswered)."""
    h = await make_harness(message_content=True)
    thread = await asked_in_channel(h, monkeypatch, "attach_answer")
    assert thread in h.fake.threads_made
    again = await restarted(make_harness, thread)
    await again.fake.wait_for(lambda: settled(again), what="the pending exchange settled")
    assert await again.bot.services.state.thread(GUILD, thread) is not None
    turns = await again.bot.services.state.history(GUILD, thread)
    assert [t.content for t in turns][:1] == [FIRST_QUESTION] and "Margaret Hale" in turns[1].content
    again.say(thread, "and when did she leave?")
    footer = footer_of(await bot_reply_in(again, thread, 1))
    assert "Margaret Hale" in footer.split("\n")[0], footer  # read against the kept opening exchange


async def test_a_bot_killed_before_opening_an_ask_thread_drops_its_record(make_harness, monkeypatch):
    """Killed after recording the thread and its opening exchange (pending), before opening it: the start
    finds no such thread (Discord answers 404 Unknown Channel) and drops both, from the file too."""
    h = await make_harness(message_content=True)
    thread = await asked_in_channel(h, monkeypatch, "add_turns", when=lambda *a, **k: k.get("opened") is not None)
    assert thread not in h.fake.threads_made
    assert FIRST_QUESTION in stored_questions(h)  # recorded, pending
    again = await make_harness(message_content=True)
    again.fake.deleted_channels.add(thread)  # no channel has that id
    await again.fake.wait_for(lambda: settled(again), what="the pending exchange settled")
    assert FIRST_QUESTION not in stored_questions(again)
    assert await again.bot.services.state.thread(GUILD, thread) is None


async def test_an_ask_thread_that_cannot_be_opened_leaves_no_record(make_harness):
    """Discord refuses the thread: the pending thread and exchange are dropped at once."""
    h = await make_harness(message_content=True)
    await add_doc(h, "archive.md", ARCHIVE)
    h.fake.forbid("POST", rf"^channels/{CHAN_A}/messages/\d+/threads$")
    token = h.ask(FIRST_QUESTION)
    replies = await h.replies_done(token, lambda r: "Margaret Hale" in r[0]["content"], what="the answer")
    await h.fake.wait_for(lambda: h.fake.calls_to("POST", rf"^channels/{CHAN_A}/messages/\d+/threads$"), what="the refusal")
    await h.fake.wait_for(lambda: settled(h), what="the exchange dropped")
    assert FIRST_QUESTION not in stored_questions(h)
    assert await h.bot.services.state.thread(GUILD, int(replies[0]["id"])) is None


EDITED = "When did Margaret Hale leave the archive?"


async def edited_and_killed(h, monkeypatch, name: str, when=lambda *a, **k: True) -> tuple[int, dict, dict]:
    """ASKED in a thread and answered, then edited into EDITED, the bot killed at `BotState.<name>` while
    answering it again; returns the thread, the question and the answer's first message."""
    thread = await open_archive_thread(h)
    question = h.say(thread, ASKED)
    answer = await bot_reply_in(h, thread, 1)
    assert "Thomas Reid" in answer["content"]
    happened = killed_at(h, monkeypatch, name, when)
    h.edit(question, EDITED)
    await h.fake.wait_for(happened.is_set, what="the kill")
    return thread, question, answer


async def test_a_bot_killed_after_editing_an_answer_keeps_the_edited_exchange(make_harness, monkeypatch):
    """Killed after the answer's messages were edited to the new answer, before the new exchange replaced
    the old: the start sees the new answer in them and puts the new exchange in the old one's place
    (before: replaced after posting; a kill kept the old exchange beside the new answer)."""
    h = await make_harness(message_content=True)
    thread, _, answer = await edited_and_killed(h, monkeypatch, "attach_replacement")
    assert "1975" in h.fake.messages[int(answer["id"])]["content"]  # the new answer was shown
    again = await restarted(make_harness, thread)
    await again.fake.wait_for(lambda: settled(again), what="the pending exchange settled")
    turns = await again.bot.services.state.history(GUILD, thread)
    assert [t.content for t in turns][2:] == [EDITED, turns[3].content] and "1975" in turns[3].content
    assert ASKED not in stored_questions(again)


async def test_a_bot_killed_before_editing_an_answer_keeps_the_old_exchange(make_harness, monkeypatch):
    """Killed after recording the new exchange (pending), before editing the answer: the messages still
    show the old answer, so the start drops the new exchange and the old one stays."""
    h = await make_harness(message_content=True)
    thread, _, answer = await edited_and_killed(
        h, monkeypatch, "add_turns", when=lambda *a, **k: k.get("pending") and a[2][0].content == EDITED
    )
    assert "Thomas Reid" in h.fake.messages[int(answer["id"])]["content"]  # never edited
    again = await restarted(make_harness, thread)
    await again.fake.wait_for(lambda: settled(again), what="the pending exchange settled")
    turns = await again.bot.services.state.history(GUILD, thread)
    assert [t.content for t in turns][2] == ASKED and "Thomas Reid" in turns[3].content
    assert EDITED not in stored_questions(again)
