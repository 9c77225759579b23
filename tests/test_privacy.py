"""Text removed for privacy leaves the disk, not only the tables: a deleted message, a member's messages,
a forgotten document or a deleted knowledge base is in no file under the data directory afterwards (the
store's pages and WAL, the full-text index's segments, the hnswlib files, the summary cache), while what
was not removed stays (real SQLite, hnswlib and model)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from raptor_engine import Engine
from raptor_engine.ingest.messages import MessagePlace
from raptor_engine.storage.llm_cache import SummaryCache
from tests.message_samples import history, message
from tests.sample_texts import RAILWAY
from tests.unhurried import unhurried_settings

CHANNEL = MessagePlace(400, "general")
# one token as FTS5's porter tokenizer stores it (lower case, no suffix to stem), so raw bytes find it
SECRET = "zqxprivate4471"
SECRET_TEXT = f"My locker combination is {SECRET}, please keep it between us."
KEPT = "lighthouse"  # in messages that stay


def make_engine(tmp_path: Path, embedder) -> Engine:
    return Engine(
        unhurried_settings(data_dir=tmp_path / "data", message_group_tokens=300), embedder=embedder
    )


def files_holding(root: Path, needle: bytes) -> list[str]:
    """Every file under `root` whose raw bytes contain `needle`."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes())


def stored_vectors(engine: Engine, kb: str, needle: str) -> list[bytes]:
    """The bytes of the vectors the saved index holds for the nodes whose text has `needle`."""
    with engine.in_space(kb):
        kb_id = engine.store.kb_id(kb)
        ids = [n.id for n in engine.store.nodes_of_kb(kb_id) if needle in n.text]
        index = engine.indexes.get(kb_id).index
        return [np.asarray(v, dtype=np.float32).tobytes() for v in index.get_items(ids)]


def secret_history() -> list:
    """Sixty messages, the eighth of them (id 10_007, by dave) holding the secret."""
    messages = history(60)
    messages[7] = message(7, SECRET_TEXT)
    return messages


def cache_summaries_of(engine: Engine, kb: str, needle: str) -> SummaryCache:
    """Put in the summary cache, as an LLM backend would have, the text of every summary of the tree (an
    LLM's summary above a leaf may quote it): those above a leaf holding `needle` must go with it, the
    others stay."""
    cache = SummaryCache(engine.settings.db_path)
    with engine.in_space(kb):
        kb_id = engine.store.kb_id(kb)
        nodes = engine.store.nodes_of_kb(kb_id)
        leaves = {n.id for n in nodes if n.layer == 0 and needle in n.text}
        rows = engine.store.db.execute(
            "SELECT id, text, leaf_ids FROM nodes WHERE kb_id = ? AND layer > 0", [kb_id]
        ).fetchall()
    above = {text for _, text, leaf_ids in rows if leaves & set(json.loads(leaf_ids))}
    assert above, "the test needs a summary above the text"
    for i, text in enumerate(sorted({text for _, text, _ in rows})):
        cache.put(f"{'above' if text in above else 'other'}-{i}", "m", text, 1, 1)
    return cache


def cached_keys(cache: SummaryCache) -> set[str]:
    return {key for key in cache.for_model("m")}


def assert_gone(engine: Engine, kb: str, vectors: list[bytes]) -> None:
    root = engine.settings.data_dir
    assert files_holding(root, SECRET.encode()) == []
    assert all(files_holding(root, vector) == [] for vector in vectors)
    assert files_holding(root, KEPT.encode())  # what was not removed is still there


@pytest.fixture
async def engine(tmp_path, embedder):
    engine = make_engine(tmp_path, embedder)
    yield engine
    engine.close()


async def test_a_deleted_message_is_in_no_file_under_the_data_directory(engine):
    await engine.add_messages("kb", CHANNEL, secret_history())
    root = engine.settings.data_dir
    vectors = stored_vectors(engine, "kb", SECRET)
    cache = cache_summaries_of(engine, "kb", SECRET)
    assert files_holding(root, SECRET.encode())  # the check can fail: the text is on disk first
    assert any(files_holding(root, v) for v in vectors)
    result = await engine.remove_messages("kb", [10_007])
    assert result.removed == 1 and result.tainted_nodes
    assert set(result.tainted_nodes) <= set(result.removed_nodes)
    assert_gone(engine, "kb", vectors)
    assert cached_keys(cache) and all(key.startswith("other") for key in cached_keys(cache))
    answer = await engine.ask("kb", "What is the locker combination?")
    assert all(SECRET not in n.text for n in answer.context.nodes)
    with engine.in_space("kb"):
        assert not engine.store.integrity_problems()
        assert not engine.indexes.check(engine.store.kb_id("kb"))


async def test_a_bulk_deletion_and_a_members_messages_leave_no_bytes(engine):
    messages = secret_history()
    messages[30] = message(30, f"Again: {SECRET} opens the locker.")
    await engine.add_messages("kb", CHANNEL, messages)
    vectors = stored_vectors(engine, "kb", SECRET)
    bulk = [10_000 + i for i in range(0, 60, 3)] + [10_007]  # twenty-one messages at once
    result = await engine.remove_messages("kb", bulk)
    assert result.removed == 21
    assert files_holding(engine.settings.data_dir, b"says message number 3.") == []
    author = await engine.remove_messages("kb", [], author_id=102)  # carol's messages, 10_030 among them
    assert author.removed == len([i for i in range(60) if i % 4 == 2 and i % 3])
    assert engine.message_ids("kb", author_id=102) == []
    assert_gone(engine, "kb", vectors)


async def test_a_forgotten_document_and_a_deleted_knowledge_base_leave_no_bytes(engine):
    await engine.ingest("kb", "railway.md", RAILWAY.encode())
    await engine.ingest("kb", "locker.md", f"# Lockers\n\n{SECRET_TEXT}\n\nThe lighthouse is closed.".encode())
    vectors = stored_vectors(engine, "kb", SECRET)
    cache = cache_summaries_of(engine, "kb", SECRET)
    await engine.forget("kb", "locker.md")
    root = engine.settings.data_dir
    assert files_holding(root, SECRET.encode()) == []
    assert files_holding(root, b"locker.md") == []  # its name too: the build log keeps none (docs/BOT.md)
    assert all(files_holding(root, v) == [] for v in vectors)
    assert cached_keys(cache) and all(key.startswith("other") for key in cached_keys(cache))
    assert files_holding(root, b"railway") or files_holding(root, b"Railway")
    await engine.add_messages("other", CHANNEL, secret_history())
    vectors = stored_vectors(engine, "other", SECRET)
    assert engine.delete_kb("other")
    assert files_holding(root, SECRET.encode()) == []
    assert all(files_holding(root, v) == [] for v in vectors)


def _file_after_deleting_a_row(path: Path, secure_delete: bool | None) -> bytes:
    """The file's bytes once a row among others that stay (no page freed or rewritten whole) was deleted
    and the WAL scrubbed; `secure_delete` None keeps what `connect` set."""
    from raptor_engine.storage.db import connect, immediate, scrub

    db = connect(path)
    try:
        if secure_delete is not None:
            db.conn.execute(f"PRAGMA secure_delete={'ON' if secure_delete else 'OFF'}")
        db.conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT)")
        with immediate(db.conn):
            for i in range(500):
                db.conn.execute("INSERT INTO t (text) VALUES (?)", [f"row {i} {SECRET if i == 250 else KEPT}"])
        assert scrub(db.conn) and SECRET.encode() in path.read_bytes()
        with immediate(db.conn):
            db.conn.execute("DELETE FROM t WHERE text LIKE ?", [f"%{SECRET}%"])
        assert scrub(db.conn) and Path(f"{path}-wal").stat().st_size == 0
        return path.read_bytes()
    finally:
        db.conn.close()


def test_a_deleted_row_is_zeroed_in_its_page_whatever_sqlites_default(tmp_path):
    """Deleted bytes stay in their page unless secure_delete is on (some SQLite builds default to it, others
    do not), so every connection turns it on (`db.connect`); a scrub leaves the WAL empty."""
    assert SECRET.encode() in _file_after_deleting_a_row(tmp_path / "off.db", secure_delete=False)
    kept = _file_after_deleting_a_row(tmp_path / "ours.db", secure_delete=None)
    assert SECRET.encode() not in kept and KEPT.encode() in kept
