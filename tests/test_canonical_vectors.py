"""A sentence's or a question's vector is a function of its text alone, not of what was embedded beside it.

The default int8 runtime quantises a batch's activations together, so a text embedded in a batch gets a
slightly different vector with other companions (cosine ~0.99). Cached at first sight, such vectors made a
long-running bot's quotes depend on the questions asked before (docs/EVALUATION.md, "Quotes that do not
depend on what was asked before"). These tests use the real default embedder.
"""

from __future__ import annotations

import numpy as np

from raptor_engine.query.answer import CORE_SHARE, ExtractiveAnswerer, SentenceVectors, _candidates
from raptor_engine.query.followup import Rewrite, split_standalone
from raptor_engine.query.ranker import load_ranker
from raptor_engine.query.support import SupportIndex
from raptor_engine.types import ContextNode

LEAVES = (
    "Ambrose Kittow kept the light through the Great Gale of 1891. The Board awarded him a silver medal for it. "
    "He carried the oil up the hundred and twelve steps every night.",
    "After Samuel Treloar was dismissed for drunkenness, the Board appointed Ambrose Kittow as principal keeper. "
    "Kittow was thirty-four, the son of a Halbeck pilot.",
    "The light was first lit in 1839. The tower was painted white in 1910. The last keeper locked the tower door "
    "in 1987, when the light was automated.",
    "Wrecks on the ledge drowned many sailors before the tower was built. The schooner Margaret Ellen went down "
    "there in 1834 with all eleven hands.",
    "The keepers polished the lens every morning with soft leather. A fog signal was installed in 1923 below "
    "the tower, and its horn could be heard nine miles out.",
)
QUESTION = "When was the light automated?"
# other questions over contexts that share sentences with the one above but group them differently
EARLIER = (
    ("Who was Ambrose Kittow?", (1, 0)),
    ("What sank on the ledge?", (3, 2, 4)),
    ("How far could the fog horn be heard?", (4,)),
    ("What happened in 1910?", (2, 0, 3)),
)


def context(order: tuple[int, ...] = tuple(range(len(LEAVES)))) -> list[ContextNode]:
    return [
        ContextNode(i + 1, 0, "light.md", 0.5, LEAVES[i], 40, 1, start=1000 * i, end=1000 * i + len(LEAVES[i]))
        for i in order
    ]


def scored_quotes(answerer: ExtractiveAnswerer, question: str) -> tuple[str, list[tuple[str, float]]]:
    """The answer's text and every candidate's score, as ranked for the question."""
    text = answerer._answer_sync(question, context(), []).text
    quoted = answerer._quotes(question, context(), [])
    assert quoted is not None
    return text, [(c.text, c.score) for c in quoted.candidates]


def test_a_question_gets_the_same_quotes_and_scores_fresh_and_after_other_questions(embedder):
    fresh = scored_quotes(ExtractiveAnswerer(embedder, ranker=load_ranker()), QUESTION)
    used = ExtractiveAnswerer(embedder, ranker=load_ranker())
    for question, order in EARLIER:
        used._answer_sync(question, context(order), [])
    assert scored_quotes(used, QUESTION) == fresh


def test_a_cached_sentence_vector_is_the_sentence_embedded_alone(embedder):
    texts = [sentence.text for sentence in _candidates(context())]
    alone = np.stack([embedder.embed([text])[0] for text in texts])
    vectors = SentenceVectors(embedder)
    vectors(texts[::2])  # half of them first, beside each other
    vectors(list(reversed(texts)))
    assert np.array_equal(vectors(texts), alone)
    assert np.array_equal(SentenceVectors(embedder)(texts), alone)


def test_a_follow_up_is_read_by_its_own_vector_and_its_context_s_each_embedded_alone(embedder):
    answerer = ExtractiveAnswerer(embedder)
    candidates = _candidates(context())
    rewrite = Rewrite("In what year did the tower close?", "When was the light automated?")
    similarity, sentences, _ = answerer._similarities(rewrite, candidates, set())
    core, carried = embedder.embed([rewrite.core])[0], embedder.embed([rewrite.context])[0]
    query = CORE_SHARE * core + (1 - CORE_SHARE) * carried
    expected = sentences @ (query / np.linalg.norm(query))
    assert np.allclose(similarity, expected, atol=1e-6)
    standalone, _, _ = answerer._similarities(split_standalone(QUESTION), candidates, set())
    assert np.allclose(standalone, sentences @ embedder.embed([QUESTION])[0], atol=1e-6)


def test_a_written_answer_s_claims_are_checked_by_vectors_that_do_not_depend_on_the_stream(embedder):
    claims = ["The light was automated in 1987.", "Kittow won a silver medal.", "The tower was painted red."]
    streamed = SupportIndex(context(), SentenceVectors(embedder))
    streamed.vectors(claims[:1])  # finished first while the answer streamed
    streamed.vectors(claims[1:])
    at_once = SupportIndex(context(), SentenceVectors(embedder))
    for one, other in zip(streamed.similarities(claims), at_once.similarities(claims), strict=True):
        assert np.array_equal(one, other)
