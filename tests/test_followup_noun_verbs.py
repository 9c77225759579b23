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
    ],
)
def test_a_word_that_can_be_a_verb_before_the_verb_is_the_things_noun(first, follow_up, standalone):
    history = [Turn("user", first), Turn("assistant", ANSWER)]
    assert standalone_question(follow_up, history) == standalone
