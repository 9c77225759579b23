"""The extractive answerer's sentence-vector cache: hits reuse, misses embed once, the size is bounded."""

from __future__ import annotations

import numpy as np

from raptor_engine.query.answer import ExtractiveAnswerer, SentenceVectors


class CountingEmbedder:
    """Vectors that name their text (its length and first letter), and a log of what was embedded."""

    dim = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)


def test_cached_sentences_are_not_embedded_again_and_come_back_in_order():
    embedder = CountingEmbedder()
    vectors = SentenceVectors(embedder, size=10)
    first = vectors(["alpha", "be", "alpha"])
    second = vectors(["be", "gamma", "alpha"])
    # each text embedded once, a repeat too, and alone: its vector must not depend on its batch's others
    assert embedder.calls == [["alpha"], ["be"], ["gamma"]]
    assert first.tolist() == [[5, 97], [2, 98], [5, 97]]
    assert second.tolist() == [[2, 98], [5, 103], [5, 97]]


def test_the_cache_keeps_at_most_its_size_dropping_the_least_recently_used():
    embedder = CountingEmbedder()
    vectors = SentenceVectors(embedder, size=2)
    vectors(["a1", "b2"])
    vectors(["a1"])  # a1 is now the most recent
    vectors(["c3"])  # b2 goes
    embedder.calls.clear()
    vectors(["a1", "c3", "b2"])
    assert embedder.calls == [["b2"]]


def test_an_answer_asked_twice_embeds_its_sentences_once(embedder):
    from tests.test_answer_ranking import context

    answerer = ExtractiveAnswerer(embedder)
    first = answerer._answer_sync("When did the light close?", context(), [])
    cached = len(answerer.sentence_vectors._vectors)
    again = answerer._answer_sync("When did the light close?", context(), [])
    assert cached > 5 and len(answerer.sentence_vectors._vectors) == cached
    assert again.text == first.text
