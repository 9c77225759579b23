"""The leaves' stored sentences are split and counted beside the first clustering, not beside the embedding."""

from __future__ import annotations

import asyncio
import threading

import pytest

from raptor_engine.config import Settings
from raptor_engine.ingest.sentences import sentence_spans
from raptor_engine.tree import build
from raptor_engine.tree.summarize import ExtractiveSummarizer
from raptor_engine.types import Chunk
from tests.test_summary_vectors import BAKING, PLANETS


def _chunks(embedder, texts: list[str]) -> list[Chunk]:
    counts = embedder.count_tokens_batch(texts)
    starts = [sum(len(t) + 1 for t in texts[:i]) for i in range(len(texts))]
    return [
        Chunk(index=i, text=t, start=s, end=s + len(t), tokens=c)
        for i, (t, s, c) in enumerate(zip(texts, starts, counts, strict=True))
    ]


def _build(embedder, texts: list[str]) -> build.BuiltTree:
    summarizer = ExtractiveSummarizer(embedder.count_tokens, count_tokens_batch=embedder.count_tokens_batch)
    return asyncio.run(
        build.build_document_tree(
            _chunks(embedder, texts), embedder=embedder, summarizer=summarizer, settings=Settings()
        )
    )


def _leaf_sentences(tree: build.BuiltTree) -> list:
    return [n.sentences for n in tree.nodes if n.layer == 0]


def test_the_leaves_sentences_are_split_while_the_first_layer_clusters(embedder, monkeypatch):
    """Both wait for the other at a barrier: a build that split the sentences before or after the first
    clustering would break it (BrokenBarrierError) instead of finishing."""
    meet = threading.Barrier(2, timeout=60)
    clustered, split = [], []

    def sentences_at_the_barrier(texts, count_tokens_batch):
        if not split:  # the leaves' (the summaries' come later)
            meet.wait()
        split.append(len(texts))
        return sentence_spans(texts, count_tokens_batch)

    def clustering_at_the_barrier(*args, **kwargs):
        if not clustered:
            meet.wait()
        clustered.append(len(args[0]))
        return build_cluster_nodes(*args, **kwargs)

    build_cluster_nodes = build.cluster_nodes
    monkeypatch.setattr(build, "sentence_spans", sentences_at_the_barrier)
    monkeypatch.setattr(build, "cluster_nodes", clustering_at_the_barrier)
    texts = PLANETS + BAKING
    tree = _build(embedder, texts)
    assert clustered[0] == split[0] == len(texts)
    assert _leaf_sentences(tree) == sentence_spans(texts, embedder.count_tokens_batch)
    assert all(n.sentences for n in tree.nodes)  # the summaries' sentences too


def test_a_document_too_short_to_cluster_still_stores_its_leaves_sentences(embedder):
    tree = _build(embedder, PLANETS[:2])  # 2 leaves: at most stop_nodes, no clustering
    assert len(tree.nodes) == 2
    assert _leaf_sentences(tree) == sentence_spans(PLANETS[:2], embedder.count_tokens_batch)


def test_a_failed_clustering_is_the_error_the_build_raises_while_sentences_are_split(embedder, monkeypatch):
    split = threading.Event()

    def slow_sentences(texts, count_tokens_batch):
        split.wait(timeout=60)  # still splitting when the clustering fails
        return sentence_spans(texts, count_tokens_batch)

    def failing_clustering(*args, **kwargs):
        raise RuntimeError("the clustering broke")

    monkeypatch.setattr(build, "sentence_spans", slow_sentences)
    monkeypatch.setattr(build, "cluster_nodes", failing_clustering)
    try:
        with pytest.raises(RuntimeError, match="the clustering broke"):
            _build(embedder, PLANETS + BAKING)
    finally:
        split.set()
