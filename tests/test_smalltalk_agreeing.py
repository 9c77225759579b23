"""botqa24: a message that only acknowledges or agrees ("yes that's right, thanks Bob", "that's what I
thought", "fair enough") searches nothing and is no follow-up's context; a question opening with "ok",
"yes" or "thanks" is still a question."""

from __future__ import annotations

import pytest

from raptor_engine.engine import Engine
from raptor_engine.query.smalltalk import REPLIES, Act, small_talk_act, strip_small_talk
from raptor_engine.types import Turn
from tests.test_smalltalk import ARCHIVE
from tests.unhurried import unhurried_settings

ACKNOWLEDGEMENTS = [
    ("yes that's right, thanks Bob", Act.THANK),
    ("ok got it", Act.ACKNOWLEDGE),
    ("perfect, cheers", Act.THANK),
    ("that's what I thought", Act.ACKNOWLEDGE),
    ("makes sense \U0001f44d", Act.ACKNOWLEDGE),
    ("thanks Bob", Act.THANK),
    ("cheers Alice Smith!", Act.THANK),
    ("brilliant, thanks a lot Alice", Act.THANK),
    ("thanks @amy", Act.THANK),
    ("yes that\u2019s correct", Act.ACKNOWLEDGE),
    ("sounds good", Act.ACKNOWLEDGE),
    ("fair enough", Act.ACKNOWLEDGE),
    ("right, that makes sense now", Act.ACKNOWLEDGE),
    ("thanks, that's exactly what I needed", Act.THANK),
    ("ah right, thanks", Act.THANK),
    ("you're right", Act.ACKNOWLEDGE),
    ("I thought so", Act.ACKNOWLEDGE),
    ("ok then, that answers it", Act.ACKNOWLEDGE),
    ("spot on, thank you", Act.THANK),
    ("all good", Act.ACKNOWLEDGE),
    ("that clears it up, cheers mate", Act.THANK),
    ("yep, that's true", Act.ACKNOWLEDGE),
    ("ok will do, bye Bob", Act.FAREWELL),
    ("hi Joan", Act.GREET),
]

LOOK_ALIKE_QUESTIONS = [
    "ok, and who paid?",
    "thanks \u2014 when was it built?",
    "yes, but who paid for it?",
    "thanks Bob?",  # a name with a question mark: asked, not said
    "that's right, but when did she leave?",
    "sounds good, what about the fund?",
    "fair enough, why did she leave?",
    "ok got it, and the treasurer?",
    "perfect \u2014 and the date?",
    "thanks Bob, what oil does the rotavator take?",
    "is that right?",
    "that's right?",
    "is that correct?",
    "was that what you thought?",
    "Great Storm",  # after an acknowledgement a capital is a name to look for
    "thanks Margaret Hale Orr",  # three names: more than whom thanks are said to
    "who thought so?",
    "what sounds good?",
    "who was right?",
    "correct the date of the fire",
    "what works?",
    "thanks, who replaced her?",
    "yes and when did she leave",
]


@pytest.mark.parametrize(("message", "act"), ACKNOWLEDGEMENTS)
def test_messages_that_only_acknowledge_or_agree_are_small_talk(message, act):
    assert small_talk_act(message) is act


@pytest.mark.parametrize("message", LOOK_ALIKE_QUESTIONS)
def test_questions_that_open_like_an_acknowledgement_are_questions(message):
    assert small_talk_act(message) is None


def test_an_acknowledgement_by_name_is_taken_off_the_question_after_it():
    assert strip_small_talk("yes that's right, thanks Bob \u2014 when did she leave?") == "when did she leave?"


@pytest.mark.parametrize("message", ["yes that's right, thanks Bob", "that's what I thought", "fair enough"])
async def test_an_acknowledgement_searches_nothing_and_the_next_follow_up_leans_on_the_question(
    tmp_path, embedder, message
):
    """Before, "yes that's right, thanks Bob" was searched ("The documents say nothing about this") and
    "that's what I thought" as "That's what I thought (context: Who was appointed …)"."""
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "archive.md", ARCHIVE.encode())
        first = await engine.ask("kb", "Who was appointed keeper of the archive in 1962?")
        history = [Turn("user", first.question), Turn("assistant", first.text)]
        said = await engine.ask("kb", message, history=history)
        assert said.text in REPLIES.values() and not said.has_context and not said.citations, said.text
        history += [Turn("user", said.question), Turn("assistant", said.text)]
        follow_up = await engine.ask("kb", "ok, and when did she leave?", history=history)
        assert follow_up.query.startswith("When did Margaret Hale leave?"), follow_up.query
        assert "Margaret Hale left the archive in 1975" in follow_up.text
    finally:
        engine.close()
