"""How the extractive answer uses the learned ranker: the sentence model's score blended with the hand
score by the kind of question, three quotes that cover the question rather than repeat it, and how
`raptor train-ranker` chooses the blend on its training rows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from raptor_engine.query.answer import QUOTE, ExtractiveAnswerer, pick_quotes, question_terms
from raptor_engine.query.ranker import (
    HAND,
    MODEL_PATH,
    SENTENCE_FEATURES,
    Blend,
    RankerError,
    asks_short_fact,
    blended,
    load_ranker,
    ranker_from_json,
)
from raptor_engine.types import ContextNode
from raptor_tools.evaluate import EvalQuestion
from raptor_tools.train_ranker import Rows, choose_blend, quote_scores_by_set


@pytest.mark.parametrize(
    ("question", "short"),
    [
        ("Which datasets are used?", True),
        ("What baseline model is used?", True),
        ("How many annotators participated?", True),
        ("Do they report results only on English data?", True),
        ("Who was Ambrose Kittow?", True),
        ("Why did the press not report on the affair?", False),
        ("Describe the setting of the story.", False),
        ("What happens to Ivy Hendricks throughout the story?", False),
        ("What is the relationship between Strike and Aphrodite?", False),
        ("How did they obtain the dataset?", False),
        ("In what language are the tweets?", True),  # a preposition before the question word
        ("For how many years did the lighthouse stand?", True),
        ("On which dataset do they report results?", True),
        ("By whom was the light kept?", True),
        ("In what way does the story end?", False),  # about the story: a description, whatever comes first
        ("In the story, why does she leave?", False),  # a preposition before a phrase, not a question word
        ("With what does the story's plot deal?", False),
        ("Is the corpus public?", True),
    ],
)
def test_short_fact_questions_are_told_from_descriptions_and_reasons(question, short):
    assert asks_short_fact(question) is short


def test_the_blend_is_a_convex_mix_weighted_by_the_kind_of_question():
    learned, hand = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert blended(learned, hand, 1.0).tolist() == [1.0, 0.0]
    assert blended(learned, hand, 0.0).tolist() == [0.0, 1.0]
    assert blended(learned, hand, 0.25).tolist() == [0.25, 0.75]
    blend = Blend(short_fact=0.2, other=0.9, repeat_penalty=0.0)
    assert blend.weight("Which dataset is used?") == 0.2
    assert blend.weight("Why did the keeper leave?") == 0.9


def test_the_shipped_ranker_blends_its_model_with_the_hand_score():
    ranker = load_ranker()
    rows = np.random.default_rng(3).random((40, len(SENTENCE_FEATURES)))
    for question in ("Which dataset is used?", "Why did the keeper leave?"):
        weight = ranker.blend.weight(question)
        expected = weight * ranker.sentence_scores(rows) + (1 - weight) * rows[:, HAND]
        assert np.allclose(ranker.quote_scores(question, rows), expected)


def test_a_ranker_file_without_a_blend_or_with_one_out_of_range_is_refused():
    data = json.loads(MODEL_PATH.read_text())
    data.pop("blend")
    with pytest.raises(RankerError, match="retrain"):
        ranker_from_json(data)
    data = json.loads(MODEL_PATH.read_text())
    data["blend"]["other"] = 1.5
    with pytest.raises(RankerError, match="out of range"):
        ranker_from_json(data)


# ---- picking the quotes -------------------------------------------------------------------------

TEXTS = [
    "The keeper lit the lamp at dusk.",  # both question terms
    "The keeper lit the lamp every evening at dusk.",  # a near duplicate of the first
    "The keeper was paid by the Board.",  # a term the first quote already holds
    "Whale oil burned in it until 1890.",  # the question's other term
    "Fishing boats left the cove at dawn.",
]


def terms() -> list[set[str]]:
    return [question_terms(text) for text in TEXTS]


def test_quotes_follow_the_scores_skipping_near_duplicates_and_weak_ones():
    scores = [1.0, 0.95, 0.7, 0.6, 0.1]
    assert pick_quotes(scores, terms(), 3, question_terms("Who lit the keeper's lamp?")) == [0, 2, 3]
    assert pick_quotes([1.0, 0.95, 0.4, 0.3, 0.1], terms(), 3, set()) == [0]  # under half the best: none
    assert pick_quotes([0.5, 0.5, 0.5, 0.5, 0.5], terms(), 2, set()) == [0, 2]  # ties: context order


def test_a_repeat_penalty_prefers_a_quote_that_answers_another_part_of_the_question():
    asked = question_terms("Who was the keeper and what did the lamp burn?")
    scores = [1.0, 0.2, 0.7, 0.65, 0.1]
    assert pick_quotes(scores, terms(), 2, asked, repeat_penalty=0.0) == [0, 2]
    # the third sentence holds only 'keeper', which the first quote already holds; the fourth 'burn'
    assert pick_quotes(scores, terms(), 2, asked, repeat_penalty=0.5) == [0, 3]


# ---- choosing the blend -------------------------------------------------------------------------


def synthetic_rows() -> tuple[Rows, list[np.ndarray]]:
    """Two kinds of question, six sentences each (so the three quotes' order matters): short facts
    whose answering sentence the hand score finds and the model misses, and reasons whose answering
    sentence the model finds and the hand score misses."""
    rows, learned = Rows(), []
    kinds = [
        (
            "papers",
            "Which dataset is used?",
            ("SQuAD",),
            [
                "We train on SQuAD.",
                "Experiments over many corpora and settings are discussed at length in this section.",
                "Tables report the scores of every system we compared on the development data.",
                "Figures show the loss curves of the runs.",
                "Hyper-parameters were tuned by grid search.",
                "Code will be released.",
            ],
            [1.0, 0.1, 0.2, 0.3, 0.15, 0.05],
            [0.0, 1.0, 0.9, 0.8, 0.7, 0.6],
        ),
        (
            "stories",
            "Why did the keeper leave the tower?",
            ("storm wrecked the lamp room",),
            [
                "The keeper left the tower.",
                "A storm wrecked the lamp room, so nobody could stay.",
                "The tower stood on the ledge.",
                "Gulls nested on the gallery.",
                "Boats passed the cove.",
                "The keeper kept a log.",
            ],
            [0.9, 0.1, 0.8, 0.7, 0.6, 0.5],
            [0.1, 1.0, 0.2, 0.1, 0.1, 0.1],
        ),
    ]
    for i in range(6):
        for set_name, question, answers, texts, hand, model in kinds:
            features = np.zeros((len(texts), len(SENTENCE_FEATURES)))
            features[:, HAND] = hand
            rows.features.append(features)
            rows.labels.append(np.array([float(t == texts[0 if set_name == "papers" else 1]) for t in texts]))
            rows.texts.append(texts)
            rows.questions.append(
                EvalQuestion(f"{set_name}{i}", f"{set_name}-doc{i}", question, answers=answers)
            )
            rows.sets.append(set_name)
            learned.append(np.array(model))
    return rows, learned


def test_the_blend_chosen_trusts_each_score_where_it_finds_the_answer():
    rows, learned = synthetic_rows()
    blend, tried = choose_blend(rows, learned)
    assert blend["short_fact"] < 0.5 and blend["other"] > 0.3
    assert len(tried["all"]) > 1
    weights = [
        blend["short_fact"] if q.question.startswith("Which") else blend["other"] for q in rows.questions
    ]
    chosen = quote_scores_by_set(
        rows,
        [blended(m, f[:, HAND], w) for m, f, w in zip(learned, rows.features, weights, strict=True)],
        0.0,
    )
    alone = quote_scores_by_set(rows, learned, 0.0)
    hand = quote_scores_by_set(rows, [f[:, HAND] for f in rows.features], 0.0)
    # the quotes hold the short answer word for word, as the hand score's do, and the reason's words
    assert chosen["papers"][1] == 1.0 and hand["papers"][1] == 1.0 and alone["papers"][1] == 0.0
    assert chosen["stories"][0] > hand["stories"][0]


def test_the_hand_weights_are_kept_when_the_model_only_makes_the_quotes_worse():
    rows, learned = synthetic_rows()
    # a model that puts a sentence holding no answer first, and nothing else: no blend can gain
    worse = [np.eye(len(texts))[-1] for texts in rows.texts]
    blend, tried = choose_blend(rows, worse)
    assert blend == {"short_fact": 0.0, "other": 0.0, "repeat_penalty": 0.0, "by_kind": {}}
    assert tried["all"]["1.0/1.0/0.0"] is None  # the model alone loses both sets' answers


# ---- the shipped ranker on a fixed fixture --------------------------------------------------------

FIXTURE = [
    "This section describes when and how the tweet corpus was collected.",
    "The question of how many annotators a tweet corpus needs is discussed below.",
    "Each tweet was labelled by five annotators working independently.",
    "We thank the reviewers for their comments on an earlier draft of this paper.",
]


def test_the_shipped_ranker_quotes_the_answer_where_cosine_picks_a_restatement(embedder):
    """On a fixed fixture where the sentence closest to the question only restates it, the shipped
    ranker (model and blend) quotes the sentence that answers first."""
    context = [
        ContextNode(i + 1, 0, "paper.md", 0.5, text, 30, 1, start=200 * i, end=200 * i + len(text))
        for i, text in enumerate(FIXTURE)
    ]
    question = "How many annotators labelled each tweet?"
    answerer = ExtractiveAnswerer(embedder, ranker=load_ranker())
    texts, rows = answerer.feature_rows(question, context)
    by_cosine = texts[int(np.argmax(rows[:, SENTENCE_FEATURES.index("similarity")]))]
    assert by_cosine == FIXTURE[1]  # the fixture is what it claims: cosine alone quotes the restatement
    draft = answerer._answer_sync(question, context, [])
    assert QUOTE.findall(draft.text)[0] == FIXTURE[2]
