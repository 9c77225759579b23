"""qa25: 'it' after 'How much will the new lift cost?' was 'the new' ('When will the new be installed?'):
'lift' is a verb too, and a thing's words ended at the first word that can be one. A word that can be a
verb, right before the question's verb, is the thing's noun; an adverb never is ('the light last lit')."""

from __future__ import annotations

import pytest

from raptor_engine.query.followup import standalone_question
from raptor_engine.types import Turn

ANSWER = "From the documents:\n- \u201cThe committee heard the news at its meeting.\u201d [1]"


@pytest.mark.parametrize(
    ("first", "follow_up", "standalone"),
    [
        (
            "How much will the new lift cost?",
            "when will it be installed?",
            "When will the new lift be installed?",
        ),
        ("Was the new lift ordered?", "how much did it cost?", "How much did the new lift cost?"),
        ("How much will the new lift cost?", "who will fit it?", "Who will fit the new lift?"),
        ("When did the village store close?", "why did it close?", "Why did the village store close?"),
        ("How long did the garden shed last?", "who built it?", "Who built the garden shed?"),
        # guards: an adverb or a lone verb still ends the thing
        ("When was the light last lit?", "who lit it?", "Who lit the light?"),
        ("Is the railway still running?", "when did it open?", "When did the railway open?"),
        ("When did the railway close?", "why did it close?", "Why did the railway close?"),
        ("When was the village store opened?", "who opened it?", "Who opened the village store?"),
        (
            "When did the Wren stop running?",
            "and the old north pier light?",
            "When did the old north pier light stop running?",
        ),
    ],
)
def test_a_word_that_can_be_a_verb_before_the_verb_is_the_things_noun(first, follow_up, standalone):
    history = [Turn("user", first), Turn("assistant", ANSWER)]
    assert standalone_question(follow_up, history) == standalone


FINANCE = (
    "From the documents:\n- \u201cExpenses: Gareth Lowe (finance officer)\u201d [1]\n"
    "- \u201cAlso present: Mark Fenton, housing officer from Calder Homes, for item 3.\u201d [2]\n"
    "- \u201cAll claims are approved by the finance officer, Gareth Lowe.\u201d [3]"
)


@pytest.mark.parametrize("first", ["What about the finance officer?", "Who is the finance officer?"])
def test_he_is_whom_the_first_quote_names_though_a_later_ones_name_is_a_known_he(first):
    """'how much can he approve?' was asked of Mark Fenton, named in passing by the second quote, because
    'Mark' is on the list of men's names and 'Gareth' is not; the first quote names the one asked about."""
    history = [Turn("user", first), Turn("assistant", FINANCE)]
    assert standalone_question("how much can he approve?", history).startswith(
        "How much can Gareth Lowe approve?"
    )


def test_a_known_he_in_the_first_quote_still_comes_first():
    answer = "From the documents:\n- \u201cHelen Pryor and her son Jacob ran the office.\u201d [1]"
    history = [Turn("user", "Who ran the office?"), Turn("assistant", answer)]
    assert standalone_question("when did he start?", history).startswith("When did Jacob")
