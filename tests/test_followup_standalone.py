"""botqa24: a long 'what about …?' that names what it asks about in a clause or at length is a question of
its own (put in the last question's place it was garbled), and the context a follow-up carries from an
earlier question is plain words (a Markdown table's bars, fences, quotes and spoilers left out)."""

from __future__ import annotations

import pytest

from raptor_engine.engine import Engine
from raptor_engine.query.followup import plain_words, rewrite
from raptor_engine.types import Turn
from tests.test_smalltalk import ARCHIVE
from tests.unhurried import unhurried_settings


def _after(previous: str, question: str) -> str:
    return rewrite(question, [Turn("user", previous), Turn("assistant", "From the documents: “…” [1]")]).text


OIL = "What oil does the rotavator take and how often should I change it?"


@pytest.mark.parametrize(
    ("previous", "follow_up", "searched"),
    [
        (OIL, "what about the spark plug gap and the air filter cleaning schedule for the rotavator engine?",
         "What about the spark plug gap and the air filter cleaning schedule for the rotavator engine?"),
        (OIL, "and the spark plug gap and the air filter cleaning schedule?",
         "What about the spark plug gap and the air filter cleaning schedule?"),
        ("When did the railway close?", "what about the canal that was dug beside it in 1790?",
         "What about the canal that was dug beside it in 1790?"),
        ("What did Hester Marrow earn in 1887 at the north light?",
         "what about Elias Marrow who kept the south light after his brother left?",
         "What about Elias Marrow who kept the south light after his brother left?"),
        ("When did the Wren stop running?", "how about the varroa mites and chalkbrood that spread between colonies?",
         "How about the varroa mites and chalkbrood that spread between colonies?"),
    ],
)
def test_a_long_what_about_stands_alone(previous, follow_up, searched):
    assert _after(previous, follow_up) == searched


@pytest.mark.parametrize(
    ("previous", "follow_up", "searched"),
    [
        ("When did the railway close?", "what about the canal?", "When did the canal close?"),
        ("When did the Wren stop running?", "and the old north pier light?", "When did the old north pier light stop running?"),
        ("What did Hester Marrow earn?", "what about Elias?", "What did Elias earn?"),
    ],
)
def test_a_short_what_about_still_asks_the_last_question_again(previous, follow_up, searched):
    assert _after(previous, follow_up) == searched


@pytest.mark.parametrize(
    ("typed", "plain"),
    [
        ("| plot | holder |\n|---|---|\n| 4 | Joan |\nwho holds plot 4?", "plot holder 4 Joan who holds plot 4?"),
        ("| plot | holder | |:---|---:| | 4 | Joan | who holds plot 4?", "plot holder 4 Joan who holds plot 4?"),
        ("```\nwho chaired the meeting?\n```", "who chaired the meeting?"),
        ("```sql\nselect 1\n```", "select 1"),
        ("> who kept the light?", "who kept the light?"),
        ("||who chaired the meeting||?", "who chaired the meeting?"),
        ("**who** chaired _the_ meeting?", "who chaired the meeting?"),
        ("what does C# mean in the plot\\_map file?", "what does C# mean in the plot_map file?"),
    ],
)
def test_an_earlier_question_is_read_as_plain_words(typed, plain):
    assert plain_words(typed) == plain


@pytest.mark.parametrize(
    "first",
    [
        "| year | event |\n|---|---|\n| 1962 | appointed |\nWho was appointed keeper of the archive in 1962?",
        "> ||Who was appointed keeper of the archive in 1962?||",
        "```\nWho was appointed keeper of the archive in 1962?\n```",
    ],
)
async def test_a_follow_ups_context_from_a_marked_up_question_is_plain_words(tmp_path, embedder, first):
    """Before, 'and why?' after a question holding a table was searched 'Why? (context: | year | event |
    |---|---| …)'."""
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "archive.md", ARCHIVE.encode())
        asked = await engine.ask("kb", first)
        history = [Turn("user", first), Turn("assistant", asked.text)]
        follow_up = await engine.ask("kb", "and why did she leave?", history=history)
        assert not any(mark in follow_up.query for mark in ("|", "`", ">", "---")), follow_up.query
        assert "Margaret Hale left the archive in 1975" in follow_up.text, follow_up.text
    finally:
        engine.close()
