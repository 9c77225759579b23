"""qa23: 'and Ellery?' after 'How many goals did Wilk score?' was searched as 'Ellery? (context: ...)' (quoting
the captain's sentence first), while 'what about Ellery?' asked 'How many goals did Ellery score?'. Now
'and NAME?' reads as 'what about NAME?' when the last question asked about one person by name; after a
question about no named person (a label, a thing) it stays as typed."""

from __future__ import annotations

import pytest

from raptor_engine.query.followup import standalone_question
from tests.conversations import asked_turns


def _asked(asked: str, follow_up: str) -> str:
    return standalone_question(follow_up, asked_turns(asked, quote="Three wins."))


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        ("How many goals did Wilk score?", "and Ellery?", "How many goals did Ellery score?"),
        ("What did Hester earn?", "and Elias?", "What did Elias earn?"),
        ("Where did Hester go in 1887?", "and Elias?", "Where did Elias go in 1887?"),
        ("What did Colin Ashworth report?", "and Joan Pryce?", "What did Joan Pryce report?"),
        ("What did Colin Ashworth report?", "or what of Joan Pryce?", "What did Joan Pryce report?"),
    ],
)
def test_and_a_name_asks_the_last_question_of_that_person(asked, follow_up, standalone):
    assert _asked(asked, follow_up) == standalone


@pytest.mark.parametrize(
    ("asked", "follow_up"),
    [
        ("Who chaired the Q2 meeting?", "and Ellery?"),  # no 'Who chaired Ellery?'
        ("Who teaches Year 5?", "and Priya Nair?"),  # 'Year 5' is a label, not a person
        ("Who chaired the Harbour Committee?", "and Ellery?"),  # a thing's name
        ("How many goals did Wilk score?", "and Wilk?"),
        ("What did Hester earn?", "and Elias Penrose's wife?"),
    ],
)
def test_and_a_name_after_no_named_person_stays_as_typed(asked, follow_up):
    assert _asked(asked, follow_up).startswith(follow_up[4:].strip().capitalize()[:1])
    assert "(context: " in _asked(asked, follow_up)
