"""The packaged-reranker benchmark (raptor_tools/benchmarks/packaged_reranker.py): its score mixing,
the train-chosen node weight, and (when `nanoranker` is installed) the scorer itself. No timing is
asserted; the benchmark prints it."""

from __future__ import annotations

import numpy as np
import pytest

from raptor_engine.query.ranker import NODE_FEATURES
from raptor_tools.benchmarks import packaged_reranker as pr
from raptor_tools.evaluate import EvalQuestion
from raptor_tools.train_ranker import Rows


def test_scaled_maps_each_question_to_zero_one_and_ties_to_zero():
    assert pr.scaled(np.array([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert pr.scaled(np.array([5.0, 5.0])).tolist() == [0.0, 0.0]
    assert pr.scaled(np.array([])).tolist() == []


def test_mixed_is_the_base_at_weight_zero_and_reranks_only_the_best_k():
    base = np.array([0.9, 0.8, 0.1, 0.7])
    reranker = np.array([0.0, 1.0, 5.0, 0.5])
    assert pr.mixed(base, reranker, 0.0).tolist() == base.tolist()
    everything = pr.mixed(base, reranker, 1.0)
    assert int(np.argmax(everything)) == 2  # the reranker alone prefers the base's worst
    best_two = pr.mixed(base, reranker, 1.0, top=2)
    # only the base's two best (0 and 1) were scored, onto the base's range [0.1, 0.9]: 1 wins, and
    # 2's high reranker score is never read
    assert best_two.tolist() == pytest.approx([0.1, 0.9, 0.1, 0.1])
    nudged = pr.mixed(base, reranker, 0.05)
    assert nudged.min() >= base.min() and nudged.max() <= base.max()  # the base's own scale


def _node_rows(n_questions: int, answer_at: int) -> Rows:
    """Questions whose reference is in the node at place `answer_at` of the fused order; every node
    is 200 tokens, so 500 tokens hold the first two."""
    rows = Rows()
    tokens = NODE_FEATURES.index("tokens")
    for i in range(n_questions):
        question = EvalQuestion(
            f"q{i}", f"d{i}", f"Where did Korvin{i} hide the key?", (f"under the mill{i}",)
        )
        texts = [f"filler text number {j} about weather" for j in range(5)]
        texts[answer_at] = f"Korvin{i} hid the key under the mill{i}."
        features = np.zeros((len(texts), len(NODE_FEATURES)))
        features[:, tokens] = np.log1p(200)
        rows.add(question, "synthetic", features, texts)
    return rows


def test_node_weight_is_chosen_on_train_and_reported_on_heldout():
    """A reranker that finds the answering node (fourth in fused order, outside 500 tokens) earns a
    positive weight on the training rows, and the held-out mix then recalls what the fused order misses."""
    train, held = _node_rows(6, answer_at=3), _node_rows(4, answer_at=3)

    def finds_the_answer(rows: Rows) -> list[np.ndarray]:
        return [np.array([float("mill" in t) for t in texts]) for texts in rows.texts]

    found = pr.node_variants(train, held, finds_the_answer(train), finds_the_answer(held))
    assert found["chosen_weight"] > 0
    assert found["heldout"]["fused (main)"] < 0.5
    assert found["heldout"][f"mix {found['chosen_weight']}"] == pytest.approx(1.0)


def test_the_packaged_scorer_scores_each_text_in_place():
    pytest.importorskip(pr.PACKAGE, reason="the packaged reranker is an optional measurement dependency")
    score = pr.packaged_scorer()
    assert score is not None
    texts = [  # the package's own example (its README's order), with one text given twice
        "Isaac Newton's laws of motion and gravity laid the groundwork for classical mechanics.",
        "The speed of light in a vacuum is approximately 299,792 kilometers per second (km/s), or about "
        "186,282 miles per second.",
        "Isaac Newton's laws of motion and gravity laid the groundwork for classical mechanics.",
        "The theory of relativity, proposed by Albert Einstein, has revolutionized our understanding of "
        "space, time, and gravity.",
    ]
    scores = score("What is the speed of light?", texts)
    assert scores.shape == (4,)
    assert int(np.argmax(scores)) == 1
    assert scores[0] == scores[2]  # the same text, the same score, at each of its places
    assert score("anything", []).shape == (0,)
