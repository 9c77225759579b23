"""Whether the quotes answer a comparison follow-up (query/compared.py): 'was that more than in Q1?'
after 'How many plots were vacant in Q2?' quotes both quarters' figures and is answered, though no
passage says 'Q1' (the minutes' titles do); a comparison with a time no document has still says so."""

from __future__ import annotations

import pytest

from raptor_engine.query.answer import FOUND
from raptor_engine.query.compared import clauses, compared_times, figures_in, holds_figures_of
from raptor_engine.query.followup import quotes_in
from tests.test_followup_labels import TEXTS as LABELLED
from tests.test_followup_other_document import conversation  # asks of the knowledge base "harbour"
from tests.unhurried import engine_with

MINUTES_Q1 = """# Allotment minutes, Q1

Present: Joan Petrie (chair), nine members.

Six plots were vacant at the end of the quarter. The committee agreed to raise the rent to 40 pounds.
"""
MINUTES_Q2 = """# Allotment minutes, Q2

Present: Joan Petrie (chair), eleven members.

Four plots were vacant at the end of the quarter. The committee agreed to buy a new water pump.
"""
# the surveys and sales reviews of tests/test_followup_labels.py beside them: the titles alone say the time
TEXTS = {**LABELLED, "a_q1.md": MINUTES_Q1, "a_q2.md": MINUTES_Q2}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("compared"), embedder, TEXTS)
    try:
        yield engine
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("first", "then", "figures"),
    [
        ("How many plots were vacant in Q2?", "was that more than in Q1?", ("Six plots", "Four plots")),
        ("How many plots were vacant in Q2?", "is that fewer than in Q1?", ("Six plots", "Four plots")),
        ("How many plots were vacant in Q2?", "how does that compare with Q1?", ("Six plots", "Four plots")),
        ("How many moorings did the 2021 survey count?", "was that more than in 2019?", ("180", "230")),
        ("How many units of the garden range were sold in Q3?", "is that higher than in Q2?", ("3,200", "4,100")),
    ],
)
async def test_a_comparison_whose_quotes_hold_both_figures_is_answered(engine, first, then, figures):
    answer = await conversation(engine, [first, then])
    quoted = " ".join(quotes_in(answer.text))
    assert all(figure in quoted for figure in figures), answer.text
    assert answer.text.startswith(FOUND) and answer.answered, answer.text


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ("How many plots were vacant in Q2?", "was that more than in Q4?"),
        ("How many moorings did the 2021 survey count?", "was that more than in 2017?"),
        ("How many moorings did the 2021 survey count?", "how does that compare with 2015?"),
        ("How many units of the garden range were sold in Q3?", "was that more than in Q1?"),
    ],
)
async def test_a_comparison_with_a_time_no_document_has_says_so(engine, first, then):
    answer = await conversation(engine, [first, then])
    assert not answer.text.startswith(FOUND) and not answer.answered, answer.text


def test_the_times_compared_are_one_of_the_question_and_another_of_its_context():
    assert compared_times("How many plots were vacant in Q1?", "How many plots were vacant in Q2?") == ("Q1", "Q2")
    assert compared_times("How many moorings did the 2019 survey count?", "... the 2021 survey ...") == ("2019", "2021")
    assert compared_times("How long is the Wren?", "How long is the Alder?") is None  # things, not times
    assert compared_times("How many plots were vacant in Q1?", "") is None  # 'and Q1?' asks Q1's only
    assert compared_times("What was revenue in 2020 and 2021?", "What was revenue in 2019?") is None
    assert compared_times("Sales were 3,200 units?", "Sales in 2021?") is None  # a figure is no year


def test_both_figures_must_be_quoted_each_of_its_own_time():
    q1 = ("Six plots were vacant.", "a_q1.md Allotment minutes, Q1")
    q2 = ("Four plots were vacant.", "a_q2.md Allotment minutes, Q2")
    assert holds_figures_of(("Q1", "Q2"), [q1, q2])
    assert not holds_figures_of(("Q1", "Q2"), [q2])
    assert not holds_figures_of(("Q1", "Q2"), [("The committee met.", "a_q1.md"), q2])  # no figure
    assert not holds_figures_of(("2019", "2021"), [("Revenue in 2019 rose.", ""), ("In 2021 it fell.", "")])
    assert holds_figures_of(("2019", "2021"), [("Revenue was 3.6 million in 2019 and 4.2 million in 2021.", "")])
    assert holds_figures_of(("2019", "2021"), [("The survey counted 180 moorings.", "m2019.md"), ("It counted 230.", "m2021.md")])


def test_a_quote_from_a_summary_of_both_documents_counts_for_one_time_only():
    both = "m2019.md m2021.md"
    assert holds_figures_of(("2019", "2021"), [("It counted 180 moorings.", "m2019.md"), ("It counted 230.", both)])
    assert not holds_figures_of(("2019", "2021"), [("It counted 230 moorings.", both)])
    assert not holds_figures_of(("Q1", "Q2"), [("Four plots were vacant.", "a_q2.md"), ("Six plots were vacant.", "a_q2.md")])


def test_a_sentence_is_cut_into_its_clauses_each_with_its_own_figures():
    """`clauses` and `figures_in` are what the choice between two times and the yes/no verdict both read."""
    parts = clauses("Revenue in 2021 was 4.2 million pounds, against 3.6 million pounds in 2020; costs rose.")
    assert parts == ["Revenue in 2021 was 4.2 million pounds", ", ", "against 3.6 million pounds in 2020", "; costs rose."]
    assert [[(f.value, f.unit) for f in figures_in(part)] for part in parts] == [
        [(4.2e6, "pound")], [], [(3.6e6, "pound")], []
    ]  # fmt: skip
    assert clauses("") == [] and clauses(" ") == []
