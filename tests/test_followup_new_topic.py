"""qa21: 'and what about the budget?' after 'How many members attended the Q2 meeting?' was searched as
'How many members attended the budget meeting?': a new thing named by a common noun was spliced into the
last question as a modifier of its thing. A thing of another kind than the last question's one (another
head noun than a labelled 'the Q2 meeting', a bare label 'in Q2', a person for a thing) replaces none of
its words: it is asked as typed, the last question as context. A name with a number ('Q2') is never
replaced by a person's name ('what about Joan?'). What worked stays: 'what about the Alder?' after 'the
Wren', 'what about the 2019 survey?' after 'the 2021 survey', 'what about Elias?' after 'Hester'."""

from __future__ import annotations

import pytest

from raptor_engine.query.followup import Turn, standalone_question
from tests.conversations import asked_turns
from tests.test_compared_grounding import TEXTS
from tests.test_followup_other_document import conversation
from tests.unhurried import engine_with


def _talk(*questions: str) -> list[Turn]:
    return asked_turns(*questions, quote="Eleven members.")


MEMBERS = "How many members attended the Q2 meeting?"


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        (MEMBERS, "and what about the budget?", f"What about the budget? (context: {MEMBERS})"),
        (MEMBERS, "and the budget?", f"What about the budget? (context: {MEMBERS})"),
        (MEMBERS, "what about the treasurer?", f"What about the treasurer? (context: {MEMBERS})"),
        (MEMBERS, "how about the minutes from March?", f"How about the minutes from March? (context: {MEMBERS})"),
        (MEMBERS, "what about the water pump?", f"What about the water pump? (context: {MEMBERS})"),
        ("Who chaired the Q2 meeting?", "and the budget?", "What about the budget? (context: Who chaired the Q2 meeting?)"),
        ("How many plots were vacant in Q2?", "what about the rent?",
         "What about the rent? (context: How many plots were vacant in Q2?)"),
        ("How many moorings did the 2021 survey count?", "and the waiting list?",
         "What about the waiting list? (context: How many moorings did the 2021 survey count?)"),
        ("When did the railway close?", "what about the engineer?", "What about the engineer? (context: When did the railway close?)"),
    ],
)
def test_a_thing_of_another_kind_is_asked_as_typed_with_the_last_question_as_context(asked, follow_up, standalone):
    assert standalone_question(follow_up, _talk(asked)) == standalone


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        ("When did the Wren stop running?", "what about the Alder?", "When did the Alder stop running?"),
        ("When did the Wren stop running?", "and the Alder?", "When did the Alder stop running?"),
        ("When did the railway close?", "what about the canal?", "When did the canal close?"),
        ("What did the 2021 survey recommend?", "what about the 2019 survey?", "What did the 2019 survey recommend?"),
        (MEMBERS, "what about the budget meeting?", "How many members attended the budget meeting?"),
        ("What did the Q2 review say about garden sales?", "what about the Q3 review?",
         "What did the Q3 review say about garden sales?"),
        ("What did Hester earn?", "what about Elias?", "What did Elias earn?"),
        ("What did Hester Marrow earn?", "and the last keeper?", "What about the last keeper?"),
        ("Who chaired the Q2 meeting?", "what about Joan?", "What about Joan?"),
    ],
)
def test_a_thing_of_the_same_kind_still_takes_its_place(asked, follow_up, standalone):
    assert standalone_question(follow_up, _talk(asked)) == standalone


def test_a_meeting_is_a_thing_its_pronoun_names_whole():
    """'the Q2 meeting' was read as 'the Q2' ('meeting' taken for a verb), so 'it' lost its noun."""
    assert standalone_question("when was it held?", _talk("Who chaired the Q2 meeting?")) == "When was the Q2 meeting held?"


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("new_topic"), embedder, TEXTS)
    try:
        yield engine
    finally:
        engine.close()


async def test_the_water_pump_after_the_meeting_is_answered_from_the_minutes(engine):
    answer = await conversation(engine, [MEMBERS, "what about the water pump?"])
    assert answer.query == f"What about the water pump? (context: {MEMBERS})"
    assert {citation.document for citation in answer.citations} == {"a_q2.md"}, answer.text


async def test_the_north_pier_after_a_survey_is_answered_from_the_survey_that_names_it(engine):
    answer = await conversation(engine, ["How many moorings did the 2021 survey count?", "what about the north pier?"])
    assert "north pier" in answer.text.split("\n")[1], answer.text
