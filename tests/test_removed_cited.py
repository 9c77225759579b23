"""Thread turns record the documents their answers cited (bot m006), so a follow-up after one of them was
removed can say so: a real engine and the bot's tables, no Discord."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from bot.answering import removed_notice
from bot.render import inert
from bot.state import BotState, CitedNodes, ThreadRecord
from raptor_engine import Engine, Settings
from raptor_engine.types import Turn

KB = "guild-1-channel-2"
THREAD = 55
OLD_DB = Path(__file__).parent / "data" / "pre_migrations.db"
HARBOUR = "# Harbour\n\nThe harbour light at Saltmere was kept by Mara Quill from 1887 until 1910.\n"
BEES = "# Bees\n\nBeekeepers extract honey with a centrifuge after uncapping the comb in late summer.\n"


@pytest.fixture
async def engine(tmp_path, embedder):
    engine = Engine(Settings.from_env(data_dir=tmp_path / "data"), embedder=embedder)
    await engine.ingest(KB, "harbour.md", HARBOUR.encode())
    await engine.ingest(KB, "bees.md", BEES.encode())
    yield engine
    engine.close()


def leaf_of(engine: Engine, document: str) -> int:
    with engine.in_space(KB):  # the server's own store file
        nodes = engine.store.nodes_of_kb(engine.store.kb_id(KB))
    return next(n.id for n in nodes if n.document == document and n.kind == "leaf")


async def thread_citing(engine: Engine, *documents: str) -> BotState:
    state = BotState(engine.spaces)
    await state.add_thread(ThreadRecord(THREAD, KB, 1, 2), opened_by="alice")
    cited = CitedNodes([leaf_of(engine, d) for d in documents])
    await state.add_turns(1, THREAD, [Turn("user", "q1"), Turn("assistant", "a1")], cited=cited)
    return state


async def test_a_removed_cited_document_is_found_once_with_its_name(engine):
    state = await thread_citing(engine, "harbour.md")
    harbour = next(d for d in engine.documents(KB) if d.name == "harbour.md")
    assert await state.removed_cited(1, THREAD, KB) == []  # nothing removed yet
    await engine.forget(KB, "harbour.md")
    assert await state.removed_cited(1, THREAD, KB) == [(harbour.id, "harbour.md")]
    # the follow-up's answer named it: the next follow-up does not say it again
    told = CitedNodes([leaf_of(engine, "bees.md")], told=[harbour.id])
    await state.add_turns(1, THREAD, [Turn("user", "q2"), Turn("assistant", "a2")], cited=told)
    assert await state.removed_cited(1, THREAD, KB) == []
    state.close()


async def test_an_unrelated_removal_says_nothing(engine):
    state = await thread_citing(engine, "harbour.md")
    await engine.forget(KB, "bees.md")
    assert await state.removed_cited(1, THREAD, KB) == []
    state.close()


async def test_a_new_document_under_a_removed_ones_id_does_not_hide_the_removal(engine):
    """SQLite may give a removed document's id to the next one: a document counts as there by id and name."""
    state = await thread_citing(engine, "bees.md")  # the last added: its id is the one reused
    bees = next(d for d in engine.documents(KB) if d.name == "bees.md")
    await engine.forget(KB, "bees.md")
    await engine.ingest(KB, "tides.md", b"# Tides\n\nSpring tides at Saltmere rise four metres.\n")
    assert await state.removed_cited(1, THREAD, KB) == [(bees.id, "bees.md")]
    state.close()


async def test_turns_without_a_record_and_reply_turns_say_nothing(engine):
    state = BotState(engine.spaces)
    await state.add_thread(ThreadRecord(THREAD, KB, 1, 2), opened_by="alice")
    await state.add_turns(1, THREAD, [Turn("user", "thanks"), Turn("assistant", "You're welcome.")])
    await engine.forget(KB, "harbour.md")
    assert await state.removed_cited(1, THREAD, KB) == []
    state.close()


async def test_an_imported_stores_documents_are_read_as_data_only(engine, tmp_path):
    """A store from elsewhere may hold anything in the column: malformed values are passed over, and a
    name is only shown inert (no mention, link or markdown)."""
    state = await thread_citing(engine, "harbour.md")
    hostile = "@everyone [click](https://evil.example) **x**\nline"
    for value in (
        "not json",
        json.dumps([1, 2]),
        json.dumps({"cited": [[True, "t.md"], ["7", "s.md"], [9], [10, 11]], "told": ["x"]}),
        json.dumps({"cited": [[999_999, hostile]]}),
    ):
        with engine.in_space(KB), engine.store.write() as db:
            db.execute(
                "INSERT INTO bot_turns (thread_id, role, content, created_at, documents) "
                "VALUES (?, 'assistant', 'a', '', ?)",
                [THREAD, value],
            )
    gone = await state.removed_cited(1, THREAD, KB)
    assert gone == [(999_999, hostile)]
    shown = inert(removed_notice([name for _, name in gone]))
    for live in ("@everyone", "[click]", "https:", "**"):  # each escaped: Discord shows the characters
        assert re.search(r"(?<!\\)" + re.escape(live), shown) is None, live
    assert "\n" not in shown
    state.close()


def test_the_notice_names_each_document_in_one_sentence():
    assert removed_notice(["harbour.md"]) == (
        "The document “harbour.md”, cited by an earlier answer in this thread, was removed from the "
        "knowledge base since; this answer comes from the documents that remain."
    )
    many = removed_notice(["a.md", "b.md", "c.md", "d.md", "e.md"])
    assert many.startswith("The documents “a.md”, “b.md”, “c.md” and 2 more, cited by") and " were " in many
    assert len(removed_notice(["x" * 5000])) < 300


async def test_an_old_store_gets_the_column_and_its_turns_say_nothing(tmp_path, embedder):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(OLD_DB, data / "raptor.db")
    conn = sqlite3.connect(data / "raptor.db")
    with conn:  # a thread of the old store, its answer stored before documents were recorded
        conn.execute("INSERT INTO bot_threads VALUES (7, 'old', NULL, NULL, 'alice', '')")
        conn.execute("INSERT INTO bot_turns VALUES (1, 7, 'user', 'Who kept the light?', '')")
        conn.execute("INSERT INTO bot_turns VALUES (2, 7, 'assistant', 'Mara Quill [1].', '')")
    conn.close()
    engine = Engine(Settings.from_env(data_dir=data), embedder=embedder)
    try:
        state = BotState(engine.spaces)
        await engine.forget("old", "saltmere.md")
        assert await state.removed_cited(None, 7, "old") == []  # the bot's migrations ran first
        conn = sqlite3.connect(data / "raptor.db")
        try:
            columns = [r[1] for r in conn.execute("PRAGMA table_info(bot_turns)").fetchall()]
            assert columns[-1] == "documents"
            assert [r[0] for r in conn.execute("SELECT documents FROM bot_turns")] == [None, None]
        finally:
            conn.close()
        old_turns = [Turn("user", "Who kept the light?"), Turn("assistant", "Mara Quill [1].")]
        assert await state.history(None, 7) == old_turns
        state.close()
    finally:
        engine.close()
