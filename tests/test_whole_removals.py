"""A removal is whole across the engine and the bot's records (bot m007 `bot_removals`): what the bot must
redact is recorded in the removal's own transaction, finished at once or at the next start, and an answer
saved while the removal landed is checked against it. A real engine and the bot's tables, no Discord."""

from __future__ import annotations

import asyncio
import sqlite3
from types import SimpleNamespace

import pytest

from bot import posted
from bot.state import REMOVED_DOCUMENT, REMOVED_SOURCE, BotState, CitedNodes, ThreadRecord
from bot.sync import REDACTED, MessageSync
from raptor_engine import Engine, Settings
from raptor_engine.ingest.messages import MessagePlace
from raptor_engine.types import ContextNode, Turn
from tests.message_samples import history, message

KB = "guild-1-channel-2"
THREAD = 55
HARBOUR = "# Harbour\n\nThe harbour light at Saltmere was kept by Mara Quill from 1887 until 1910.\n"
BEES = "# Bees\n\nBeekeepers extract honey with a centrifuge after uncapping the comb in late summer.\n"
QUILL = "The harbour light at Saltmere was kept by Mara Quill from 1887 until 1910."
SECRET = "zqxprivate4471"


def open_engine(tmp_path, embedder) -> Engine:
    return Engine(Settings.from_env(data_dir=tmp_path / "data"), embedder=embedder)


@pytest.fixture
async def engine(tmp_path, embedder):
    engine = open_engine(tmp_path, embedder)
    await engine.ingest(KB, "harbour.md", HARBOUR.encode())
    await engine.ingest(KB, "bees.md", BEES.encode())
    yield engine
    engine.close()


def leaf_of(engine: Engine, document: str) -> int:
    with engine.in_space(KB):
        nodes = engine.store.nodes_of_kb(engine.store.kb_id(KB))
    return next(n.id for n in nodes if n.document == document and n.kind == "leaf")


def context_of(engine: Engine) -> list[ContextNode]:
    harbour, bees = leaf_of(engine, "harbour.md"), leaf_of(engine, "bees.md")
    return [
        ContextNode(harbour, 0, "harbour.md", 0.9, QUILL, 8, 1, heading=("Harbour",)),
        ContextNode(bees, 0, "bees.md", 0.8, "A centrifuge.", 4, 1),
        ContextNode(10**9, 1, None, 0.7, "A summary since rebuilt.", 5, 2),  # no store holds it: kept
    ]


async def saved_and_cited(engine: Engine, state: BotState) -> int:
    """A thread whose answer cited harbour.md, and a saved answer ('Show context') quoting it."""
    await state.add_thread(ThreadRecord(THREAD, KB, 1, 2), opened_by="alice")
    turns = [Turn("user", "Who kept the light?"), Turn("assistant", QUILL)]
    await state.add_turns(1, THREAD, turns, cited=CitedNodes([leaf_of(engine, "harbour.md")]))
    return await state.save_answer(KB, "Who kept the light?", context_of(engine), 17, 100)


def bot_rows(engine: Engine) -> str:
    """Every bot table's rows of the server's file, as one text."""
    path, _ = engine.spaces.files_of(KB)
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table' and name like 'bot_%'")]
        return "\n".join(str(row) for t in tables for row in conn.execute(f"select * from {t}"))  # noqa: S608
    finally:
        conn.close()


def pending(engine: Engine) -> int:
    path, _ = engine.spaces.files_of(KB)
    conn = sqlite3.connect(path)
    try:
        return conn.execute("select count(*) from bot_removals where pending is not null").fetchone()[0]
    finally:
        conn.close()


def services_of(engine: Engine, state: BotState) -> SimpleNamespace:
    return SimpleNamespace(engine=engine, state=state, jobs=SimpleNamespace(uploads=None), sync=None)


class Crash(Exception):
    """Stands for the process dying between the engine's removal and the bot's redaction."""


def crash_before_finishing(state: BotState) -> None:
    async def crash(*args, **kwargs):
        raise Crash

    state.finish_removals = crash  # type: ignore[method-assign]


@pytest.mark.parametrize("remove", ["document", "clear"])
async def test_a_removal_cut_short_before_the_redaction_is_finished_at_the_next_start(tmp_path, embedder, remove):
    engine = open_engine(tmp_path, embedder)
    await engine.ingest(KB, "harbour.md", HARBOUR.encode())
    await engine.ingest(KB, "bees.md", BEES.encode())
    state = BotState(engine.spaces)
    answer_id = await saved_and_cited(engine, state)
    harbour_sha = next(d.sha256 for d in engine.documents(KB) if d.name == "harbour.md")
    crash_before_finishing(state)
    with pytest.raises(Crash):
        if remove == "document":
            await posted.remove_document(services_of(engine, state), KB, harbour_sha)
        else:
            await posted.clear_documents(services_of(engine, state), KB)
    assert "harbour.md" not in [d.name for d in engine.documents(KB)]  # the engine's part is done
    assert QUILL in bot_rows(engine) and pending(engine) == 1  # the bot's is not, and is on record
    state.close()
    engine.close()

    engine = open_engine(tmp_path, embedder)  # the next start
    state = BotState(engine.spaces)
    assert await state.finish_every_removal() == 1
    saved = await state.answer(1, answer_id)
    assert saved.nodes[0].text == REMOVED_DOCUMENT and saved.nodes[0].document == REMOVED_SOURCE
    assert saved.nodes[0].heading == ()
    assert "Mara Quill" not in bot_rows(engine) and pending(engine) == 0
    assert [t.content for t in await state.history(1, THREAD)] == ["Who kept the light?", REMOVED_DOCUMENT]
    assert await state.finish_every_removal() == 0  # once
    state.close()
    engine.close()


async def a_secret_told_in_a_thread(tmp_path, embedder) -> tuple[Engine, BotState, list]:
    """Chat messages, one of them a secret that a thread's exchange repeats: (engine, state, messages)."""
    engine = open_engine(tmp_path, embedder)
    messages = history(12)
    messages[3] = message(3, f"My locker combination is {SECRET}, please keep it between us.")
    await engine.add_messages(KB, MessagePlace(400, "general"), messages)
    state = BotState(engine.spaces)
    await state.add_thread(ThreadRecord(THREAD, KB, 1, 2), opened_by="alice")
    await state.add_turns(1, THREAD, [Turn("user", "what is the combination?"), Turn("assistant", f"It is {SECRET}.")])
    return engine, state, messages


async def assert_the_next_start_redacts_the_secret(tmp_path, embedder) -> None:
    engine = open_engine(tmp_path, embedder)
    state = BotState(engine.spaces)
    assert await state.finish_every_removal() == 1
    assert [t.content for t in await state.history(1, THREAD)] == [REDACTED, REDACTED]
    assert SECRET not in bot_rows(engine)  # the pending record's marks went with it
    path, _ = engine.spaces.files_of(KB)
    assert SECRET.encode() not in path.read_bytes()  # scrubbed, not only deleted
    state.close()
    engine.close()


async def test_a_message_removal_cut_short_is_finished_at_the_next_start(tmp_path, embedder):
    engine, state, messages = await a_secret_told_in_a_thread(tmp_path, embedder)
    crash_before_finishing(state)
    services = services_of(engine, state)
    with pytest.raises(Crash):
        await MessageSync(services)._remove(KB, {messages[3].message_id})
    assert SECRET in bot_rows(engine)
    state.close()
    engine.close()
    await assert_the_next_start_redacts_the_secret(tmp_path, embedder)


async def test_a_thread_exchange_written_after_its_messages_removal_is_redacted(tmp_path, embedder):
    """The thread's side of the race: a follow-up's answer drew on a message that is deleted (and its removal
    finished) while the answer is made; the exchange written after that loses it as the redaction would
    have done, cited or not, and the other exchanges are kept."""
    engine = open_engine(tmp_path, embedder)
    messages = history(12)
    messages[3] = message(3, f"My locker combination is {SECRET}, please keep it between us.")
    await engine.add_messages(KB, MessagePlace(400, "general"), messages)
    state = BotState(engine.spaces)
    await state.add_thread(ThreadRecord(THREAD, KB, 1, 2), opened_by="alice")
    kept = [Turn("user", "who wrote first?"), Turn("assistant", "Someone.")]
    await state.add_turns(1, THREAD, kept, message_ids=[messages[1].message_id])
    await MessageSync(services_of(engine, state))._remove(KB, {messages[3].message_id})
    leaked = [Turn("user", "what is the combination?"), Turn("assistant", f"It is {SECRET}.")]
    await state.add_turns(1, THREAD, leaked, message_ids=[messages[2].message_id, messages[3].message_id])
    assert [t.content for t in await state.history(1, THREAD)] == ["who wrote first?", "Someone.", REDACTED, REDACTED]
    assert SECRET not in bot_rows(engine) and pending(engine) == 0
    state.close()
    engine.close()


@pytest.mark.parametrize("remove", ["document", "clear", "messages"])
async def test_a_record_that_fails_leaves_the_removal_undone(engine, remove):
    """The record and the removal are one transaction: neither without the other (a trigger stands for the
    record's insert failing)."""
    messages = history(6)
    await engine.add_messages(KB, MessagePlace(400, "general"), messages)
    state = BotState(engine.spaces)
    await state.ready_for_removal(KB)  # the tables are made
    path, _ = engine.spaces.files_of(KB)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON bot_removals BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    conn.close()
    before = sorted(d.name for d in engine.documents(KB))
    with pytest.raises(sqlite3.IntegrityError, match="refused"):
        if remove == "document":
            await engine.forget(KB, "harbour.md")
        elif remove == "clear":
            await engine.clear(KB)
        else:
            await engine.remove_messages(KB, [messages[2].message_id])
    assert sorted(d.name for d in engine.documents(KB)) == before
    assert engine.message_ids(KB) == [m.message_id for m in messages]
    assert pending(engine) == 0
    state.close()


async def test_a_removal_done_at_once_leaves_nothing_pending(engine):
    state = BotState(engine.spaces)
    answer_id = await saved_and_cited(engine, state)
    sha = next(d.sha256 for d in engine.documents(KB) if d.name == "harbour.md")
    await posted.remove_document(services_of(engine, state), KB, sha)
    # the document's name stays only in the thread's record, for the follow-up's notice (docs/BOT.md)
    assert pending(engine) == 0 and "Mara Quill" not in bot_rows(engine)
    assert (await state.answer(1, answer_id)).nodes[1].text == "A centrifuge."
    state.close()


async def test_an_answer_saved_after_the_removals_redaction_loses_the_removed_nodes(engine):
    """The saved answer's side of the race: the answer's retrieval began before the removal, and it is saved
    after the removal's redaction ran; the recorded removal's nodes are redacted under the same write."""
    import time

    state = BotState(engine.spaces)
    nodes = context_of(engine)
    asked_at = time.time()
    sha = next(d.sha256 for d in engine.documents(KB) if d.name == "harbour.md")
    await posted.remove_document(services_of(engine, state), KB, sha)
    answer_id = await state.save_answer(KB, "Who kept the light?", nodes, 17, 100, since=asked_at)
    saved = await state.answer(1, answer_id)
    assert [n.text for n in saved.nodes] == [REMOVED_DOCUMENT, "A centrifuge.", "A summary since rebuilt."]
    assert [n.document for n in saved.nodes] == [REMOVED_SOURCE, "bees.md", None]
    assert "Mara Quill" not in bot_rows(engine)
    # an answer asked after the removal is not checked against it (a removed node's id may be given again)
    later = await state.save_answer(KB, "Who kept the light?", nodes, 17, 100, since=time.time() + 1)
    assert (await state.answer(1, later)).nodes[0].text == QUILL
    state.close()


async def test_a_malformed_pending_record_is_passed_over_with_a_log_line(engine, caplog):
    state = BotState(engine.spaces)
    await state.ready_for_removal(KB)
    path, _ = engine.spaces.files_of(KB)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO bot_removals (kb, at, note, pending, nodes) VALUES (?, 0, 'n', '{not json', 'nope')", [KB]
        )
    conn.close()
    assert await state.finish_every_removal() == 1
    assert "could not be read" in caplog.text and pending(engine) == 0
    answer_id = await state.save_answer(KB, "q", context_of(engine), 17, 100, since=0.0)  # its nodes: not a list
    assert (await state.answer(1, answer_id)).nodes[0].text == QUILL
    # a saved answer not of the bot's shape (a store from elsewhere) cannot stop a removal's redaction
    broken = await state.save_answer(KB, "q", context_of(engine), 17, 100)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("update bot_answers set context_json = '{\"nodes\": [{\"text\": 5}]}' where id = ?", [broken])
    conn.close()
    sha = next(d.sha256 for d in engine.documents(KB) if d.name == "harbour.md")
    await posted.remove_document(services_of(engine, state), KB, sha)
    assert (await state.answer(1, answer_id)).nodes[0].text == REMOVED_DOCUMENT
    assert await state.answer(1, broken) is None and "could not be read" in caplog.text
    assert "is not a context the bot writes" in caplog.text
    state.close()


async def test_a_pending_record_whose_note_is_not_text_is_passed_over(engine, caplog):
    """A record from elsewhere (`raptor guilds import`) whose note is a blob: writing it into a saved answer
    fails, which rolled back every finish of the file, at each start and each later removal of the channel;
    it is passed over with a log line, and the channel's removals are finished again."""
    state = BotState(engine.spaces)
    answer_id = await saved_and_cited(engine, state)
    await state.ready_for_removal(KB)
    path, _ = engine.spaces.files_of(KB)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO bot_removals (kb, at, note, pending, nodes) VALUES (?, 0, x'00ff', ?, '[]')",
            [KB, '{"every": true}'],
        )
    conn.close()
    assert await state.finish_every_removal() == 1
    assert "could not be read" in caplog.text and pending(engine) == 0
    assert (await state.answer(1, answer_id)).nodes[0].text == QUILL  # the record asked nothing readable
    conn = sqlite3.connect(path)
    with conn:  # a finished one naming the harbour's leaf: an answer saved meanwhile is not stopped by it
        conn.execute(
            "INSERT INTO bot_removals (kb, at, note, nodes) VALUES (?, 1, x'00ff', ?)",
            [KB, f"[{leaf_of(engine, 'harbour.md')}]"],
        )
    conn.close()
    meanwhile = await state.save_answer(KB, "q", context_of(engine), 17, 100, since=0.0)
    assert (await state.answer(1, meanwhile)).nodes[0].text == QUILL
    sha = next(d.sha256 for d in engine.documents(KB) if d.name == "harbour.md")
    await posted.remove_document(services_of(engine, state), KB, sha)
    assert (await state.answer(1, answer_id)).nodes[0].text == REMOVED_DOCUMENT
    state.close()


# ------------------------------------------------------------------ removals made outside the bot


async def raptor(tmp_path, embedder, monkeypatch, *args: str) -> str:
    """`raptor --data-dir <the bot's data> ARGS` in-process (the session's embedder; in a thread, as the
    CLI runs its own event loop); its output."""
    from click.testing import CliRunner

    import raptor_engine.cli as cli_module

    monkeypatch.setattr(cli_module, "Engine", lambda settings: Engine(settings, embedder=embedder))
    argv = ["--data-dir", str(tmp_path / "data"), *args]
    result = await asyncio.to_thread(CliRunner().invoke, cli_module.cli, argv)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("remove", ["cli forget", "engine clear", "engine delete_kb"])
async def test_a_removal_made_outside_the_bot_is_redacted_at_the_bots_next_start(
    tmp_path, embedder, monkeypatch, remove
):
    """The bot saved an answer and a thread quoting harbour.md and stopped; `raptor forget` (or any engine
    caller) removes it; the bot's next start redacts both, as its own removal would have."""
    engine = open_engine(tmp_path, embedder)
    await engine.ingest(KB, "harbour.md", HARBOUR.encode())
    await engine.ingest(KB, "bees.md", BEES.encode())
    state = BotState(engine.spaces)
    answer_id = await saved_and_cited(engine, state)
    state.close()
    if remove == "cli forget":
        engine.close()
        assert "Removed harbour.md" in await raptor(tmp_path, embedder, monkeypatch, "forget", "harbour.md", "--kb", KB)
        engine = open_engine(tmp_path, embedder)
    elif remove == "engine clear":
        assert await engine.clear(KB) == 2
    else:
        assert engine.delete_kb(KB)
    assert "harbour.md" not in [d.name for d in engine.documents(KB)]
    assert QUILL in bot_rows(engine) and pending(engine) == 1  # recorded by the engine, not done yet
    engine.close()

    engine = open_engine(tmp_path, embedder)  # the bot's next start
    state = BotState(engine.spaces)
    assert await state.finish_every_removal() == 1
    saved = await state.answer(1, answer_id)
    assert (saved.nodes[0].text, saved.nodes[0].document) == (REMOVED_DOCUMENT, REMOVED_SOURCE)
    everything = remove != "cli forget"
    assert (saved.nodes[1].text == REMOVED_DOCUMENT) is everything  # bees.md went too with clear
    assert [t.content for t in await state.history(1, THREAD)] == ["Who kept the light?", REMOVED_DOCUMENT]
    assert "Mara Quill" not in bot_rows(engine) and pending(engine) == 0
    path, _ = engine.spaces.files_of(KB)
    assert b"Mara Quill" not in path.read_bytes()
    state.close()
    engine.close()


async def test_messages_removed_outside_the_bot_are_redacted_at_its_next_start(tmp_path, embedder):
    engine, state, messages = await a_secret_told_in_a_thread(tmp_path, embedder)
    state.close()
    assert (await engine.remove_messages(KB, [messages[3].message_id])).removed == 1  # no bot involved
    assert pending(engine) == 1
    engine.close()
    await assert_the_next_start_redacts_the_secret(tmp_path, embedder)


async def test_a_removal_by_the_bot_is_recorded_once(engine):
    state = BotState(engine.spaces)
    await saved_and_cited(engine, state)
    sha = next(d.sha256 for d in engine.documents(KB) if d.name == "harbour.md")
    await posted.remove_document(services_of(engine, state), KB, sha)
    path, _ = engine.spaces.files_of(KB)
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("select kb, note, source, pending from bot_removals").fetchall()
    finally:
        conn.close()
    assert rows == [(KB, REMOVED_DOCUMENT, REMOVED_SOURCE, None)]
    state.close()


async def test_a_store_without_the_bots_tables_records_nothing(engine):
    await engine.forget(KB, "harbour.md")
    path, _ = engine.spaces.files_of(KB)
    conn = sqlite3.connect(path)
    try:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
    finally:
        conn.close()
    assert not {t for t in tables if t.startswith("bot_")}


async def test_a_store_whose_bot_tables_predate_the_record_gets_them_when_opened(tmp_path, embedder):
    """A bot file made before bot migration m007 (no `bot_removals`): the CLI's engine brings the bot's
    tables up to date as it opens the file, so its removal is recorded too."""
    from raptor_engine.storage.store_migrations import bot_migrations

    engine = open_engine(tmp_path, embedder)
    await engine.ingest(KB, "harbour.md", HARBOUR.encode())
    with engine.in_space(KB):
        bot_migrations.apply(engine.store.db, only=[n for n in bot_migrations.names() if n != "m007_removals"])
    engine.close()
    engine = open_engine(tmp_path, embedder)
    await engine.forget(KB, "harbour.md")
    assert pending(engine) == 1
    engine.close()


async def test_a_removal_made_outside_a_running_bot_is_redacted_by_the_channels_next_removal(engine):
    """While the bot runs, another caller's removal is pending until the bot's next removal from that channel
    (or its next start): that removal's finish does every pending record of the channel."""
    state = BotState(engine.spaces)
    answer_id = await saved_and_cited(engine, state)
    await engine.forget(KB, "harbour.md")  # not the bot's: it finishes nothing
    assert pending(engine) == 1
    await engine.ingest(KB, "other.md", b"# Other\n\nNothing of the harbour here, only of the weather.\n")
    sha = next(d.sha256 for d in engine.documents(KB) if d.name == "other.md")
    await posted.remove_document(services_of(engine, state), KB, sha)
    assert pending(engine) == 0 and "Mara Quill" not in bot_rows(engine)
    assert (await state.answer(1, answer_id)).nodes[0].text == REMOVED_DOCUMENT
    state.close()


@pytest.mark.parametrize("first", ["answer", "history"])
async def test_a_running_bot_reads_its_copies_only_after_another_processs_removal_is_finished(
    tmp_path, embedder, monkeypatch, first
):
    """`raptor forget` while the bot runs: the bot's next read of a saved answer ('Show context') or of a
    thread's turns (a follow-up's memory) finishes the recorded removal first."""
    engine = open_engine(tmp_path, embedder)
    await engine.ingest(KB, "harbour.md", HARBOUR.encode())
    await engine.ingest(KB, "bees.md", BEES.encode())
    state = BotState(engine.spaces)
    answer_id = await saved_and_cited(engine, state)
    assert "Removed harbour.md" in await raptor(tmp_path, embedder, monkeypatch, "forget", "harbour.md", "--kb", KB)
    assert pending(engine) == 1
    if first == "history":
        assert [t.content for t in await state.history(1, THREAD)] == ["Who kept the light?", REMOVED_DOCUMENT]
    saved = await state.answer(1, answer_id)
    assert [n.text for n in saved.nodes][:2] == [REMOVED_DOCUMENT, "A centrifuge."]
    assert pending(engine) == 0 and "Mara Quill" not in bot_rows(engine)
    assert [t.content for t in await state.history(1, THREAD)] == ["Who kept the light?", REMOVED_DOCUMENT]
    state.close()
    engine.close()


async def test_a_read_with_nothing_pending_takes_no_write(engine, monkeypatch):
    state = BotState(engine.spaces)
    answer_id = await saved_and_cited(engine, state)
    import bot.state as state_module

    def refused(*args, **kwargs):
        raise AssertionError("no removal is pending: nothing to finish")

    monkeypatch.setattr(state_module, "_finish_and_scrub", refused)
    assert (await state.answer(1, answer_id)).nodes[0].text == QUILL
    assert len(await state.history(1, THREAD)) == 2
    state.close()
