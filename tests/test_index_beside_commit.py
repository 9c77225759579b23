"""A knowledge base's first document gets its index built while SQLite writes its rows: the index kept is
the one a rebuild from SQLite makes, and only where it matches the stored rows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from raptor_engine import Engine, RaptorError, Settings
from raptor_engine.storage.index import IndexManager, extend_hnsw, new_hnsw
from raptor_engine.storage.store import Store
from tests.sample_texts import BEEKEEPING, RAILWAY


def _engine(tmp_path: Path, embedder) -> Engine:
    return Engine(Settings.from_env(data_dir=tmp_path / "data"), embedder=embedder)


def _watch(monkeypatch) -> dict[str, list]:
    """Record every index adopted after a commit and every rebuild from SQLite."""
    seen: dict[str, list] = {"adopted": [], "rebuilt": []}
    real_adopt, real_rebuild = IndexManager.adopt, IndexManager.rebuild

    def adopt(self, kb_id, ahead, doc_id):
        kept = real_adopt(self, kb_id, ahead, doc_id)
        seen["adopted"].append(kept)
        return kept

    def rebuild(self, kb_id, **kwargs):
        seen["rebuilt"].append(kb_id)
        return real_rebuild(self, kb_id, **kwargs)

    monkeypatch.setattr(IndexManager, "adopt", adopt)
    monkeypatch.setattr(IndexManager, "rebuild", rebuild)
    return seen


def _neighbours(index, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    index.index.set_ef(200)
    return index.index.knn_query(matrix, k=min(5, len(matrix)))


def _same_as_a_rebuild(engine: Engine, kb: str) -> None:
    """The cached index holds exactly the stored nodes, at the store's version, with the graph a rebuild
    from SQLite gives (the same neighbours at the same distances for every stored vector)."""
    kb_id = engine.store.kb_id(kb)
    cached = engine.indexes.get(kb_id)
    ids, matrix = engine.store.embeddings(kb_id)
    assert set(cached.ids) == {int(i) for i in ids} and cached.version == engine.store.kb_version(kb_id)
    assert dict(cached.tokens.items()) == engine.store.token_counts(kb_id)
    rebuilt = IndexManager(engine.store, engine.indexes.dir / "check").rebuild(kb_id)
    for mine, theirs in zip(_neighbours(cached, matrix), _neighbours(rebuilt, matrix), strict=True):
        np.testing.assert_array_equal(mine, theirs)


def _fails_leaving_nothing(engine: Engine, seen: dict[str, list]) -> None:
    """An ingest that fails: no knowledge base, no rows, no index in memory or on disk."""
    try:
        with pytest.raises(RaptorError):
            asyncio.run(engine.ingest("kb", "railway.txt", RAILWAY.encode(), added_by="test"))
        assert engine.store.kb_id("kb") is None
        assert engine.store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0] == 0
        assert seen["adopted"] == [] and engine.indexes.cached() == 0
        assert not list(engine.indexes.dir.glob("kb-*"))
    finally:
        engine.close()


def test_a_first_documents_index_is_built_beside_its_write_and_is_the_rebuilds(tmp_path, embedder, monkeypatch):
    seen = _watch(monkeypatch)
    engine = _engine(tmp_path, embedder)
    try:
        # three leaves: the document's top layer is grouped by a cross-document layer stored after it
        result = asyncio.run(engine.ingest("kb", "bees.txt", BEEKEEPING.encode(), added_by="test"))
        assert result.status == "added"
        assert engine.store.db.execute("SELECT COUNT(*) FROM nodes WHERE kind = 'kb'").fetchone()[0] > 0
        assert len(seen["adopted"]) == 1 and seen["adopted"][0] is not None and seen["rebuilt"] == []
        _same_as_a_rebuild(engine, "kb")
        assert engine.indexes.check(engine.store.kb_id("kb")) == []  # the saved file too
        # a second document: the knowledge base holds nodes, so its index is brought up to date as before
        asyncio.run(engine.ingest("kb", "railway.txt", RAILWAY.encode(), added_by="test"))
        assert len(seen["adopted"]) == 1
        _same_as_a_rebuild(engine, "kb")
    finally:
        engine.close()


def test_an_index_built_under_ids_another_writer_took_is_not_kept(tmp_path, embedder, monkeypatch):
    seen = _watch(monkeypatch)
    real_next = Store.next_node_id
    monkeypatch.setattr(Store, "next_node_id", lambda self: real_next(self) + 7)  # as if 7 went elsewhere
    engine = _engine(tmp_path, embedder)
    try:
        asyncio.run(engine.ingest("kb", "railway.txt", RAILWAY.encode(), added_by="test"))
        assert seen["adopted"] == [None] and seen["rebuilt"] == [engine.store.kb_id("kb")]
        _same_as_a_rebuild(engine, "kb")
    finally:
        engine.close()


def test_a_write_that_fails_leaves_no_tree_and_no_index(tmp_path, embedder, monkeypatch):
    seen = _watch(monkeypatch)

    def fail(self, db, kb_id, build):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Store, "_record_build", fail)
    _fails_leaving_nothing(_engine(tmp_path, embedder), seen)


def _leaf_indexes(monkeypatch) -> list:
    """Record every leaves' index the engine starts during a build (`Engine._leaf_index_ahead`)."""
    started: list = []
    real = Engine._leaf_index_ahead

    def ahead(self, kb_id, into, leaves):
        real(self, kb_id, into, leaves)
        started.extend(into[len(started) :])

    monkeypatch.setattr(Engine, "_leaf_index_ahead", ahead)
    return started


def test_extending_an_index_gives_the_graph_of_one_built_whole(tmp_path):
    """The leaves' index with the summaries added after is byte for byte the index of all rows at once."""
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(300, 24)).astype(np.float32)
    whole = tmp_path / "whole.bin"
    new_hnsw(range(10, 310), matrix).save_index(str(whole))
    for split in (1, 150, 299, 300):
        parts = tmp_path / f"parts-{split}.bin"
        extend_hnsw(new_hnsw(range(10, 10 + split), matrix[:split]), range(10 + split, 310), matrix[split:]).save_index(
            str(parts)
        )
        assert parts.read_bytes() == whole.read_bytes(), split


def test_the_leaves_index_is_started_during_the_build_and_kept(tmp_path, embedder, monkeypatch):
    seen, started = _watch(monkeypatch), _leaf_indexes(monkeypatch)
    engine = _engine(tmp_path, embedder)
    try:
        result = asyncio.run(engine.ingest("kb", "railway.txt", RAILWAY.encode(), added_by="test"))
        kb_id = engine.store.kb_id("kb")
        leaves = engine.store.db.execute("SELECT COUNT(*) FROM nodes WHERE layer = 0").fetchone()[0]
        assert result.layers >= 2 and len(started) == 1 and started[0].count == leaves
        assert started[0].first == min(engine.store.node_ids(kb_id))
        assert seen["adopted"][0] is not None and seen["adopted"][0].index is started[0].index.result()
        assert seen["rebuilt"] == []
        _same_as_a_rebuild(engine, "kb")
        assert engine.indexes.check(kb_id) == []
        # a second document's leaves get no index ahead: the knowledge base's index is caught up as before
        asyncio.run(engine.ingest("kb", "bees.txt", BEEKEEPING.encode(), added_by="test"))
        assert len(started) == 1
        _same_as_a_rebuild(engine, "kb")
    finally:
        engine.close()


def test_a_leaves_index_started_under_ids_no_longer_next_is_not_used(tmp_path, embedder, monkeypatch):
    """Another writer stored nodes between the leaves' embedding and the commit: the index is built whole
    beside the write, under the ids the rows will get, and kept."""
    seen, started = _watch(monkeypatch), _leaf_indexes(monkeypatch)
    real_next = Store.next_node_id
    calls: list[int] = []

    def next_id(self):
        calls.append(1)
        return real_next(self) + (5 if len(calls) == 1 else 0)  # the leaves' guess is stale by 5 ids

    monkeypatch.setattr(Store, "next_node_id", next_id)
    engine = _engine(tmp_path, embedder)
    try:
        asyncio.run(engine.ingest("kb", "railway.txt", RAILWAY.encode(), added_by="test"))
        assert len(started) == 1 and seen["adopted"][0] is not None and seen["rebuilt"] == []
        assert seen["adopted"][0].index is not started[0].index.result()
        _same_as_a_rebuild(engine, "kb")
    finally:
        engine.close()


def test_a_build_that_fails_after_its_leaves_index_started_leaves_nothing(tmp_path, embedder, monkeypatch):
    seen, started = _watch(monkeypatch), _leaf_indexes(monkeypatch)

    async def fail(*args, **kwargs):
        raise RuntimeError("the summariser broke")

    monkeypatch.setattr("raptor_engine.tree.build.summarize_clusters", fail)
    _fails_leaving_nothing(_engine(tmp_path, embedder), seen)
    assert len(started) == 1
