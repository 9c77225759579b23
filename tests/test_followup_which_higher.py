"""qa20: 'which year was higher?' after an answer that quoted two years' (or quarters') figures names the
higher (or lower) one, extractively: the figures of each time are read from the quotes (the clause that
names the time, else a quote whose document's title does), compared, and both are given. A side with no
figure, or figures in different units, is said plainly and reads as unanswered."""

from __future__ import annotations

import pytest

from raptor_engine.query.compared import CHOSEN, chosen, which_more
from raptor_engine.query.followup import quotes_in, unanswered_lead
from tests.test_compared_grounding import TEXTS
from tests.test_followup_other_document import conversation  # asks of the knowledge base "harbour"
from tests.test_followup_relative_time import REVENUE
from tests.unhurried import engine_with


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("which"), embedder, {**TEXTS, "annual.md": REVENUE})
    try:
        yield engine
    finally:
        engine.close()


MOORINGS = "How many moorings did the 2021 survey count?"
SALES = "How many units of the garden range were sold in Q3?"


@pytest.mark.parametrize(
    ("turns", "lead", "figures"),
    [
        (
            ["What was revenue in 2021?", "and in 2020?", "which year was higher?"],
            "2021 was higher",
            ("4.2 million", "3.6 million"),
        ),
        (
            ["What was revenue in 2021?", "which year was higher?"],
            "2021 was higher",
            ("4.2 million", "3.6 million"),
        ),
        (
            ["What was revenue in 2021?", "was revenue lower in 2021 or in 2020?"],
            "2020 was lower",
            ("4.2 million", "3.6 million"),
        ),
        (["What was the revenue?", "which was lower?"], "2020 was lower", ("4.2 million", "3.6 million")),
        (
            [MOORINGS, "and in 2019?", "which was higher?"],
            "2021 was higher",
            ("230 moorings", "180 moorings"),
        ),
        (
            [MOORINGS, "was that more than in 2019?", "so which year had more?"],
            "2021 was higher",
            ("230", "180"),
        ),
        ([MOORINGS, "and in 2019?", "which one was greater?"], "2021 was higher", ("230", "180")),
        # qa22: a superlative alone chooses as the which-question does
        (
            ["What was revenue in 2021?", "and in 2020?", "the highest?"],
            "2021 was higher",
            ("4.2 million", "3.6 million"),
        ),
        ([MOORINGS, "and in 2019?", "and the lowest?"], "2019 was lower", ("230", "180")),
        (
            ["How many plots were vacant in Q2?", "and in Q1?", "which quarter had fewer?"],
            "Q2 was lower",
            ("Four", "Six"),
        ),
        ([SALES, "and in Q2?", "was Q2 or Q3 bigger?"], "Q3 was higher", ("4,100 units", "3,200 units")),
        (
            [SALES, "and in Q2?", "ok, which of the two was smaller?"],
            "Q2 was lower",
            ("4,100 units", "3,200 units"),
        ),
        (
            ["How many names were on the waiting list in 2021?", "and in 2019?", "which year was lower?"],
            "2019 was lower",
            ("20 names", "55 names"),
        ),
    ],
)
async def test_which_was_higher_names_the_time_and_gives_both_figures(engine, turns, lead, figures):
    answer = await conversation(engine, turns)
    first = answer.text.splitlines()[0]
    assert first.startswith(f"From the documents: {lead} ("), answer.text
    assert all(figure in first for figure in figures), answer.text
    assert answer.answered and answer.citations, answer.text


async def test_a_side_with_no_figure_is_said_plainly(engine):
    answer = await conversation(engine, [SALES, "and in Q1?", "which quarter was higher?"])
    assert answer.text.startswith(
        "The documents give a figure for Q3 (4,100 units) but none I can find for Q1"
    ), answer.text
    assert not answer.answered, answer.text


async def test_a_choice_with_no_two_times_at_hand_chooses_nothing(engine):
    answer = await conversation(engine, ["Who kept the Skerry light?", "which was higher?"])
    assert "was higher" not in answer.text and not answer.answered, answer.text


def test_figures_in_different_units_are_not_compared():
    quotes = [("Visitors in 2022 numbered 12,000.", ""), ("Ticket sales in 2023 came to 40,000 pounds.", "")]
    line = chosen(("2022", "2023"), "higher", quotes, set())
    assert line is not None and line.startswith("The figures are in different units"), line
    assert unanswered_lead(line)
    # a quote sharing no word of what is asked gives no figure of it: the ticket sales are no visitors
    missing = chosen(("2022", "2023"), "higher", quotes, {"visitors"})
    assert missing is not None and missing.startswith("The documents give a figure for 2022 (12,000)"), (
        missing
    )
    assert unanswered_lead(missing)
    same = chosen(
        ("2022", "2023"), "higher", [("12,000 visitors came in 2022 and 12,000 visitors in 2023.", "")], set()
    )
    assert same == "From the documents: 2022 and 2023 were the same (12,000 visitors each)."


def test_the_choice_reads_each_figure_from_its_own_clause_and_scale():
    quotes = [("Revenue in 2021 was 4.2 million pounds, against 3.6 million pounds in 2020.", "")]
    assert chosen(("2020", "2021"), "lower", quotes, {"revenue"}) == CHOSEN.format(
        time="2020", way="lower", a="3.6 million pounds", other="2021", b="4.2 million pounds"
    )
    titled = [
        ("Sales reached 950 units.", "q2.md Sales, Q2"),
        ("Sales rose to 1.1 thousand units.", "q3.md Sales, Q3"),
    ]
    assert chosen(("Q2", "Q3"), "higher", titled, {"sales"}).startswith("From the documents: Q3 was higher")


@pytest.mark.parametrize(
    ("text", "first", "second"),
    [
        (
            "Revenue in 2021 was £4.2 million, against 3.6 million pounds in 2020.",
            "£4.2 million",
            "3.6 million pounds",
        ),
        ("Fees in 2021 were $40, against 35 dollars in 2020.", "$40", "35 dollars"),
        ("Fees in 2021 were 40 euros, against €35 in 2020.", "40 euros", "€35"),
        ("Turnout in 2021 was 40%, against 35 per cent in 2020.", "40%", "35 per cent"),
    ],
)
def test_a_currency_sign_and_its_word_are_one_unit(text, first, second):
    """review25: '£4.2 million' and '3.6 million pounds' were 'in different units'; and a figure took the word
    after it ('in', 'per') as its unit and its text ('35 per cent in in 2020')."""
    assert chosen(("2021", "2020"), "higher", [(text, "")], {"revenue", "fees", "turnout"}) == CHOSEN.format(
        time="2021", way="higher", a=first, other="2020", b=second
    )


@pytest.mark.parametrize(
    ("question", "way"),
    [
        ("which year was higher?", "higher"),
        ("so which one had more?", "higher"),
        ("which of the two is bigger?", "higher"),
        ("which quarter sold fewer?", "lower"),
        ("was Q2 or Q3 smaller?", "lower"),
        ("and which was greater?", "higher"),
        ("was revenue higher in 2021 or in 2020?", "higher"),
        ("which figure was the larger one?", "higher"),
        ("was it more in Q2?", None),
        ("which keeper was older?", None),
        ("which year did the bridge open?", None),
        (
            "which report recommended dredging the inner basin and closing more of the north pier than before?",
            None,
        ),
        # 'up'/'down' as particles and 'what more' ask no choice: after two years' figures, 'what led up to
        # that?' had become 'Who was Rowan Pike in 1880? (context: … in 1902?)'
        ("what led up to that?", None),
        ("what came up next?", None),
        ("what broke down?", None),
        ("what did he write down?", None),
        ("what more can you tell me?", None),
        ("and what more happened?", None),
        ("what less obvious reasons were there?", None),
        ("what was higher, 2021 or 2020?", "higher"),
    ],
)
def test_which_more_reads_the_way_asked(question, way):
    assert which_more(question) == way


def test_quotes_are_still_quoted():
    assert quotes_in(
        "From the documents: 2021 was higher (4 in 2021, against 3 in 2020).\n- \u201cx\u201d [1]"
    ) == ["x"]
