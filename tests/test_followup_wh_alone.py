"""qa23: a wh-word alone after a question of another shape ('when?' after 'What pays for the timber?')
put the new wh-word in front of the old one's words: 'When pays for the timber?', 'Who is the next
meeting?', 'When was elected treasurer?', 'When members attended?'. Now the new wh-word takes the old
one's place only where the question still asks something (an aux follows the old wh-word, and 'who?' asks
for a thing's object or its doer: 'What did she see?' -> 'Who did she see?', 'What pays ...?' -> 'Who pays ...?',
not 'Who happened ...?'); otherwise the follow-up is asked as typed with the last question as context."""

from __future__ import annotations

import pytest

from raptor_engine.query.followup import standalone_question
from tests.conversations import asked_turns


def _asked(asked: str, follow_up: str) -> str:
    return standalone_question(follow_up, asked_turns(asked, quote="Three wins."))


@pytest.mark.parametrize(
    ("asked", "follow_up"),
    [
        ("What pays for the timber?", "when?"),
        ("What pays for the timber?", "where?"),
        ("Which trip costs 165 pounds?", "when?"),
        ("Which fund paid for the roof?", "who?"),
        ("Who was elected treasurer?", "when?"),
        ("What was done about the lights?", "where?"),
        ("When is the next meeting?", "who?"),
        ("Where did she go?", "who?"),
        ("How many members attended?", "who?"),
        ("How many members attended?", "when?"),
        ("What happened in March?", "who?"),
        ("Who is the chair?", "how much?"),
        ("What was taken from the shed?", "when?"),
    ],
)
def test_a_wh_word_that_cannot_take_the_old_ones_place_is_asked_with_context(asked, follow_up):
    standalone = _asked(asked, follow_up)
    assert standalone == f"{follow_up.capitalize()} (context: {asked})"


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        ("When is the next meeting?", "where?", "Where is the next meeting?"),
        ("What was the premium?", "how much?", "How much was the premium?"),
        ("What did she see?", "who?", "Who did she see?"),
        ("What did the council propose?", "who?", "Who did the council propose?"),
        ("What pays for the timber?", "who?", "Who pays for the timber?"),
        ("Did Nadia Okafor marry?", "who?", "Who did Nadia Okafor marry?"),
        ("Is flood damage covered?", "when?", "When is flood damage covered?"),

        ("How many goals did Wilk score?", "when?", "When did Wilk score?"),
        ("What year did Hester leave?", "where?", "Where did Hester leave?"),
        ("How much did Greyfriars pay for the burst pipe?", "and when?", "When did Greyfriars pay for the burst pipe?"),
        ("Who founded Marrow's Bakery?", "when?", "When was Marrow's Bakery founded?"),
        ("Who chaired the meeting?", "where?", "Where was the meeting chaired?"),
        ("When was the catalogue computerised?", "who?", "Who computerised the catalogue?"),
        ("Where was Hester born?", "when?", "When was Hester born?"),
    ],
)
def test_a_wh_word_takes_the_old_ones_place_where_the_question_still_asks(asked, follow_up, standalone):
    assert _asked(asked, follow_up) == standalone
