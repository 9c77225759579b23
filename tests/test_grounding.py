"""Whether the extractive answer says the documents answer the question (query/grounding.py), and the
command that fits the model (raptor_tools/grounding.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from raptor_engine.engine import Engine
from raptor_engine.query.answer import FOUND, NOTHING_RELATED, QUOTE, WEAK_MATCH, ExtractiveAnswerer
from raptor_engine.query.followup import OTHER_LANGUAGE_OPENING
from raptor_engine.query.grounding import (
    GROUNDING_FEATURES,
    MODEL_PATH,
    Grounding,
    GroundingModel,
    asks_a_negative,
    content_share,
    load_grounding,
    negated_term,
    one_slip_apart,
    respellings,
    says_the_asked_negative,
)
from raptor_engine.query.ranker import load_ranker
from raptor_engine.types import ContextNode
from raptor_tools import grounding as tool
from raptor_tools.evaluate import EvalQuestion
from tests.test_answer_ranking import LEAVES, context
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


FEATURE = {name: i for i, name in enumerate(GROUNDING_FEATURES)}


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("lighthose", "lighthouse"),  # a letter dropped
        ("keepper", "keeper"),  # doubled
        ("towre", "tower"),  # two swapped
        ("marrov", "marrow"),  # one changed
        ("railwya", "railway"),  # the last two swapped
    ],
)
def test_one_slip_apart_is_a_single_typing_slip_either_way(typed, meant):
    assert one_slip_apart(typed, meant) and one_slip_apart(meant, typed)


@pytest.mark.parametrize(("a", "b"), [("keeper", "keeper"), ("tower", "towered"), ("abcd", "badc"), ("lamp", "lisp")])
def test_two_slips_or_none_are_not_one(a, b):
    assert not one_slip_apart(a, b)


def test_a_term_the_context_lacks_is_respelled_as_the_term_one_slip_away():
    vocabulary = {"lighthous", "kept", "1887", "cut", "marrow", "oil", "read"}
    found = respellings({"lighthos", "kept", "1886", "cup", "marow", "sourdough", "boil", "bread"}, vocabulary)
    # numbers and short terms are never respelled ("1886" is another year, "cup" is not "cut"), nor a
    # first letter ("boil" is not "oil", "bread" not "read")
    assert found == {"lighthos": "lighthous", "marow": "marrow"}


@pytest.mark.parametrize(
    ("text", "negative"),
    [
        ("Who did NOT keep the light?", True),
        ("Which keeper never married?", True),
        ("Why didn't the Board reply?", True),
        ("Who had no children?", True),
        ("Who kept the light?", False),
        ("Was it worth it? Why or why not?", False),  # asks both ways
        ("Did the Board say whether or not it would pay?", False),
    ],
)
def test_a_negative_is_read_from_not_never_no_and_contractions(text, negative):
    assert asks_a_negative(text) is negative


def test_a_misspelt_question_has_the_term_shares_of_the_question_spelt_right(embedder):
    answerer = ExtractiveAnswerer(embedder, ranker=load_ranker())
    right = answerer.grounding_features("Who appointed Ambrose Kittow as principal keeper?", context())
    typed = answerer.grounding_features("Who apointed Ambrose Kitow as principal keepr?", context())
    for name in ("quote_coverage", "context_coverage", "names_missing"):
        assert typed[FEATURE[name]] == right[FEATURE[name]], name
    assert right[FEATURE["respelled"]] == 0 and typed[FEATURE["respelled"]] == pytest.approx(3 / 5)


def test_the_content_share_is_how_much_of_the_question_names_its_subject(embedder):
    assert content_share(1, 3) == pytest.approx(1 / 3) and content_share(0, 0) == 0.0
    answerer = ExtractiveAnswerer(embedder, ranker=load_ranker())
    pronoun = answerer.grounding_features("Who painted it?", context())[FEATURE["content_share"]]
    named = answerer.grounding_features("Who painted the lighthouse tower white?", context())[FEATURE["content_share"]]
    assert pronoun == pytest.approx(1 / 3) and named == pytest.approx(4 / 6)


def negative_context() -> list[ContextNode]:
    """context() and one sentence that says a negative."""
    text = "Samuel Treloar never married, and the keeper's cottage stood empty after he was dismissed."
    return [*context(), ContextNode(len(LEAVES) + 1, 0, "a.md", 0.5, text, 20, 1, start=7000, end=7000 + len(text))]


@pytest.mark.parametrize(
    ("question", "lead"),
    [
        ("Who kept the light through the Great Gale?", FOUND),
        ("Who did NOT keep the light through the Great Gale?", WEAK_MATCH),  # no quote says who did not
        ("Which keeper never married?", FOUND),  # the first quote says it
    ],
)
def test_a_negated_question_is_settled_only_by_a_quote_that_says_a_negative(embedder, question, lead):
    """Even a model sure the quotes answer gives a negated question the closest passages, unless its
    first quote says a negative too."""
    answerer = ExtractiveAnswerer(embedder, ranker=load_ranker(), grounding=constant(0.9, 0.5, 0.2))
    text = answerer._answer_sync(question, negative_context(), []).text
    assert text.startswith(lead), text


def test_a_negated_question_about_something_else_still_reads_nothing(embedder):
    answerer = ExtractiveAnswerer(embedder, ranker=load_ranker(), grounding=constant(0.1, 0.5, 0.2))
    text = answerer._answer_sync("Who did not win the World Cup?", negative_context(), []).text
    assert text.startswith(NOTHING_RELATED), text


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


@pytest.mark.parametrize(
    ("kb", "question"),
    [
        # misspelt
        ("lighthouse_keepers", "when did the ligth close?"),  # two letters swapped
        ("railway", "what did the raliway carry?"),
        ("bees", "what does a qeen excluder do?"),  # a letter dropped
        ("lighthouse_keepers", "wat did Elias Marow write?"),
        # the subject a pronoun
        ("railway", "what did it carry?"),
        ("railway", "who surveyed it?"),
        ("lighthouse_keepers", "who designed it?"),
        ("bees", "how many eggs does she lay?"),
    ],
)
async def test_a_misspelt_or_pronoun_only_question_the_document_answers_is_answered(samples, kb, question):
    answer = await samples.ask(kb, question)
    assert answer.text.startswith(FOUND) and answer.answered, answer.text


@pytest.mark.parametrize("question", ["who built it?", "when did it open?", "what did they find?", "who invented it?"])
async def test_a_pronoun_only_question_is_never_told_the_documents_say_nothing(samples, question):
    """'it' may be anything the documents hold: the closest passages at worst."""
    answer = await samples.ask("railway", question)
    assert not answer.text.startswith(NOTHING_RELATED), answer.text


@pytest.mark.parametrize(
    ("kb", "question"),
    [
        ("lighthouse_keepers", "who did NOT keep the light?"),
        ("lighthouse_keepers", "which keeper never married?"),
        ("railway", "which train didn't run?"),
        ("bees", "which bees don't leave the hive?"),
    ],
)
async def test_a_negated_question_gets_the_closest_passages_not_an_answer(samples, kb, question):
    answer = await samples.ask(kb, question)
    assert answer.text.startswith(WEAK_MATCH) and not answer.answered, answer.text


@pytest.mark.parametrize(
    ("question", "negated"),
    [
        ("which keeper never married?", "marry"),
        ("who did NOT keep the light?", "keep"),
        ("which train didn't run?", "run"),
        ("Which bees don\u2019t leave the hive?", "leav"),
        ("who did not drown?", "drown"),
        ("Which road has no toll?", "toll"),
    ],
)
def test_a_negated_question_negates_the_word_after_its_negation(question, negated):
    assert negated_term(question) == negated


def test_only_a_negative_of_what_the_question_negates_settles_it():
    assert says_the_asked_negative("who did not drown?", "Nobody drowned, but the cargo was lost.")
    assert says_the_asked_negative("which bees don't leave the hive?", "The nurse bees never leave the hive.")
    assert says_the_asked_negative("which bees don't leave the hive?", "The drones have not left it.")  # 'left'
    # a negative of something else, or the asked word without a negative, settles nothing
    assert not says_the_asked_negative("which keeper never married?", "It has not failed once in that time.")
    assert not says_the_asked_negative("which keeper never married?", "Elias Marrow married in 1840.")
    # a question whose negation names nothing ('which of them did not?') is settled by any negative
    assert negated_term("which of them did not?") is None
    assert says_the_asked_negative("which of them did not?", "Peter did not.")


async def test_a_negated_question_a_quote_settles_is_answered(samples):
    answer = await samples.ask("railway", "who did not drown?")  # "Nobody drowned, but ..."
    assert answer.text.startswith(FOUND) and "Nobody drowned" in answer.text, answer.text


@pytest.mark.parametrize(
    "question",
    [
        "What is the capital of France?",
        "what is the captial of France?",
        "How do I bake sourdough bread?",
        "how do I bake sourdouh bread?",
        "Which Python version added pattern matching?",
    ],
)
async def test_an_off_topic_question_misspelt_or_not_still_reads_say_nothing(samples, question):
    answer = await samples.ask("lighthouse_keepers", question)
    assert answer.text.startswith(NOTHING_RELATED) and not answer.answered, answer.text


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


@pytest.mark.parametrize(
    "question",
    [
        "¿Cuántos días puedo trabajar desde casa?",
        "Combien de jours puis-je travailler à la maison?",
        "Quanti giorni posso lavorare da casa?",
        "Ile dni mogę pracować z domu?",
    ],
)
async def test_a_question_in_another_language_is_never_told_the_documents_say_nothing(samples, question):
    """The grounding model was fitted on English questions and the embedder is English-trained: over
    English documents they cannot tell that a Spanish question's subject is absent, so its quotes are
    only the closest passages, never 'say nothing' (an English question about something else still is:
    test_an_off_topic_question_misspelt_or_not_still_reads_say_nothing); its first line says the
    documents are in English, so the user knows why they look unrelated."""
    answer = await samples.ask("lighthouse_keepers", question)
    assert answer.text.startswith(OTHER_LANGUAGE_OPENING + "English and the question seems to be in "), answer.text
    assert not answer.answered and not answer.text.startswith(NOTHING_RELATED), answer.text


@pytest.mark.parametrize(
    ("question", "other_language"),
    [
        ("Posso lavorare a casa oggi?", True),  # "a" is Italian as much as English
        ("Was ist ein Leuchtturm?", True),  # German "was", "ist"
        ("What is a lighthouse?", False),
        ("Kittow Halbeck 1887?", False),  # the documents' own words, whatever the language
        ("Wer war Kittow?", False),  # a name the documents hold
        ("Quién?", False),  # too short to tell
    ],
)
def test_another_language_is_read_off_english_question_words_and_the_contexts_terms(question, other_language):
    from raptor_engine.query.answer import _asked_in_another_language

    @dataclasses.dataclass
    class Held:
        terms: set[str]

    held = [Held({"kittow", "halbeck", "1887", "lighthous", "keeper"})]
    assert _asked_in_another_language(question, held) is other_language
