"""A long message with a pasted paragraph and a question is searched with what it asks (`searched_part`,
engine `_what_is_searched`): a paste about something near the question filled the context with its own
passages, and "When did the archive gain a reading room?" after a paragraph about the archive team's
review was answered "Nothing in the documents clearly answers this". A question that leans on the paste
("What does this mean?" after a quote from the documents) is still searched with the paste: it is the
subject. The budget is small so the context cannot hold every passage (a larger knowledge base's case)."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine.engine import Engine
from raptor_engine.query.asked import searched_part
from raptor_engine.types import Turn
from tests.bot.test_bot_answers import ARCHIVE
from tests.unhurried import unhurried_settings

REVIEW = """# Review of the archive team, 2023

## Staffing

The archive team was reviewed in the spring of 2023 by the county's heritage officer. The review found that
the team of four volunteers handled more enquiries each year than the paid staff of similar archives.
Volunteers worked two shifts a week and answered letters, emails and visitors at the desk.

## Training

Each new volunteer spent a month shadowing an experienced member of the team before working alone. The
review recommended a written handbook so that training no longer depended on who happened to be on shift.

## Recommendations

The heritage officer recommended that the council pay for a part-time coordinator, that the enquiry log be
kept on a computer rather than in a ledger, and that the team meet every quarter.
"""

# what a member pastes before asking: the review, in their words, over and over (about 1,500 characters)
PASTE = (
    "The archive team was reviewed by the county's heritage officer, who found that the four volunteers "
    "handled more enquiries each year than paid staff elsewhere, that training depended on who was on "
    "shift, and that the enquiry log was still kept in a ledger. "
) * 6
QUESTION = "When did the archive gain a reading room?"
GAINED = "the archive gained a reading room"
BUDGET = 150


@pytest.fixture(scope="module")
def archive(tmp_path_factory, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("pasted") / "data"), embedder=embedder)
    for name, text in {"archive.md": ARCHIVE, "review.md": REVIEW}.items():
        asyncio.run(engine.ingest("kb", name, text.encode()))
    try:
        yield engine
    finally:
        engine.close()


def ask(engine: Engine, question: str, history: list[Turn] | None = None):
    return asyncio.run(engine.ask("kb", question, budget=BUDGET, history=history))


def context_text(answer) -> str:
    return " ".join(" ".join(node.text.split()) for node in answer.context.nodes)


@pytest.mark.parametrize(
    "message",
    [
        f"{PASTE}{QUESTION}",  # the paste, then the question
        f"{QUESTION} {PASTE}",  # the question, then the paste
        f"Hi, a colleague sent me this: {PASTE} So, when did the archive gain a reading room? Thanks!",
        f"{PASTE}When did the archive gain a reading room? And who was keeper then?",  # two questions
    ],
)
def test_a_long_paste_does_not_crowd_out_what_is_asked(archive, message):
    answer = ask(archive, message)
    assert GAINED in context_text(answer)
    assert answer.answered and GAINED in answer.text, answer.text
    assert answer.question == " ".join(message.split())  # answered and logged as asked


def test_a_follow_ups_long_paste_is_searched_by_its_question(archive):
    history = [Turn("user", "Who was the first keeper of the archive?"), Turn("assistant", "Thomas Reid.")]
    answer = ask(archive, f"{PASTE}{QUESTION}", history)
    assert GAINED in context_text(answer), answer.query


@pytest.mark.parametrize(
    ("quote", "source"),
    [
        # a passage of the documents, pasted: it is what is asked about
        (" ".join(REVIEW.split("## Staffing")[1].split("## Recommendations")[0].replace("## Training", "").split()), "shadowing"),
        (" ".join(ARCHIVE.split("## The Hale years")[1].split("## Later keepers")[0].split()), "Margaret Hale"),
    ],
)
@pytest.mark.parametrize("asked", ["What does this mean?", "Is that right?", "Can you explain it?"])
def test_a_pasted_quote_then_what_does_this_mean_searches_the_quote(archive, quote, source, asked):
    assert len(quote) > 300
    answer = ask(archive, f'"{quote}" {asked}')
    assert source in context_text(answer)


@pytest.mark.parametrize(
    "message",
    [
        QUESTION,  # short: as it is
        f"{PASTE}What does this mean?",
        f"{PASTE}Is that right?",
        f"{PASTE}When did it happen?",
        f"{PASTE}Who are they?",
        PASTE,  # no question
        f"{PASTE}Tell me when the archive gained a reading room.",  # a request: no question sentence
    ],
)
def test_the_whole_message_is_searched_when_its_question_leans_on_the_paste(message):
    assert searched_part(message) == message


@pytest.mark.parametrize(
    ("message", "searched"),
    [
        (f"{PASTE}{QUESTION}", QUESTION),
        (f"{QUESTION} {PASTE}", QUESTION),
        (f"{PASTE}When was the room that holds the maps added?", "When was the room that holds the maps added?"),
        (f"{PASTE}Was that the year the reading room opened?", None),  # 'that' as a pronoun: leans
    ],
)
def test_what_a_long_message_is_searched_with(message, searched):
    assert searched_part(message) == (searched or message)
