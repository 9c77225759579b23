"""Whether the extractive answer says the documents answer the question (query/grounding.py), and the
command that fits the model (raptor_tools/grounding.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from raptor_engine.engine import Engine
from raptor_engine.query.answer import FOUND, NOTHING_RELATED, QUOTE, WEAK_MATCH, ExtractiveAnswerer
from raptor_engine.query.grounding import (
    GROUNDING_FEATURES,
    MODEL_PATH,
    Grounding,
    GroundingModel,
    load_grounding,
)
from raptor_engine.query.ranker import load_ranker
from raptor_tools import grounding as tool
from raptor_tools.evaluate import EvalQuestion
from tests.test_answer_ranking import context
from tests.unhurried import unhurried_settings

SAMPLE = Path(__file__).resolve().parents[1] / "raptor_tools" / "samples" / "lighthouse_keepers.md"
N = len(GROUNDING_FEATURES)


def constant(probability: float, weak_below: float, nothing_below: float) -> GroundingModel:
    """A model that gives every question `probability`: its verdict is the thresholds' alone."""
    logit = float(np.log(probability / (1 - probability)))
    return GroundingModel((0.0,) * N, (1.0,) * N, (0.0,) * N, logit, weak_below, nothing_below)


@pytest.mark.parametrize(
    ("probability", "verdict"),
    [(0.9, Grounding.ANSWERED), (0.5, Grounding.ANSWERED), (0.4, Grounding.CLOSEST), (0.1, Grounding.NOTHING)],
)
def test_the_verdict_is_read_off_the_two_thresholds(probability, verdict):
    assert constant(probability, 0.45, 0.2).verdict([0.0] * N) is verdict


def test_the_shipped_model_matches_the_features_and_its_thresholds_are_ordered():
    model = load_grounding()
    assert json.loads(MODEL_PATH.read_text())["features"] == list(GROUNDING_FEATURES)
    assert 0 < model.nothing_below <= model.weak_below < 1
    assert all(scale > 0 for scale in model.scale)


def test_a_model_fitted_on_other_features_is_refused():
    data = constant(0.5, 0.4, 0.2).to_json() | {"features": ["top_similarity"]}
    with pytest.raises(ValueError, match="refit"):
        GroundingModel.from_json(data)


@pytest.mark.parametrize("question", ["Who was appointed principal keeper?", "What is the capital of France?"])
def test_the_lead_line_never_changes_what_is_quoted(embedder, question):
    """The grounding decides the first line only: the quotes, and their order, are the ranker's."""
    ranker = load_ranker()
    leads = {}
    quotes = set()
    for model in (constant(0.9, 0.5, 0.2), constant(0.3, 0.5, 0.2), constant(0.1, 0.5, 0.2)):
        text = ExtractiveAnswerer(embedder, ranker=ranker, grounding=model)._answer_sync(question, context(), []).text
        lead, _, lines = text.partition("\n")
        leads[lead] = model
        quotes.add(tuple(QUOTE.findall(lines)))
    assert set(leads) == {FOUND, WEAK_MATCH, NOTHING_RELATED}
    assert len(quotes) == 1 and len(next(iter(quotes))) >= 1


@pytest.fixture(scope="module")
def lighthouse(tmp_path_factory, embedder):
    """The sample document's tree, built once for the module's questions."""
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("grounding") / "data"), embedder=embedder)
    asyncio.run(engine.ingest("kb", SAMPLE.name, SAMPLE.read_bytes()))
    try:
        yield engine
    finally:
        engine.close()


@pytest.mark.parametrize(
    "question",
    [
        "When did the light close?",
        "Who was Ambrose Kittow?",
        "What oil did the light burn?",
        "Who designed the tower?",
        "What did the district superintendent check?",
    ],
)
async def test_a_question_the_document_answers_is_answered_from_the_documents(lighthouse, question):
    answer = await lighthouse.ask("kb", question)
    assert answer.text.startswith(FOUND) and answer.answered, answer.text


@pytest.mark.parametrize(
    "question",
    [
        "What is the capital of France?",
        "How do I bake sourdough bread?",
        "Who won the 1998 World Cup?",
        "What is the boiling point of mercury?",
        "Which Python version added pattern matching?",
    ],
)
async def test_a_question_about_something_else_gets_only_the_nearest_passages(lighthouse, question):
    """Three quotes still come back (a reader can judge them), under a lead line that says they do not
    answer; the answer is marked unanswered for the CLI and the bot."""
    answer = await lighthouse.ask("kb", question)
    assert answer.text.startswith((WEAK_MATCH, NOTHING_RELATED)) and not answer.answered, answer.text
    assert QUOTE.findall(answer.text) and answer.citations


def synthetic_rows(seed: int = 7) -> list[dict]:
    """Rows as `raptor_tools.grounding` collects them: positives with high similarities and term shares,
    negatives with low ones, over eight training and four held-out documents."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(12):
        split = "heldout" if d % 3 == 0 else "train"
        for i in range(20):
            kind, centre = ("own", 0.6) if i % 2 == 0 else ("same_set", 0.2)
            features = list(np.clip(rng.normal(centre, 0.12, N), 0, 1).round(4))
            recall = 0.8 if kind == "own" else 0.0
            rows.append(
                {"set": "qasper", "split": split, "kind": kind, "question_id": f"d{d}_q{i}", "doc_id": f"d{d}",
                 "features": features, "recall": recall}
            )
    return rows


def test_the_fit_is_reproducible_and_its_weak_threshold_calls_few_positives_weak():
    rows = synthetic_rows()
    model = tool.fit(rows)
    assert tool.fit(rows) == model
    assert 0 < model.nothing_below <= model.weak_below < 1
    train = [r for r in rows if r["split"] == "train"]
    positives = [model.verdict(r["features"]) for r in train if r["kind"] == "own"]
    negatives = [model.verdict(r["features"]) for r in train if r["kind"] != "own"]
    assert sum(v is not Grounding.ANSWERED for v in positives) <= 0.1 * len(positives)
    assert sum(v is not Grounding.ANSWERED for v in negatives) >= 0.9 * len(negatives)


def test_the_report_counts_each_kind_of_row_against_the_previous_rule():
    rows = synthetic_rows()
    model = tool.fit(rows)
    found = {(t["set"], t["rows"]): t for t in tool.table(rows, model, "heldout")}
    assert found[("all sets", "positive")]["questions"] == 40
    assert found[("all sets", "same_set")]["questions"] == 40
    assert found[("qasper", "same_set")]["not_answered"] >= 0.9
    # the previous rule: a first quote sharing no term (top_lexical 0) under a cosine of 0.35
    weak = [0.0] * N
    assert tool.previous_rule(weak) is Grounding.CLOSEST
    assert tool.previous_rule([0.5] * N) is Grounding.ANSWERED
    assert "| all sets | positive | 40 |" in tool.render(list(found.values()))


@pytest.mark.parametrize(
    ("answers", "question_type", "expected"),
    [(("Unanswerable",), "free_form", True), ((), "unanswerable", True), (("BERT",), "free_form", False)],
)
def test_a_question_its_document_does_not_answer_is_a_negative(answers, question_type, expected):
    question = EvalQuestion("q1", "d1", "Which corpus?", answers, question_type=question_type)
    assert tool.unanswerable(question) is expected
    row = {"kind": "unanswerable" if expected else "own", "recall": 1.0}
    assert tool.label(row) == (0 if expected else 1)


def test_a_negative_is_asked_of_another_document_and_the_choice_is_stable():
    assert tool.partner(["a", "b", "c"], "a") == "b" and tool.partner(["a", "b", "c"], "c") == "a"
    assert tool.partner(["a"], "a") is None  # a split with one document has no same-set negative
    assert tool.hash_index("qasper_leval00_q03", 5) == tool.hash_index("qasper_leval00_q03", 5) < 5
