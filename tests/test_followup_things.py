"""'it'/'its' (and 'they' for a plural thing) in a follow-up: the one thing the previous question asked
about, or left to the carried context when that is unsure."""

from __future__ import annotations

import pytest

from raptor_engine.query.followup import standalone_question
from raptor_engine.types import Turn
from tests.conversations import asked_turns


def _talk(*questions: str) -> list[Turn]:
    return asked_turns(*questions, quote="In 1903.")


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        ("Who built the railway?", "when did it close?", "When did the railway close?"),
        ("How is the Kestrel lens cleaned?", "what is it made of?", "What is the Kestrel lens made of?"),
        (
            "When was the harbour crane built?",
            "how much could it lift?",
            "How much could the harbour crane lift?",
        ),
        ("What does a queen excluder do?", "where does it sit?", "Where does a queen excluder sit?"),
        (
            "What happened to the Margaret Ellen?",
            "where was it going?",
            "Where was the Margaret Ellen going?",
        ),
        ("When was the viaduct finished?", "what was its cost?", "What was the viaduct's cost?"),
        ("When was the light first lit?", "how far could it be seen?", "How far could the light be seen?"),
        ("How many arches does the viaduct have?", "how long is it?", "How long is the viaduct?"),
        ("Is the railway still running?", "who owns it?", "Who owns the railway?"),
        ("Who restored the locomotive?", "what is it called?", "What is the locomotive called?"),
        # an irregular past form ends the thing's words as '-ed' does, not 'the lamp lit'
        ("When is the lamp lit?", "and when is it put out?", "When is the lamp put out?"),
        ("How often is the gallery swept?", "who cleans it?", "Who cleans the gallery?"),
        # a number after the article is part of the thing's name (botqa16: it ended the phrase)
        ("When did the 1887 bridge open?", "what did it cost?", "What did the 1887 bridge cost?"),
        ("When did the 1887 bridge open?", "who built it?", "Who built the 1887 bridge?"),
    ],
)
def test_it_is_the_one_thing_the_last_question_asked_about(asked, follow_up, standalone):
    assert standalone_question(follow_up, _talk(asked)) == standalone


def test_it_chains_across_turns():
    talk = _talk("Who built the railway?", "when did it close?")
    assert standalone_question("what did it carry?", talk) == "What did the railway carry?"


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        ("How do the bees make honey?", "where do they store it?", "Where do the bees store it?"),
        ("When do the bees swarm?", "where do they go?", "Where do the bees go?"),
        ("How do the bees make honey?", "what is their queen called?", "What is the bees' queen called?"),
    ],
)
def test_they_is_a_plural_thing_the_last_question_asked_about(asked, follow_up, standalone):
    assert standalone_question(follow_up, _talk(asked)).startswith(standalone)


@pytest.mark.parametrize(
    ("asked", "follow_up"),
    [
        # two or more things named
        ("When did the railway reach the coast?", "what did it carry?"),
        ("When did the railway reach Kelby?", "what did it carry?"),
        ("What was the railway's cargo?", "where did it go?"),
        # a person is the subject
        ("Who was the first keeper?", "when did it close?"),
        ("When did the engineer leave?", "was it finished?"),
        ("Who surveyed the railway for Ada Pennick?", "when did it open?"),
        # 'it' may be the answer itself
        ("What did the keeper find?", "what was it?"),
        ("What replaced the paraffin burner?", "when was it installed?"),
        # 'they' after a who-question are the people it asked for
        ("Who kept the bees?", "what did they sell?"),
        # a singular thing is no 'they', a plural one no 'it'
        ("Who bought the line?", "what did they restore?"),
        ("How do the bees make honey?", "when does it swarm?"),
        # the last question's own 'it' was left unresolved
        ("What did it cost?", "when was it finished?"),
        # a request about the last answer
        ("When was the viaduct finished?", "summarise it"),
    ],
)
def test_it_is_left_to_the_context_when_the_thing_is_unsure(asked, follow_up):
    rewrite = standalone_question(follow_up, _talk(asked))
    assert rewrite == f"{follow_up[:1].upper()}{follow_up[1:]} (context: {asked})"


@pytest.mark.parametrize(
    "follow_up",
    [
        "is it true that the line flooded?",
        "how long did it take to build?",
        "what made it possible?",
        "was it raining when it opened?",
        "why is it that the line closed?",
        "what was it like to ride?",
    ],
)
def test_a_dummy_it_is_left_as_asked(follow_up):
    rewrite = standalone_question(follow_up, _talk("When was the railway built?"))
    assert rewrite == f"{follow_up[:1].upper()}{follow_up[1:]} (context: When was the railway built?)"


def test_a_thing_put_in_for_it_leaves_the_question_standalone_but_other_implied_words_keep_the_context():
    assert standalone_question("is it open?", _talk("When was the archive built?")) == "Is the archive open?"
    unsure_when = [
        Turn("user", "When was the light automated?"),
        Turn("assistant", "\u201cLights were automated.\u201d"),
    ]
    kept = standalone_question("who kept it then?", unsure_when)
    assert kept == "Who kept the light then? (context: When was the light automated?)"


def test_its_is_not_it_is():
    rewrite = standalone_question("it's old, isn't it?", _talk("When was the tower built?"))
    assert rewrite.startswith("It's old")
