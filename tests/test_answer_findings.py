"""qa27: 'What caused the capsize?' led with the capsize's date, the inquiry's 'held that the boat had been
overloaded' second. A finding (an inquiry, report, court or engineer that 'held / found / concluded / ruled
that X', 'it was found that X', X 'was put down to / attributed to / blamed on' Y) is a stated cause: for a
why or cause question it leads when it is on the asked event, told a sentence or two before it."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine.query.answer import OPENS_WITH_A_FINDING, _states_the_asked_reason
from raptor_engine.query.followup import quotes_in
from tests.test_answer_lists import engine  # noqa: F401 (the fixture: station.md, light.txt, pier.md)


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        ("What caused the capsize?", "An inquiry held that the boat had been overloaded with rescued men."),
        (
            "Why did the pier collapse?",
            "The borough engineer concluded that the iron piles had rusted through.",
        ),
        ("Why did the roof fall in?", "The coroner's inquest found that the beams were rotten."),
        ("What caused the flood?", "It was found that a culvert had been blocked."),
        ("Why did the ship sink?", "The court ruled that the master had ignored the warnings."),
        ("What caused the fire?", "The blaze was put down to a cigarette dropped between the boards."),
        ("What caused the fire?", "The fire was attributed to a faulty flue."),
    ],
)
def test_a_finding_is_a_stated_cause(question, sentence):
    assert _states_the_asked_reason(question, sentence)


@pytest.mark.parametrize(
    ("sentence", "opens"),
    [
        ("An inquiry held that the boat had been overloaded.", True),
        ("The borough engineer concluded that the piles had rusted.", True),
        ("It was found that a culvert had been blocked.", True),
        (
            "She found that the door was locked.",
            False,
        ),  # a person finding something is no finding on an event
        ("The report was published in May.", False),
    ],
)
def test_a_sentence_opening_with_a_finding(sentence, opens):
    assert (OPENS_WITH_A_FINDING.search(sentence) is not None) is opens


@pytest.mark.parametrize(
    ("question", "cause"),
    [
        ("What caused the capsize?", "An inquiry held that the boat had been overloaded"),
        ("What was the cause of the capsize?", "An inquiry held that the boat had been overloaded"),
        ("Why did the Grace Pellow capsize?", "An inquiry held that the boat had been overloaded"),
        ("What caused the collapse of the pier?", "The borough engineer concluded that the iron piles"),
        ("Why did the pier collapse?", "The borough engineer concluded that the iron piles"),
        ("What caused the pavilion fire?", "The blaze was put down to a cigarette"),
        ("Why was the pier closed?", "Its closure was blamed on the cost of repairs"),
    ],
)
def test_a_finding_on_the_asked_event_leads(engine, question, cause):  # noqa: F811
    answer = asyncio.run(engine.ask("harbour", question))
    assert answer.answered, answer.text
    assert cause in quotes_in(answer.text)[0], answer.text


async def test_a_finding_on_another_event_does_not_lead(engine):  # noqa: F811
    answer = await engine.ask("harbour", "When did the pier collapse?")
    assert "1954" in quotes_in(answer.text)[0], answer.text
