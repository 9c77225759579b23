"""The learned ranker: the shipped file loads and ranks deterministically, the exported trees predict
what scikit-learn predicts, the features mean what they say, and a wrong file is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from raptor_engine.query.answer import (
    ExtractiveAnswerer,
    bm25_scores,
    proximity,
)
from raptor_engine.query.ranker import (
    MODEL_PATH,
    NODE_FEATURES,
    SENTENCE_FEATURES,
    NodeCandidate,
    RankerError,
    TreeEnsemble,
    load_ranker,
    node_features,
    node_kind_match,
    ranker_from_json,
)
from raptor_engine.types import ContextNode


def test_the_shipped_ranker_loads_and_ranks_deterministically():
    ranker = load_ranker()
    rows = np.random.default_rng(7).random((50, len(SENTENCE_FEATURES)))
    first = ranker.sentence_scores(rows)
    assert first.shape == (50,) and np.isfinite(first).all()
    assert np.array_equal(first, ranker.sentence_scores(rows.copy()))
    assert np.array_equal(first, ranker_from_json(json.loads(MODEL_PATH.read_text())).sentence_scores(rows))
    assert len(set(np.round(first, 6))) > 1  # it ranks: not one score for everything
    nodes = np.random.default_rng(8).random((20, len(NODE_FEATURES)))
    assert np.array_equal(ranker.node_scores(nodes), ranker.node_scores(nodes))


def test_the_shipped_ranker_prefers_the_sentence_that_answers():
    """Everything else equal, a sentence closer to the question and holding its terms ranks higher."""
    ranker = load_ranker()
    base = np.zeros((2, len(SENTENCE_FEATURES)))
    column = {name: i for i, name in enumerate(SENTENCE_FEATURES)}
    base[:, column["words"]] = np.log1p(20)
    base[:, column["node_score"]] = 0.5
    base[0, column["similarity"]], base[1, column["similarity"]] = 0.7, 0.1
    base[0, column["lexical"]], base[1, column["lexical"]] = 0.8, 0.0
    base[0, column["bm25"]], base[1, column["bm25"]] = 1.0, 0.0
    base[1, column["similarity_gap"]] = -0.6
    base[1, column["similarity_rank"]] = 1.0
    scores = ranker.sentence_scores(base)
    assert scores[0] > scores[1]


def test_exported_trees_predict_what_scikit_learn_predicts():
    from sklearn.ensemble import HistGradientBoostingRegressor

    from raptor_tools.train_ranker import export_trees

    rng = np.random.default_rng(0)
    features = rng.random((400, 3))
    features[rng.random(400) < 0.1, 1] = np.nan  # missing values take the side the fit learned
    labels = features[:, 0] * 2 + np.nan_to_num(features[:, 1]) ** 2 + rng.normal(0, 0.05, 400)
    model = HistGradientBoostingRegressor(max_iter=30, random_state=0).fit(features, labels)
    trees = TreeEnsemble.from_json(export_trees(model, ("a", "b", "c")))
    test = rng.random((100, 3))
    test[::7, 1] = np.nan
    assert np.allclose(trees.predict(test), model.predict(test))


def test_a_ranker_fitted_on_other_features_is_refused():
    data = json.loads(MODEL_PATH.read_text())
    data["sentence"]["features"] = data["sentence"]["features"][:-1]
    with pytest.raises(RankerError, match="retrain"):
        ranker_from_json(data)
    data = json.loads(MODEL_PATH.read_text())
    data["format"] = 99
    with pytest.raises(RankerError, match="format"):
        ranker_from_json(data)


# ---- features ---------------------------------------------------------------------------------


def test_bm25_prefers_the_rarer_term_and_the_shorter_document():
    documents = [{"lamp", "keeper"}, {"keeper", "gale"}, {"keeper"}, {"lamp", "keeper", "a", "b", "c", "d"}]
    scores = bm25_scores({"lamp", "keeper"}, documents, [len(d) for d in documents])
    assert scores.max() == 1.0 and scores[0] == 1.0  # both terms, short
    assert scores[3] < scores[0]  # both terms, longer
    assert scores[2] < scores[3]  # the common term only
    assert bm25_scores(set(), documents, [2, 2, 1, 6]).tolist() == [0.0] * 4


def test_proximity_is_the_terms_held_over_the_words_they_span():
    terms = {"lamp", "lit"}
    assert proximity(terms, "The lamp was lit at dusk.") == pytest.approx(2 / 3)  # lamp was lit
    assert proximity(terms, "The lamp stood unused for years until the keeper lit it.") < 0.3
    assert proximity(terms, "The lamp was old.") == 0.0  # one term: no span


def test_sentence_features_mark_the_kind_of_answer_asked_for(embedder):
    context = [
        ContextNode(
            1,
            0,
            "a.md",
            0.6,
            "The light was first lit in 1839. Keepers polished the brass lens daily.",
            20,
            1,
            start=0,
            end=70,
        ),
        ContextNode(2, 1, None, 0.4, "Ambrose Kittow kept the light for eighteen years.", 12, 3),
    ]
    texts, rows = ExtractiveAnswerer(embedder).feature_rows("When was the light first lit?", context)
    column = {name: i for i, name in enumerate(SENTENCE_FEATURES)}
    assert rows.shape == (3, len(SENTENCE_FEATURES))
    first = texts.index("The light was first lit in 1839.")
    polish = texts.index("Keepers polished the brass lens daily.")
    assert rows[first, column["kind_when"]] == 1.0 and rows[polish, column["kind_when"]] == 0.0
    assert rows[first, column["lexical"]] > rows[polish, column["lexical"]]
    assert rows[first, column["opening"]] == 1.0  # at the document's start
    assert rows[texts.index("Ambrose Kittow kept the light for eighteen years."), column["layer"]] == 1.0
    assert rows[:, column["similarity_rank"]].min() == 0.0 and rows[:, column["similarity_rank"]].max() == 1.0
    assert rows[:, column["similarity_gap"]].max() == 0.0


def test_node_features_read_both_searches():
    candidates = [
        NodeCandidate(
            1,
            0.8,
            vector_rank=0,
            layer=0,
            tokens=90,
            text="Valve V-12 failed in 1999.",
            terms=frozenset({"valve", "fail"}),
        ),
        NodeCandidate(
            2,
            0.3,
            text_score=4.0,
            text_rank=0,
            layer=1,
            tokens=150,
            text="No numbers here.",
            terms=frozenset(),
        ),
    ]
    rows = node_features("When did the valve fail?", {"valve", "fail"}, candidates)
    column = {name: i for i, name in enumerate(NODE_FEATURES)}
    assert rows.shape == (2, len(NODE_FEATURES))
    assert rows[0, column["bm25"]] == 0.0 and rows[1, column["bm25"]] == 1.0
    assert rows[1, column["cosine_gap"]] == pytest.approx(-0.5)
    assert rows[0, column["lexical"]] == 1.0 and rows[1, column["lexical"]] == 0.0
    assert rows[0, column["kind"]] == 1.0 and rows[1, column["kind"]] == 0.0
    assert rows[1, column["vector_rank"]] > rows[0, column["vector_rank"]]  # only the text search found it
    assert node_kind_match("Who kept the light?", "It was kept by Ambrose Kittow.") == 1.0
