"""Lists and numbered clauses written without full stops: each item that says something is a quotable
statement of its own, not a heading, and never runs into the next item."""

from __future__ import annotations

import numpy as np
import pytest

from raptor_engine.ingest.sentences import is_heading
from raptor_engine.query.answer import QUOTE, ExtractiveAnswerer, _candidates
from raptor_engine.tree.summarize import ExtractiveSummarizer
from raptor_engine.types import ContextNode, SummaryRequest

TRIP = (
    "Things to check\n\n"
    "- the ferry leaves at 7 from pier 3\n"
    "- the return ferry is at 16:30\n"
    "- the warden's phone number is 01234 567890\n"
)
LEASE = "4. Pets\n4.1 No pets may be kept without the Landlord's written consent\n4.2 Fish in a tank are allowed\n"


def _node(text: str, node_id: int = 1) -> ContextNode:
    return ContextNode(node_id, 0, "notes.txt", 0.5, text, 40, 1, start=0, end=len(text))


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("- Punctures", True),
        ("- Common repairs", True),
        ("2. Rent", True),
        ("1.1 Parties", True),
        ("- the return ferry is at 16:30", False),
        ("4.1 No pets may be kept without the Landlord's written consent", False),
        ("* two torches and spare batteries", False),
        ("Kestrel Point Lighthouse Manual", True),  # a title line, not a list item: unchanged
    ],
)
def test_a_list_item_or_clause_of_more_than_a_few_words_is_no_heading(line, heading):
    assert is_heading(line) is heading


def test_each_unpunctuated_item_is_its_own_quote(embedder):
    """'When does the return ferry leave?' found nothing: every item was taken for a heading."""
    context = [_node(TRIP), _node(LEASE, 2)]
    texts = [c.text for c in _candidates(context)]
    assert "the return ferry is at 16:30" in texts
    assert "4.1 No pets may be kept without the Landlord's written consent" in texts
    assert "Things to check" not in texts and "4. Pets" not in texts
    quotes = QUOTE.findall(ExtractiveAnswerer(embedder)._answer_sync("When is the return ferry?", context, []).text)
    assert "the return ferry is at 16:30" in quotes  # alone: the next item is not glued on


def test_an_extractive_summary_keeps_each_list_item_on_its_own_line():
    summarizer = ExtractiveSummarizer(lambda text: len(text.split()))
    summary = summarizer.summarize(SummaryRequest(texts=[TRIP], embeddings=np.ones((1, 4)), max_tokens=200))
    assert "- the ferry leaves at 7 from pier 3\n- the return ferry is at 16:30" in summary.text
