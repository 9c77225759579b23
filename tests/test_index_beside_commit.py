"""A knowledge base's first document gets its index built while SQLite writes its rows: the index kept is
the one a rebuild from SQLite makes, and only where it matches the stored rows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from raptor_engine import Engine, RaptorError, Settings
from raptor_engine.storage.index import IndexManager
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
    engine = _engine(tmp_path, embedder)
    try:
        with pytest.raises(RaptorError):
            asyncio.run(engine.ingest("kb", "railway.txt", RAILWAY.encode(), added_by="test"))
        assert engine.store.kb_id("kb") is None
        assert engine.store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0] == 0
        assert seen["adopted"] == [] and engine.indexes.cached() == 0
        assert not list(engine.indexes.dir.glob("kb-*"))
    finally:
        engine.close()
