"""'When was X done / did X happen?' leads with the sentence that dates the asked event (its verb in any form,
its noun, or the happening named), not one that only repeats the verb; 'Who was X's R?' and 'Who R-ed X?'
lead with X's R, not with a sentence naming X only as the owner of another relation (X's grandson, niece)
or one naming no R at all. Over small documents of tests/fixtures/answer_events."""

from __future__ import annotations

from pathlib import Path

import pytest

from raptor_engine.query.answer import (
    _candidates,
    _holds_the_relation,
    _owns_another,
    _says_the_asked_event,
    asked_event,
    asked_relation,
)
from raptor_engine.types import ContextNode
from tests.test_answer_ranking import first_quote

FIXTURES = Path(__file__).parent / "fixtures" / "answer_events"


def leaves(name: str) -> list[str]:
    """The fixture's paragraphs, its heading left out: one leaf each, in reading order."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return [part.strip() for part in text.split("\n\n") if part.strip() and not part.startswith("#")]


@pytest.mark.parametrize(
    ("question", "things", "verb"),
    [
        ("When was the light automated?", set(), "automat"),
        ("In what year was the viaduct finished?", set(), "finish"),
        ("What year did the line close to passengers?", set(), "clos"),
        ("When did Hester keep the light?", set(), "keep"),  # a named subject: its verb follows it
        ("When did the great flood happen?", {"great", "flood"}, None),
        ("When did the flood take place?", {"flood"}, None),
        ("When did Morwenna become principal keeper?", set(), None),  # the event is what follows 'become'
        ("When did Hester Marrow's son become harbour master?", set(), None),
        ("When was Hester's son born?", set(), "bear"),  # an owner is no named subject: the son was born
        ("What year did Hester Marrow start keeping the light?", set(), "keep"),  # the activity started
        ("When did the mill stop grinding?", set(), "grind"),
        ("Who kept the light?", set(), None),
    ],
)
def test_what_a_when_question_asks_the_time_of(question, things, verb):
    assert asked_event(question) == (frozenset(things), verb)


@pytest.mark.parametrize(
    "question",
    [
        "When was the mill electrified?",
        "In what year was Harlow Mill electrified?",
        "What year was the mill electrified?",  # 'year' asks: "for forty years" holds no answer
        "What year was the mill converted?",
        "Which year was the mill converted?",
    ],
)
def test_a_when_question_leads_with_the_sentence_dating_the_event_by_its_noun(embedder, question):
    quote = first_quote(embedder, leaves("mill.md"), question)
    assert "scheduled for electrification in 1921" in quote


@pytest.mark.parametrize(
    "question", ["When did Ruth Harlow start grinding corn?", "What year did Ruth start grinding the corn?"]
)
def test_when_did_x_start_doing_leads_with_the_start_of_that_activity_in_its_past_form(embedder, question):
    assert "from 1931" in first_quote(embedder, leaves("mill.md"), question)  # "Ruth ground the parish corn"


@pytest.mark.parametrize(
    ("sentence", "says"),
    [
        ("Hester kept the light from 1861 to 1874.", True),  # an irregular past
        ("He moved into the keeper's cottage in 1839.", False),  # the doer's noun dates no keeping
    ],
)
def test_the_asked_activity_is_read_in_its_past_forms_not_in_its_doers_name(sentence, says):
    candidate = _candidates([ContextNode(1, 0, "a.md", 0.5, sentence, 10, 1)])[0]
    assert _says_the_asked_event("When did Hester start keeping the light?", candidate) is says


@pytest.mark.parametrize("question", ["When did the flood happen?", "When did the flood take place?"])
def test_when_did_x_happen_leads_with_the_dated_sentence_not_the_one_naming_x_without_a_time(
    embedder, question
):
    assert "March 1947" in first_quote(embedder, leaves("mill.md"), question)


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("Who was Ambrose Kittow's assistant?", ("Ambrose Kittow", "assistant")),
        ("Who was Edith's deputy?", ("Edith", "deputy")),
        ("Who is Ambrose Kittow's successor?", ("Ambrose Kittow", "successor")),
        ("Who was Kittow's business partner?", ("Kittow", "partner")),
        ("Who assisted Ambrose Kittow?", ("Ambrose Kittow", "assist")),
        ("Who succeeded Edith Vane?", ("Edith Vane", "succeed")),
        ("Who kept the light in 1887?", None),
        # a deed done to a thing of X's asks who did it, not X's relation (held-out NarrativeQA: the FCC)
        ("Who is called in to investigate Mark's radio station?", None),
        ("Who repaired Anna's boat?", None),
        ("Who stole the Duke's jewels?", None),
    ],
)
def test_the_owner_and_relation_a_question_asks_about(question, asked):
    assert asked_relation(question) == asked


@pytest.mark.parametrize(
    ("owner", "relation", "sentence", "owns_another", "holds"),
    [
        (
            "Ambrose Kittow",
            "assistant",
            "His assistant from 1911 was Ambrose Kittow's grandson, Peter Kittow.",
            True,
            False,
        ),
        ("Ambrose Kittow", "assist", "His assistant was Ambrose Kittow's daughter, Jane.", True, False),
        ("Ambrose Kittow", "assistant", "Dunstan was Ambrose Kittow's assistant.", False, False),
        (
            "Ambrose Kittow",
            "assistant",
            "The answer is Ambrose Kittow, with Walter Dunstan as his assistant.",
            False,
            False,
        ),
        (  # past an appositive, a namesake put aside
            "Peter Kittow",
            "assistant",
            "His assistant from 1911 was Ambrose Kittow's grandson, Peter Kittow.",
            False,
            True,
        ),
        (
            "Walter Dunstan",
            "assistant",
            "His assistant for most of that time was Walter Dunstan.",
            False,
            True,
        ),
        (
            "Walter Dunstan",
            "assistant",
            "The new keeper was Walter Dunstan, Kittow's former assistant.",
            False,
            True,
        ),
    ],
)
def test_a_sentence_naming_the_owner_as_owner_of_another_or_as_the_holder(
    owner, relation, sentence, owns_another, holds
):
    assert _owns_another(owner, relation, sentence) is owns_another
    assert _holds_the_relation(owner, relation, sentence) is holds


@pytest.mark.parametrize("question", ["Who was George Vane's assistant?", "Who assisted George Vane?"])
def test_who_was_xs_role_does_not_lead_with_x_holding_that_role_to_another(embedder, question):
    assert "Clara Vane" in first_quote(embedder, leaves("printing_works.md"), question)


@pytest.mark.parametrize("question", ["Who was Edith Vane's assistant?", "Who assisted Edith Vane?"])
def test_who_was_xs_role_leads_with_xs_role_not_xs_niece_or_what_else_x_did(embedder, question):
    assert "Arthur Pell" in first_quote(embedder, leaves("printing_works.md"), question)


@pytest.mark.parametrize(
    "question",
    ["Where did the passengers shelter?", "Where did the passengers take refuge?", "Where did they wait?"],
)
def test_where_did_x_shelter_leads_with_where_they_were_taken_or_stayed(embedder, question):
    assert "school hall" in first_quote(embedder, leaves("ferry_storm.md"), question)
