"""qa20: 'was that more than the year before?', 'and the previous quarter?', 'is that lower than the
following quarter?' count from the year or quarter of the figure the last answer quoted when the last
question named none ('How many units were sold after the dry summer?' quoted the Q3 review): the last
question is asked of that time and compared, as 'was that more than in Q2?' is. 'The following year',
'next', 'prior', 'preceding', 'the year after' are read as well as 'the year before'. A time no document
has still says so."""

from __future__ import annotations

import pytest

from raptor_engine.query.answer import FOUND
from raptor_engine.query.followup import _A_TIME, _at_another_time, quotes_in
from tests.test_compared_grounding import TEXTS
from tests.test_followup_other_document import conversation  # asks of the knowledge base "harbour"
from tests.unhurried import engine_with

REVENUE = """# Annual report 2021

Revenue in 2021 was 4.2 million pounds, against 3.6 million pounds in 2020.
Operating costs in 2021 were 3.1 million pounds.
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("relative"), embedder, {**TEXTS, "annual.md": REVENUE})
    try:
        yield engine
    finally:
        engine.close()


DRY = "How many units of the garden range were sold after the dry summer?"  # the Q3 review
SPRING = "How many units of the garden range were sold after the spring launch?"  # the Q2 review


@pytest.mark.parametrize(
    ("first", "then", "searched", "figures"),
    [
        (DRY, "was that more than the previous quarter?", "Q2", ("3,200", "4,100")),
        (DRY, "is that higher than last quarter?", "Q2", ("3,200", "4,100")),
        (DRY, "how does that compare with the quarter before?", "Q2", ("3,200", "4,100")),
        (DRY, "is that more than the preceding quarter?", "Q2", ("3,200", "4,100")),
        (SPRING, "was that less than the following quarter?", "Q3", ("3,200", "4,100")),
        (SPRING, "is that lower than the next quarter?", "Q3", ("3,200", "4,100")),
        (SPRING, "how does that compare with the quarter after?", "Q3", ("3,200", "4,100")),
        ("What was the revenue?", "was that more than the year before?", "2020", ("4.2 million", "3.6 million")),
        ("What was the revenue?", "was it higher than the prior year?", "2020", ("4.2 million", "3.6 million")),
        ("What was revenue in 2021?", "was that more than the preceding year?", "2020", ("4.2 million", "3.6 million")),
    ],
)
async def test_a_time_counted_from_the_figure_quoted_is_compared_with_it(engine, first, then, searched, figures):
    answer = await conversation(engine, [first, then])
    core, _, context = answer.query.partition(" (context: ")
    assert searched in core and context, answer.query
    assert answer.text.startswith(FOUND) and answer.answered, answer.text
    quoted = " ".join(quotes_in(answer.text))
    assert all(figure in quoted for figure in figures), answer.text


@pytest.mark.parametrize(
    ("first", "then", "quoted"),
    [("What was the revenue?", "and the year before?", "3.6 million"), (SPRING, "and the next quarter?", "4,100")],
)
async def test_and_the_year_before_asks_the_last_question_of_that_time(engine, first, then, quoted):
    answer = await conversation(engine, [first, then])
    assert answer.answered and quoted in " ".join(quotes_in(answer.text)), answer.text


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ("How many moorings did the 2019 survey count?", "was that fewer than the following year?"),  # no 2020
        ("How many moorings did the 2021 survey count?", "was that more than the year after?"),
    ],
)
async def test_a_time_counted_to_that_no_document_has_says_so(engine, first, then):
    answer = await conversation(engine, [first, then])
    assert not answer.answered, answer.text


def test_times_counted_from_another():
    core = "How many plots were vacant in Q2?"
    assert _at_another_time("the following quarter", core) == "How many plots were vacant in Q3?"
    assert _at_another_time("the quarter before", core) == "How many plots were vacant in Q1?"
    assert _at_another_time("the next quarter", "Sales in Q4?") is None  # no Q5
    assert _at_another_time("a year later", "Revenue in 2020?") == "Revenue in 2021?"
    assert _at_another_time("the prior year's figure", "Revenue in 2020?") == "Revenue in 2019?"
    assert _A_TIME.match("the year") is None


ACCOUNTS = """# Harbour accounts 2021

Income in 2021 was 310,000 pounds, against 275,000 pounds in 2020.
Spending on repairs in 2021 came to 96,000 pounds.
"""
SURVEY_2019 = """# Harbour survey report 2019

The survey counted 180 moorings, and the waiting list had 20 names.
"""
SURVEY_2021 = """# Harbour survey report 2021

The survey counted 230 moorings, and the waiting list for a mooring had 55 names.
"""


@pytest.fixture(scope="module")
def accounts(tmp_path_factory, embedder):
    texts = {"r2019.md": SURVEY_2019, "r2021.md": SURVEY_2021, "accounts.md": ACCOUNTS}
    engine = engine_with(tmp_path_factory.mktemp("accounts"), embedder, texts)
    try:
        yield engine
    finally:
        engine.close()


@pytest.mark.parametrize("then", ["was that more than the previous year?", "how does that compare with 2020?"])
async def test_a_figure_of_that_time_about_something_else_is_no_figure_of_it(accounts, then):
    """The accounts' '275,000 pounds in 2020' is no waiting list of 2020: the closest passages, not 'From
    the documents:' (a quote counts for a time only when it shares a word of what is asked)."""
    answer = await conversation(accounts, ["How many names were on the waiting list in 2021?", then])
    assert "2020" in answer.query and not answer.answered, answer.text
