"""qa23: a split year ('2022-23'), a financial year ('FY24') and a quarter of a year ('Q3 2021') as periods
to compare or ask about. On main 'and in 2021-22?' after 'What was income in 2022-23?' was searched as typed
('In 2021-22? (context: ...)'), 'was that more than in 2022-23?' dropped the comparison, and 'which was
higher?' read the '22' of '2021-22' as a figure ('The figures are in different units (22 had in 2021, ...)')."""

from __future__ import annotations

import pytest

from raptor_engine.query.compared import compared_times, periods
from raptor_engine.query.followup import standalone_question
from tests.conversations import asked_turns
from tests.followup_documents import TEXTS
from tests.test_followup_other_document import conversation
from tests.unhurried import engine_with


def _asked(asked: str, follow_up: str) -> str:
    return standalone_question(follow_up, asked_turns(asked, quote="Three wins."))


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("income in 2022-23 was", ["2022-23"]),
        ("in 2022/2023 and 2022\u201323", ["2022-23"]),
        ("FY24 and fy 2023", ["FY24", "FY23"]),
        ("FY2023/24", ["FY23-24"]),
        ("in Q3 2021, not Q4", ["Q3 2021", "Q4"]),
        ("on 2022-03-15", []),  # a date
        ("from 2019-21", []),  # a span of three years
        ("version 2022.1", []),
    ],
)
def test_periods_are_read_whole(text, named):
    assert periods(text) == named


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        ("What was income in 2022-23?", "and in 2021-22?", "What was income in 2021-22?"),
        ("What was income in 2022-23?", "what about 2021/22?", "What was income in 2021-22?"),
        ("What was income in 2022-23?", "and the year before?", "What was income in 2021-22?"),
        ("What was the balance at the end of FY23?", "and FY24?", "What was the balance at the end of FY24?"),
        ("What was the balance at the end of FY23?", "and the previous year?", "What was the balance at the end of FY22?"),
        ("What did the council propose in Q3 2023?", "and Q4 2023?", "What did the council propose in Q4 2023?"),
        ("What did the council propose in Q3 2023?", "and Q4?", "What did the council propose in Q4 2023?"),
        ("What did the council propose in Q3 2023?", "and in 2022?", "What did the council propose in Q3 2022?"),
        ("What did the council propose in Q3 2023?", "and the next quarter?", "What did the council propose in Q4 2023?"),
        ("What was revenue in 2021?", "and Q3 2021?", "What was revenue in Q3 2021?"),
        ("What was income in 2022-23?", "was that more than in 2021-22?",
         "What was income in 2021-22? (context: What was income in 2022-23?)"),
        ("What was the premium in 2021-22?", "was that more than in 2022-23?",
         "What was the premium in 2022-23? (context: What was the premium in 2021-22?)"),
    ],
)
def test_a_period_alone_asks_the_last_question_of_it(asked, follow_up, standalone):
    assert _asked(asked, follow_up) == standalone


def test_two_periods_are_compared():
    assert compared_times("What was income in 2021-22?", "What was income in 2022-23?") == ("2021-22", "2022-23")
    assert compared_times("What was it in Q3 2021?", "What was it in Q4 2021?") == ("Q3 2021", "Q4 2021")


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("periods"), embedder, TEXTS)
    try:
        yield engine
    finally:
        engine.close()


async def test_which_of_two_split_years_was_higher(engine):
    answer = await conversation(engine, ["What was income in 2022-23?", "and in 2021-22?", "which was higher?"])
    lead = answer.text.split("\n")[0]
    assert lead.startswith("From the documents: 2022-23 was higher (2,340 pounds in 2022-23"), answer.text
    assert "1,870 pounds in 2021-22" in lead, answer.text


async def test_a_comparison_with_another_split_year_quotes_both_figures(engine):
    answer = await conversation(engine, ["What was income in 2022-23?", "was that more than in 2021-22?"])
    assert answer.query == "What was income in 2021-22? (context: What was income in 2022-23?)"
    assert "1,870 pounds" in answer.text and "2,340 pounds" in answer.text, answer.text
    assert answer.answered, answer.text
