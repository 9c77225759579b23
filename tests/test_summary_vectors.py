"""Extractive summaries' vectors pooled from their children's (no model run), and the setting that chooses."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pytest

from raptor_engine.config import Settings
from raptor_engine.errors import RaptorError
from raptor_engine.storage.records import NewNode
from raptor_engine.tree.build import summarize_clusters
from raptor_engine.tree.summarize import ExtractiveSummarizer, pooled_vector
from raptor_engine.types import Summary, SummaryRequest

PLANETS = [
    "Jupiter is the largest planet in the solar system. Its moons include Io, Europa, Ganymede and Callisto. "
    "Jupiter's Great Red Spot is a storm larger than the Earth.",
    "Saturn is a gas giant planet known for its bright rings. The rings of Saturn are made of ice and rock. "
    "Saturn has a moon, Titan, with a thick atmosphere of nitrogen.",
    "Astronomers study the planets of the solar system with telescopes. Space probes have visited every "
    "giant planet. The solar system formed about 4.6 billion years ago from a cloud of gas.",
]
BAKING = [
    "Knead the bread dough for ten minutes until it becomes smooth and elastic. Let it rise in a warm place.",
    "Whisk the eggs and sugar together before folding in the flour. Bake the sponge for twenty-five minutes.",
    "Preheat the oven before baking the chocolate cake. A skewer pushed into its centre should come out clean.",
]


class CountingEmbedder:
    """The real embedder, counting the texts the model is asked to embed."""

    def __init__(self, embedder):
        self.inner = embedder
        self.embedded: list[str] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts, progress=None, *, token_counts=None):
        self.embedded += list(texts)
        return self.inner.embed(texts, progress, token_counts=token_counts)


class WritingSummarizer:
    """Stands in for an LLM: new text, no provenance, so only the model can embed it."""

    name = "writer"
    input_budget = 3500

    async def summarize_many(self, requests):
        return [Summary(text=f"A new sentence about {len(r.texts)} passages.") for r in requests]


def _leaves(embedder, texts: list[str]) -> list[NewNode]:
    vectors = embedder.embed(texts)
    counts = embedder.count_tokens_batch(texts)
    return [
        NewNode(key=i, layer=0, kind="leaf", text=t, tokens=counts[i], embedding=vectors[i])
        for i, t in enumerate(texts)
    ]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def summarizer(embedder):
    return ExtractiveSummarizer(embedder.count_tokens, count_tokens_batch=embedder.count_tokens_batch)


def test_an_extractive_summary_says_how_many_tokens_it_copied_from_each_child(summarizer, embedder):
    request = SummaryRequest(texts=PLANETS, embeddings=embedder.embed(PLANETS), max_tokens=60)
    (summary,) = summarizer.summarize_all([request])
    assert summary.copied and set(summary.copied) <= {0, 1, 2}
    for child, tokens in summary.copied.items():
        copied = [s for s in PLANETS[child].split(". ") if s.rstrip(".") in summary.text]
        assert copied, f"child {child} is credited but none of its sentences is in the summary"
        assert tokens > 0
    # the summary is the copied sentences joined: the credited tokens add up to its own count
    assert abs(sum(summary.copied.values()) - embedder.count_tokens(summary.text)) <= 2


def test_a_summary_cut_from_one_long_sentence_credits_that_child(summarizer, embedder):
    texts = [
        "The " + ", ".join(f"planet number {i} circles the star" for i in range(40)) + ".",
        "A " + ", ".join(f"moon number {i} circles planet {i}" for i in range(40)) + ".",
    ]
    request = SummaryRequest(texts=texts, embeddings=embedder.embed(texts), max_tokens=40)
    (summary,) = summarizer.summarize_all([request])
    assert summary.text.endswith("\u2026")
    (child,) = [i for i, text in enumerate(texts) if text.startswith(summary.text[:-1])]
    assert summary.copied == {child: embedder.count_tokens(summary.text)}


def test_the_pooled_vector_is_close_to_the_models_vector_of_the_copied_text(summarizer, embedder):
    topics = [PLANETS, BAKING]
    requests = [SummaryRequest(texts=t, embeddings=embedder.embed(t), max_tokens=60) for t in topics]
    summaries = summarizer.summarize_all(requests)
    pooled = [pooled_vector(s.copied, r.embeddings) for s, r in zip(summaries, requests, strict=True)]
    model = embedder.embed([s.text for s in summaries])
    for mine, other in ((0, 1), (1, 0)):
        assert abs(float(np.linalg.norm(pooled[mine])) - 1.0) < 1e-5
        assert _cosine(pooled[mine], model[mine]) >= 0.8
        # nearer its own summary's vector than the other topic's by far
        assert _cosine(pooled[mine], model[mine]) > _cosine(pooled[mine], model[other]) + 0.3


def test_pooling_weights_the_children_by_the_tokens_copied():
    vectors = np.eye(3, dtype=np.float32)
    assert np.allclose(pooled_vector({1: 7}, vectors), [0, 1, 0])
    assert np.allclose(pooled_vector({0: 30, 2: 10}, vectors), np.array([3, 0, 1]) / np.sqrt(10))
    assert pooled_vector({}, vectors) is None
    assert pooled_vector({0: 1, 1: 1}, np.array([[1.0, 0.0], [-1.0, 0.0]])) is None  # they cancel out


def _summarise(embedder, summarizer, leaves, **settings) -> list[NewNode]:
    nodes, _, _ = asyncio.run(
        summarize_clusters(
            leaves,
            [[0, 1, 2], [3, 4, 5]],
            layer=1,
            first_key=len(leaves),
            kind="summary",
            embedder=embedder,
            summarizer=summarizer,
            settings=dataclasses.replace(Settings(), **settings),
        )
    )
    return nodes


def test_extractive_summaries_are_not_run_through_the_model_and_get_their_pooled_vectors(summarizer, embedder):
    leaves = _leaves(embedder, PLANETS + BAKING)
    counting = CountingEmbedder(embedder)
    nodes = _summarise(counting, summarizer, leaves, summary_vectors="pooled")
    assert counting.embedded == []
    model = embedder.embed([n.text for n in nodes])
    assert all(n.sentences for n in nodes)  # the stored sentences are made all the same
    assert all(_cosine(n.embedding, v) >= 0.8 for n, v in zip(nodes, model, strict=True))

    counting = CountingEmbedder(embedder)
    embedded = _summarise(counting, summarizer, leaves, summary_vectors="model")
    assert counting.embedded == [n.text for n in embedded]
    assert [n.text for n in embedded] == [n.text for n in nodes]
    assert np.allclose(np.vstack([n.embedding for n in embedded]), model, atol=1e-5)


def test_summaries_written_by_a_model_are_always_embedded(embedder):
    leaves = _leaves(embedder, PLANETS + BAKING)
    counting = CountingEmbedder(embedder)
    nodes = _summarise(counting, WritingSummarizer(), leaves, summary_vectors="pooled")
    assert counting.embedded == [n.text for n in nodes]
    assert np.allclose(np.vstack([n.embedding for n in nodes]), embedder.embed(counting.embedded), atol=1e-5)


def test_an_unknown_summary_vectors_setting_is_one_clear_sentence(summarizer, embedder):
    leaves = _leaves(embedder, PLANETS + BAKING)
    with pytest.raises(RaptorError, match="RAPTOR_SUMMARY_VECTORS must be one of pooled, model"):
        _summarise(embedder, summarizer, leaves, summary_vectors="average")
