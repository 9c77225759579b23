"""Deletions honoured everywhere, end to end over the fake Discord API: a message deleted (one, in bulk,
with its channel or thread) or a member forgotten leaves no byte of its text in any file under the data directory,
nor in the thread memory a follow-up is given or a saved answer, while an unrelated conversation stays;
and /kb forget-me while an import is still paging the member's messages keeps every later one out."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

import bot.messages
from bot.answering import thread_name
from bot.state import REMOVED_DOCUMENT
from bot.sync import REDACTED
from raptor_engine.storage.removals import quote_marks, quotes
from tests.bot.bot_samples import LIGHTHOUSE
from tests.bot.conftest import ALICE, BOB, CAROL, CHAN_A, CHAN_B, GUILD, text_of
from tests.bot.test_bot_flows import add_doc, ask
from tests.bot.test_bot_messages import KB_A, START, chatter, held, imported
from tests.test_privacy import files_holding

SECRET = "zqxprivate4471"  # one token as the full-text index stores it, so raw bytes find it
FERRY = "When does the harbour ferry leave?"
LOCKER = "What is the locker combination?"
SECRET_TEXT = f"My locker combination is {SECRET}, keep it between us."
OTHER_TEXT = "Bob again: the bakery sells rye on Thursdays."


async def turns_of(h, thread_id: int, count: int) -> list:
    """The thread's stored turns once there are `count` of them."""

    async def stored():
        turns = await h.bot.services.state.history(GUILD, thread_id, limit=100)
        return turns if len(turns) >= count else None

    return await h.fake.wait_for(stored, what=f"{count} turns in thread {thread_id}")


def thread_of(h, question: str) -> int:
    return next(t.id for t in h.bot.get_guild(GUILD).threads if t.name == thread_name(question))


def saved_questions(h) -> list[str]:
    with h.engine.in_space(KB_A):
        return [r[0] for r in h.engine.store.db.execute("SELECT question FROM bot_answers").fetchall()]


async def post_secret(h, how: str) -> tuple[dict, dict]:
    """Bob's message holding the secret and another of his, into the knowledge base: imported from another
    channel, or (to be deleted with their thread) synced from a thread of this channel."""
    if how != "thread":
        secret = h.fake.post(CHAN_B, SECRET_TEXT, user=BOB, when=START + timedelta(hours=2))
        other = h.fake.post(CHAN_B, OTHER_TEXT, user=BOB, when=START + timedelta(hours=3))
        await imported(h, h.add_messages(CHAN_B))
        return secret, other
    token = h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="sync")
    await h.replies_done(token, lambda r: "Sync is now" in text_of(r[0]))
    h.secret_thread = h.open_thread(CHAN_A, "Lockers")
    secret, other = h.say(h.secret_thread, SECRET_TEXT, user=BOB), h.say(h.secret_thread, OTHER_TEXT, user=BOB)
    await h.fake.wait_for(lambda: held(h, secret) and held(h, other), what="the thread's messages synced")
    return secret, other


async def remove(h, how: str, secret: dict, other: dict) -> None:
    """Take the secret message away as a member or moderator would."""
    if how == "single":
        h.delete(secret)
    elif how == "bulk":
        h.delete(secret, other)
    elif how == "channel":
        h.delete_channel(CHAN_B)
    elif how == "thread":
        h.delete_thread(h.secret_thread, CHAN_A)
    else:
        token = h.slash("kb", sub="forget-me", user=BOB)
        await h.replies_done(token, lambda r: "Done" in text_of(r[0]))
    await h.fake.wait_for(lambda: not held(h, secret), what="the removal to be applied")
    assert await h.bot.services.sync.settled(timeout=300)


@pytest.mark.parametrize("how", ["single", "bulk", "channel", "thread", "forget-me"])
async def test_removed_text_leaves_every_file_the_thread_memory_and_later_answers(make_harness, how):
    h = await make_harness(message_content=True)
    for i in range(6):  # alice's notes in this channel: the unrelated conversation draws on them
        h.fake.post(
            CHAN_A,
            f"Ferry note {i}: the harbour ferry leaves at seven from the north pier.",
            user=ALICE,
            when=START + timedelta(minutes=5 * i),
        )
    await imported(h, h.add_messages())
    await ask(h, FERRY)
    unrelated = thread_of(h, FERRY)
    before = await turns_of(h, unrelated, 2)

    secret, other = await post_secret(h, how)
    _, answer = await ask(h, LOCKER)
    assert SECRET in text_of(answer[0])
    thread = thread_of(h, LOCKER)
    h.user_message(thread, "Could you repeat the locker combination?")
    turns = await turns_of(h, thread, 4)
    assert any(SECRET in t.content for t in turns)
    data = h.engine.settings.data_dir
    assert files_holding(data, SECRET.encode())  # the check can fail: the text is on disk first

    await remove(h, how, secret, other)
    assert files_holding(data, SECRET.encode()) == []
    assert [t.content for t in await turns_of(h, thread, 4)] == [REDACTED] * 4  # the follow-ups' memory
    assert await turns_of(h, unrelated, 2) == before  # the unrelated conversation stays
    assert LOCKER not in saved_questions(h) and FERRY in saved_questions(h)
    h.user_message(thread, "What was the locker combination again?")
    again = await turns_of(h, thread, 6)
    assert all(SECRET not in t.content for t in again)
    assert all(SECRET not in m["content"] for m in h.fake.channel_messages(thread)[-1:])
    assert files_holding(data, SECRET.encode()) == []


async def test_forget_me_while_an_import_pages_the_members_messages_keeps_every_later_one_out(
    make_harness, monkeypatch
):
    """The import reads a first batch (bob's among them) and stores it; while it asks for the next page,
    bob runs /kb forget-me to the end; then the import reads on: nothing of bob's may be added."""
    h = await make_harness(message_content=True)
    monkeypatch.setattr(bot.messages, "IMPORT_BATCH", 100)  # a batch per page of history
    history = chatter(h, CHAN_B, 250)
    asked, release = asyncio.Event(), asyncio.Event()
    route = h.fake._route
    pages = 0

    async def paused_route(method, path, body, query=None):
        nonlocal pages
        if method == "GET" and path == f"channels/{CHAN_B}/messages":
            pages += 1
            if pages == 2:  # the first batch is stored; the next page waits for the test
                asked.set()
                await release.wait()
        return await route(method, path, body, query)

    monkeypatch.setattr(h.fake, "_route", paused_route)
    token = h.add_messages(CHAN_B, limit=1000)
    await asyncio.wait_for(asked.wait(), timeout=600)
    assert h.engine.message_ids(KB_A, author_id=BOB)  # the first batch held some of bob's
    forget = h.slash("kb", sub="forget-me", user=BOB)
    await h.replies_done(forget, lambda r: "Done" in text_of(r[0]))
    assert h.engine.message_ids(KB_A, author_id=BOB) == []
    release.set()
    replies = await imported(h, token, timeout=600)
    assert "250 messages read" in replies[0]["content"]
    assert h.engine.message_ids(KB_A, author_id=BOB) == []
    others = {int(m["id"]) for m in history if int(m["author"]["id"]) in (ALICE, CAROL)}
    assert set(h.engine.message_ids(KB_A)) == others


def test_a_quote_is_five_words_in_a_row_or_a_code_like_word_of_the_removed_text():
    marks = quote_marks(["The gate code for the boathouse is 4417, ask Bob.", "my token is ab12cd34"])
    assert quotes("Per the notes, THE GATE CODE FOR THE boathouse changed.", marks)  # case folded
    assert quotes("It was ab12cd34 all along", marks)
    assert not quotes("The gate code changed; ask Bob about the boathouse.", marks)  # words, not a run
    assert not quotes("The year had 4417 visitors and 12 boats.", marks)  # a number alone is no code
    assert not quotes("", marks) and not quotes("The gate code for the boathouse is 4417", set())


async def test_a_removed_document_leaves_no_file_and_no_show_context_page(make_harness):
    h = await make_harness()
    await add_doc(h, "lighthouse.md", LIGHTHOUSE)
    await add_doc(h, "lockers.md", f"# Lockers\n\nThe locker combination is {SECRET}, kept by the warden.\n")
    _, answer = await ask(h, LOCKER)
    assert SECRET in text_of(answer[0])
    data = h.engine.settings.data_dir
    assert files_holding(data, SECRET.encode())
    token = h.slash("kb", [{"name": "document", "type": 3, "value": "lockers.md"}], sub="remove")
    prompt = (await h.replies_done(token))[0]
    h.click(prompt, "raptor:confirm")
    await h.fake.wait_for(lambda: "Removed" in h.fake.messages[int(prompt["id"])]["content"], what="removal")
    assert [d.name for d in h.engine.documents(KB_A)] == ["lighthouse.md"]
    with h.engine.in_space(KB_A):
        pages = [r[0] for r in h.engine.store.db.execute("SELECT context_json FROM bot_answers").fetchall()]
    assert pages and all(SECRET not in page for page in pages) and any(REMOVED_DOCUMENT in p for p in pages)
    thread = thread_of(h, LOCKER)
    turns = await turns_of(h, thread, 2)
    # the answer that quoted it is a note; the question, the member's own words, stays for follow-ups
    assert not any(SECRET in t.content for t in turns) and [t.content for t in turns] == [LOCKER, REMOVED_DOCUMENT]
