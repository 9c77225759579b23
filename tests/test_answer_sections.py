"""A sentence is about what the heading of its section names, though its leaf spans sections and so carries
only their common heading path (real embedder, hand-made context)."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine.engine import Engine
from raptor_engine.ingest.sentences import stem
from raptor_engine.query.answer import (
    QUOTE,
    ExtractiveAnswerer,
    _candidates,
    _dated_by_its_heading,
    _lexical,
    _section_terms,
)
from raptor_engine.query.followup import split_standalone
from raptor_engine.types import ContextNode
from tests.unhurried import unhurried_settings

TITLE = "The Tide Mill at Orrin Creek"
# One leaf holding the end of one section and the whole of the next, as the chunker packs short sections:
# its heading path is the document's title alone, the section headings stay in its text.
SPANNING = (
    "The miller then let the stored water out through a sluice, and it turned an undershot wheel of oak. "
    "A good tide gave about four hours of grinding.\n\n"
    "## The fire of 1861\n\n"
    "In March 1861 a spark from the drying kiln set the roof alight. "
    "The fire destroyed the upper floors and two pairs of millstones."
)


def leaf(i: int, text: str, heading: tuple[str, ...], start: int = 0) -> ContextNode:
    return ContextNode(i, 0, "mill.md", 0.5, text, 60, 1, heading=heading, start=start, end=start + len(text))


def test_a_sentence_reads_the_heading_line_above_it_in_its_leaf_and_not_the_one_below():
    found = {c.text.split()[0] + c.text.split()[1]: c for c in _candidates([leaf(1, SPANNING, (TITLE,))])}
    assert stem("fire") in found["InMarch"].section
    assert not found["Agood"].section  # it stands before the heading
    assert found["Thefire"].section == {"1861"}  # it names the fire itself: only the year is added


def test_a_leaf_that_starts_inside_a_section_reads_its_own_heading_path_but_not_the_title_or_a_summary():
    assert stem("decline") in _section_terms(leaf(1, "Steam mills undercut it.", (TITLE, "Decline of the mill")))
    assert not _section_terms(leaf(1, "Steam mills undercut it.", (TITLE,)))
    summary = ContextNode(9, 1, "mill.md", 0.5, "Steam mills undercut it.", 10, 2, heading=(TITLE, "Decline"))
    assert not _section_terms(summary)


def test_the_section_heading_counts_as_the_sentences_own_words(embedder):
    candidates = _candidates([leaf(1, SPANNING, (TITLE,))])
    ExtractiveAnswerer(embedder)._similarities(split_standalone("What year was the fire?"), candidates, set())
    dated = next(c for c in candidates if c.text.startswith("In March 1861"))
    assert dated.lexical == 0.0  # it never says "fire"
    assert _lexical("What year was the fire?", dated) == dated.sectioned > 0.0


MILL = """# The Tide Mill at Orrin Creek

The tide mill at Orrin Creek was built in 1794 by the miller Josiah Fenwick. It ground wheat and barley for the farms of the lower valley for more than a century.

## How the mill worked

At high tide, seawater flowed into a pond behind the mill through a pair of gates. When the tide turned, the gates closed under the weight of the water. The miller then let the stored water out through a sluice, and it turned an undershot wheel of oak. A good tide gave about four hours of grinding.

## The fire of 1861

In March 1861 a spark from the drying kiln set the roof alight. The fire destroyed the upper floors and two pairs of millstones. Fenwick's grandson, Amos Fenwick, rebuilt the mill the following year with a slate roof, because the parish insurers refused to cover thatch again.

## Decline

Steam mills in the town undercut the tide mill's prices after 1880. The last commercial grinding took place in 1907, when Amos Fenwick retired. The pond silted up within twenty years.

## Restoration

A trust formed by local volunteers bought the mill in 1976 for 4,000 pounds. Restoration took eleven years and cost about 180,000 pounds, most of it raised by public appeal. The wheel turned again in May 1987. Today the mill grinds flour on summer weekends, and visitors can buy it in the shop.
"""


@pytest.mark.parametrize("question", ["What year was the fire?", "When did the fire happen?", "In which year was the fire?"])
def test_the_year_a_heading_gives_the_asked_event_dates_the_sentence_that_states_it(question):
    """'In March 1861 ...' under '## The fire of 1861' is the dated sentence of the fire; 'The fire destroyed
    ...' names the fire but no year, and a sentence of another section's year is not the fire's."""
    later = "\n\n## Decline\n\nThe last commercial grinding took place in 1907, when Amos Fenwick retired."
    found = {c.text.split()[1]: c for c in _candidates([leaf(1, SPANNING + later, (TITLE,))])}
    assert _dated_by_its_heading(question, found["March"])
    assert not _dated_by_its_heading(question, found["fire"])  # no year of its own
    assert not _dated_by_its_heading(question, found["last"])  # 1907, under a heading of no fire
    assert not _dated_by_its_heading(question, found["good"])  # before the heading: no section
    assert not _dated_by_its_heading("What did the fire destroy?", found["March"])  # asks no time
    assert not _dated_by_its_heading("What year was the flood?", found["March"])  # another event


def test_a_dated_sentence_under_the_events_heading_answers_what_year_it_happened(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        asyncio.run(engine.ingest("mill", "mill.md", MILL.encode()))
        answer = asyncio.run(engine.ask("mill", "What year was the fire?"))
    finally:
        engine.close()
    assert QUOTE.findall(answer.text)[0].startswith("In March 1861")
