"""Work an ingest runs side by side: an engine's first ingest loads the embedding model while the parse
child reads the upload; the leaves' stored sentences are split while the first layer clusters."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from raptor_engine import Engine, IngestError, Settings
from raptor_engine import engine as engine_module
from raptor_engine.ingest.sentences import encode_spans, sentence_spans
from raptor_engine.tree import build, docbuild
from tests.sample_texts import BEEKEEPING, RAILWAY

WAIT_S = 120  # a guard against a hang, not a timing: each side only waits for the other to begin


def _fresh_engine(tmp_path: Path, embedder, monkeypatch) -> tuple[Engine, threading.Event, list[str]]:
    """An engine with no model loaded yet, whose model load only finishes once the parse has begun."""
    parse_began = threading.Event()
    order: list[str] = []
    real_parse = docbuild.load_isolated

    def parse(*args, **kwargs):
        order.append("parse begins")
        parse_began.set()
        return real_parse(*args, **kwargs)

    def load_model(*args, **kwargs):
        order.append("model load begins")
        if not parse_began.wait(WAIT_S):
            raise AssertionError("the model was loaded before the upload's parse began")
        return embedder  # the session's model: the test is about the order, not the loading

    monkeypatch.setattr(docbuild, "load_isolated", parse)
    monkeypatch.setattr(engine_module, "Embedder", load_model)
    return Engine(Settings.from_env(data_dir=tmp_path / "data")), parse_began, order


def test_the_model_loads_while_the_upload_is_parsed(tmp_path, embedder, monkeypatch):
    engine, _, order = _fresh_engine(tmp_path, embedder, monkeypatch)
    try:
        result = asyncio.run(engine.ingest("kb", "bees.txt", BEEKEEPING.encode(), added_by="test"))
    finally:
        engine.close()
    assert result.status == "added" and result.nodes > 1
    assert set(order) == {"model load begins", "parse begins"}
    assert engine._embedder is embedder


def test_an_upload_refused_while_the_model_loads_is_one_clear_error(tmp_path, embedder, monkeypatch):
    engine, parse_began, _ = _fresh_engine(tmp_path, embedder, monkeypatch)
    try:
        with pytest.raises(IngestError, match="no text"):
            asyncio.run(engine.ingest("kb", "empty.txt", b"   \n\n  ", added_by="test"))
        assert parse_began.is_set()
    finally:
        engine.close()


def _leaves_sentences_watched(monkeypatch, embedder, *, clustered: bool) -> list[str]:
    """Record when the leaves are embedded, clustered and their sentences split. For a document that is
    `clustered`, the first split waits until the first clustering has begun: a build that splits them
    before it clusters fails, not hangs."""
    order: list[str] = []
    cluster_began = threading.Event()
    real_embed, real_split, real_cluster = embedder.embed, build.sentence_spans, build.cluster_nodes

    def embed(texts, *args, **kwargs):
        vectors = real_embed(texts, *args, **kwargs)
        order.append(f"embedded {len(texts)}")
        return vectors

    def split(texts, *args, **kwargs):
        order.append(f"split {len(texts)}")
        if clustered and len(order) == 2 and not cluster_began.wait(WAIT_S):
            raise AssertionError("the leaves' sentences were split before the first layer's clustering began")
        return real_split(texts, *args, **kwargs)

    def cluster(*args, **kwargs):
        order.append("cluster")
        cluster_began.set()
        return real_cluster(*args, **kwargs)

    monkeypatch.setattr(embedder, "embed", embed)
    monkeypatch.setattr(build, "sentence_spans", split)
    monkeypatch.setattr(build, "cluster_nodes", cluster)
    return order


def _stored_leaves(engine: Engine) -> list[tuple[str, str]]:
    rows = engine.store.db.execute("SELECT text, sentences FROM nodes WHERE layer = 0 ORDER BY id").fetchall()
    return [(str(text), str(sentences)) for text, sentences in rows]


def test_the_leaves_sentences_are_split_beside_the_first_clustering_not_the_embedding(
    tmp_path, embedder, monkeypatch
):
    order = _leaves_sentences_watched(monkeypatch, embedder, clustered=True)
    engine = Engine(Settings.from_env(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        result = asyncio.run(engine.ingest("kb", "two.txt", (BEEKEEPING + RAILWAY).encode(), added_by="test"))
        leaves = _stored_leaves(engine)
    finally:
        engine.close()
    assert result.layers > 1
    # the leaves are embedded first; their sentences are split only then, beside the first clustering
    assert order[0] == f"embedded {result.chunks}"
    assert sorted(order[1:3]) == sorted(["cluster", f"split {result.chunks}"])
    expected = sentence_spans([text for text, _ in leaves], embedder.count_tokens_batch)
    assert [spans for _, spans in leaves] == [encode_spans(s) for s in expected]


def test_a_document_too_small_to_cluster_still_stores_its_leaves_sentences(tmp_path, embedder, monkeypatch):
    order = _leaves_sentences_watched(monkeypatch, embedder, clustered=False)
    engine = Engine(Settings.from_env(data_dir=tmp_path / "data"), embedder=embedder)
    text = "Bees make honey from nectar. The queen lays the eggs."
    try:
        result = asyncio.run(engine.ingest("kb", "short.txt", text.encode(), added_by="test"))
        leaves = _stored_leaves(engine)
    finally:
        engine.close()
    assert result.chunks == 1 and "cluster" not in order
    assert leaves == [(text, encode_spans(sentence_spans([text], embedder.count_tokens_batch)[0]))]
