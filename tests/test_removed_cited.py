"""Thread turns record the documents their answers cited (bot m006), so a follow-up after one of them was
removed can say so: a real engine and the bot's tables, no Discord."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from bot.answering import cited_nodes, removed_notice
from bot.render import inert
from bot.state import REMOVED_DOCUMENT, BotState, CitedNodes, GoneDocument, ThreadRecord
from bot.uploads import Source, UploadLog
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
    assert await state.removed_cited(1, THREAD, KB) == [GoneDocument(harbour.id, "harbour.md")]
    # the follow-up's answer named it: the next follow-up does not say it again
    told = CitedNodes([leaf_of(engine, "bees.md")], told=[harbour.id])
    await state.add_turns(1, THREAD, [Turn("user", "q2"), Turn("assistant", "a2")], cited=told)
    assert await state.removed_cited(1, THREAD, KB) == []
    # removed outside the bot: once named, the name and the answer that quoted it leave the records too
    assert not [r for r in turn_rows(engine) if "harbour.md" in r or " | a1 |" in r]
    assert [r for r in turn_rows(engine) if r.startswith(f"assistant | {REMOVED_DOCUMENT}")]
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
    assert await state.removed_cited(1, THREAD, KB) == [GoneDocument(bees.id, "bees.md")]
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
    assert gone == [GoneDocument(999_999, hostile)]
    shown = inert(removed_notice([g.name for g in gone]))
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
            assert columns[-3:] == ["documents", "pending", "asked_by"]  # m006, m008, then m009 (bot/answering.py)
            assert [r[0] for r in conn.execute("SELECT documents FROM bot_turns")] == [None, None]
        finally:
            conn.close()
        old_turns = [Turn("user", "Who kept the light?"), Turn("assistant", "Mara Quill [1].")]
        assert await state.history(None, 7) == old_turns
        state.close()
    finally:
        engine.close()


def summary_of(engine: Engine) -> int:
    """A cross-document summary of the knowledge base (no document of its own)."""
    with engine.in_space(KB):
        nodes = engine.store.nodes_of_kb(engine.store.kb_id(KB))
    return next(n.id for n in nodes if n.kind == "kb")


def turn_rows(engine: Engine) -> list[str]:
    with engine.in_space(KB):
        rows = engine.store.db.execute("SELECT role, content, coalesce(documents, '') FROM bot_turns").fetchall()
    return [" | ".join(map(str, row)) for row in rows]


async def test_an_answer_from_a_summary_names_its_partly_removed_documents(engine):
    """A cited cross-document summary has no document of its own: the turn records the documents under it,
    and a follow-up after one of them went says that an earlier answer drew on it."""
    state = BotState(engine.spaces)
    await state.add_thread(ThreadRecord(THREAD, KB, 1, 2), opened_by="alice")
    cited = CitedNodes([summary_of(engine)])
    await state.add_turns(1, THREAD, [Turn("user", "What is here?"), Turn("assistant", "Bees and a light.")], cited=cited)
    bees = next(d for d in engine.documents(KB) if d.name == "bees.md")
    await engine.forget(KB, "bees.md")
    gone = await state.removed_cited(1, THREAD, KB)
    assert gone == [GoneDocument(bees.id, "bees.md", cited=False)]
    assert removed_notice([g.name for g in gone], cited=False) == (
        "The document “bees.md”, which an earlier answer in this thread drew on, was removed from the "
        "knowledge base since; this answer comes from the documents that remain."
    )
    state.close()


async def test_a_removed_documents_name_and_text_stay_only_until_the_notice(engine):
    """Removed through the bot: the answer that cited it becomes the note (the question stays), its name is
    kept once, for the follow-up's notice, and goes when that notice is given; another thread is untouched."""
    state = await thread_citing(engine, "harbour.md", "bees.md")
    await state.add_turns(1, THREAD, [Turn("user", "q2"), Turn("assistant", "Mara Quill kept it.")],
                          cited=CitedNodes([leaf_of(engine, "harbour.md")]))
    await state.add_thread(ThreadRecord(THREAD + 1, KB, 1, 2), opened_by="bob")
    await state.add_turns(1, THREAD + 1, [Turn("user", "bees?"), Turn("assistant", "A centrifuge.")],
                          cited=CitedNodes([leaf_of(engine, "bees.md")]))
    removed = await engine.forget(KB, "harbour.md")
    assert await state.finish_removals(KB) == 1
    rows = turn_rows(engine)
    assert [r for r in rows if "harbour.md" in r] and len([r for r in rows if "harbour.md" in r]) == 1
    assert not [r for r in rows if "Mara Quill" in r or " | a1 |" in r]
    assert any(r.startswith("user | q2") for r in rows) and any("A centrifuge." in r for r in rows)
    gone = await state.removed_cited(1, THREAD, KB)
    assert gone == [GoneDocument(removed.id, "harbour.md")]
    assert await state.removed_cited(1, THREAD + 1, KB) == []
    told = CitedNodes([leaf_of(engine, "bees.md")], told=[g.id for g in gone])
    await state.add_turns(1, THREAD, [Turn("user", "q3"), Turn("assistant", "a3")], cited=told)
    assert not [r for r in turn_rows(engine) if "harbour.md" in r]
    assert await state.removed_cited(1, THREAD, KB) == []
    state.close()


async def test_a_cleared_knowledge_base_leaves_no_cited_text_and_names_each_document_once(engine):
    state = await thread_citing(engine, "harbour.md", "bees.md")
    await engine.clear(KB)
    assert await state.finish_removals(KB) == 1
    assert not [r for r in turn_rows(engine) if " | a1 |" in r]
    assert sorted(g.name for g in await state.removed_cited(1, THREAD, KB)) == ["bees.md", "harbour.md"]
    state.close()


def test_the_upload_log_forgets_a_removed_documents_finished_rows(tmp_path):
    log = UploadLog(tmp_path / "uploads.db")
    try:
        done, waiting, other = log.accept(
            KB, [Source(f"{n}.md", f"https://cdn.example/{n}.md", 10) for n in ("old", "new", "keep")], "alice", 1, 2
        )
        for upload, data in ((done, b"old"), (other, b"keep")):
            log.downloaded(upload, data)
            log.mark(upload, "done")
        assert log.forget(KB, hashlib.sha256(b"old").hexdigest()) == 1
        assert log.status(done) is None and log.status(waiting) == "waiting" and log.status(other) == "done"
        assert log.forget(KB) == 1 and log.status(other) is None and log.status(waiting) == "waiting"
    finally:
        log.close()


async def test_an_answer_stored_after_its_cited_document_was_removed_keeps_none_of_its_text(engine):
    """A removal can land while a follow-up is being answered (it takes no thread's turn): the answer was made
    from nodes that are gone by the time its turn is stored, after the removal's redaction ran. The turn must
    not keep that answer's text, as the redaction would have done had the turn been there."""
    state = BotState(engine.spaces)
    await state.add_thread(ThreadRecord(THREAD, KB, 1, 2), opened_by="alice")
    harbour = leaf_of(engine, "harbour.md")  # retrieved for the answer ...
    # ... then removed, and redacted, before it is stored
    await engine.forget(KB, "harbour.md")
    assert await state.finish_removals(KB) == 1
    await state.add_turns(1, THREAD, [Turn("user", "Who kept the light?"), Turn("assistant", "Mara Quill kept it.")],
                          cited=CitedNodes([harbour, leaf_of(engine, "bees.md")], of_documents=[harbour]))
    rows = turn_rows(engine)
    assert not [r for r in rows if "Mara Quill" in r]
    assert any(r.startswith(f"assistant | {REMOVED_DOCUMENT}") for r in rows)
    assert any(r.startswith("user | Who kept the light?") for r in rows)  # the member's own words stay
    state.close()


async def test_an_answer_whose_cited_nodes_are_there_is_stored_as_it_is(engine):
    """Only a gone node of one document counts: a cross-document summary is rebuilt as documents are added."""
    state = BotState(engine.spaces)
    await state.add_thread(ThreadRecord(THREAD, KB, 1, 2), opened_by="alice")
    harbour = leaf_of(engine, "harbour.md")
    cited = CitedNodes([harbour, 10**9], of_documents=[harbour])  # 10**9: a summary since rebuilt
    await state.add_turns(1, THREAD, [Turn("user", "q1"), Turn("assistant", "a1")], cited=cited)
    assert any(r.startswith("assistant | a1 |") for r in turn_rows(engine))
    state.close()


def test_an_answers_record_tells_its_documents_nodes_from_cross_document_summaries():
    """`of_documents` (checked as the turn is written) holds the cited nodes of one document only."""
    citations = [SimpleNamespace(node_id=7, document="harbour.md"), SimpleNamespace(node_id=9, document=None)]
    cited = cited_nodes(SimpleNamespace(has_context=True, citations=citations), told=[3])
    assert cited == CitedNodes([7, 9], [3], of_documents=[7])
    assert cited_nodes(SimpleNamespace(has_context=False, citations=[])) is None
