"""Questions over a table's rows, a second pass (tables.py): a row named by a first name, a surname or without
its accents; sums and averages of the rows a question names, stated only of a table wholly in the context;
a table larger than the context says its order is of the rows found; times of day are figures; 'which
ones?' and 'who claimed it?' lean on the last table answer. Through `table_pick` and the engine."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine.engine import Engine
from raptor_engine.query.answer import QUOTE
from raptor_engine.query.tables import Row, TablePick, cell_value, table_pick
from raptor_engine.types import Turn
from tests.unhurried import unhurried_settings

EXPENSES = """Date,Person,Category,Description,Amount
2024-01-08,Alice,Travel,Train to Leeds,£54.20
2024-01-12,Bob,Meals,Client lunch,£38.50
2024-01-19,Alice,Meals,Team dinner,£112.00
2024-02-02,Carol,Office,Printer toner,£45.99
2024-02-14,Bob,Travel,Taxi to airport,£41.00
2024-02-20,Alice,Office,Desk lamp,£23.45
2024-03-05,Carol,Travel,Flight to Dublin,£129.00
2024-03-11,Bob,Meals,Coffee with supplier,£9.80
2024-03-22,Alice,Travel,Hotel in Leeds,£98.00
2024-04-03,Carol,Meals,Working lunch,£16.75
"""
EXAMS = """Student,Class,Maths,English,Science,Grade
Amélie Durand,10A,78,85,72,B
Tom Okafor,10A,92,74,88,A
Priya Shah,10B,65,91,70,B
José Martínez,10B,48,55,61,D
Hannah Becker,10A,88,90,94,A
Liam O'Neill,10B,71,62,58,C
Sofia Rossi,10B,95,89,97,A*
Noah Williams,10A,54,67,49,D
"""
TIMETABLE = """Route\tDeparts\tFrom\tTo\tArrives
X1\t06:45\tAshford\tCanterbury\t07:20
X1\t08:15\tAshford\tCanterbury\t08:50
17\t09:05\tAshford\tFolkestone\t09:55
X1\t12:30\tCanterbury\tAshford\t13:05
22\t14:10\tAshford\tMaidstone\t15:25
17\t17:40\tFolkestone\tAshford\t18:30
"""


def _table(text: str, document: str, separator: str = ",") -> list[Row]:
    lines = [line.split(separator) for line in text.strip().splitlines()]
    return [Row(i, document, i, dict(zip(lines[0], line, strict=True))) for i, line in enumerate(lines[1:])]


def _pick(question: str, rows: list[Row], whole: bool = True, earlier: tuple[str, ...] = ()) -> TablePick | None:
    return table_pick(question, rows, [0, 1, 2], {rows[0].document} if whole else set(), 3, earlier)


def _lead(question: str, rows: list[Row], whole: bool = True, earlier: tuple[str, ...] = ()) -> str | None:
    pick = _pick(question, rows, whole, earlier)
    assert pick is not None
    return pick.lead


def _firsts(pick: TablePick | None, rows: list[Row]) -> list[str]:
    assert pick is not None
    return [next(iter(rows[i].cells.values())) for i in pick.picked]


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("What grade did Jose get?", "José Martínez"),  # accents and case aside
        ("What is AMELIE's English mark?", "Amélie Durand"),
        ("What did Becker get in Science?", "Hannah Becker"),  # a surname alone
        ("What did Sofia score in Science?", "Sofia Rossi"),  # a first name alone
        ("What is liam o'neill's grade?", "Liam O'Neill"),
    ],
)
def test_a_row_named_by_part_of_its_key_is_quoted_first(question: str, first: str) -> None:
    rows = _table(EXAMS, "exams.csv")
    pick = _pick(question, rows)
    assert _firsts(pick, rows)[0] == first
    assert pick is not None and pick.lead == "From the documents:"  # it asks a column the row holds


def test_a_name_shared_by_two_rows_or_asking_no_column_is_left_to_ranking() -> None:
    rows = _table("Name,Phone\nAnn Li,0111\nAnn Ross,0222\nBen Li,0333\n", "p.csv")
    assert _pick("What is Ann's phone?", rows) is None  # two Anns
    assert _firsts(_pick("What is Ross's phone?", rows), rows)[0] == "Ann Ross"
    exams = _table(EXAMS, "exams.csv")
    pick = _pick("What is Jose's email?", exams)  # no column of emails: the grounding model judges it
    assert pick is not None and pick.lead is None and _firsts(pick, exams)[0] == "José Martínez"


def test_two_rows_compared_by_first_names() -> None:
    rows = _table(EXAMS, "exams.csv")
    pick = _pick("Did Hannah or Tom score more in English?", rows)
    assert _firsts(pick, rows) == ["Hannah Becker", "Tom Okafor"]
    assert pick is not None and pick.lead == "From the documents (Hannah Becker and Tom Okafor by English, highest first):"


@pytest.mark.parametrize(
    ("question", "lead", "count"),
    [
        ("How much did Alice spend in total?", "From the documents: Amount adds up to £287.65 over the 4 rows of "
         "expenses.csv with Person Alice (£54.20 + £112.00 + £23.45 + £98.00):", 4),
        ("How much did Bob spend?", "From the documents: Amount adds up to £89.30 over the 3 rows of expenses.csv "
         "with Person Bob (£38.50 + £41.00 + £9.80):", 3),
        ("What is the total spent on Travel?", "From the documents: Amount adds up to £322.20 over the 4 rows of "
         "expenses.csv with Category Travel (£54.20 + £41.00 + £129.00 + £98.00):", 4),
        ("What is the average amount of a Meals expense?", "From the documents: the average Amount over the 4 rows "
         "of expenses.csv with Category Meals is £44.26 (£38.50 + £112.00 + £9.80 + £16.75 = £177.05, over 4):", 4),
        ("How much did Alice spend on Travel in total?", "From the documents: Amount adds up to £152.20 over the 2 "
         "rows of expenses.csv with Person Alice and Category Travel (£54.20 + £98.00):", 2),
        ("What did Alice spend in total in January?", "From the documents: Amount adds up to £166.20 over the 2 rows "
         "of expenses.csv with Person Alice and Date in January (£54.20 + £112.00):", 2),
        ("How much did Carol spend in March?", "From the documents: the one row of expenses.csv with Person Carol "
         "and Date in March has Amount £129.00:", 1),
        ("What was the total spent in Q1?", "From the documents: Amount adds up to £551.94 over the 9 rows of "
         "expenses.csv with Date in Q1 (£54.20 + £38.50 + £112.00 + £45.99 + £41.00 + £23.45 + £129.00 + £9.80 + "
         "£98.00):", 9),
    ],
)  # fmt: skip
def test_a_sum_or_an_average_of_the_named_rows_is_stated_with_its_figures(question: str, lead: str, count: int) -> None:
    rows = _table(EXPENSES, "expenses.csv")
    pick = _pick(question, rows)
    assert pick is not None and pick.lead == lead
    assert len(pick.picked) == count  # every row added is quoted


def test_an_average_over_several_columns_of_marks_gives_each() -> None:
    rows = _table(EXAMS, "exams.csv")
    assert _lead("What is the average Maths score of class 10A?", rows) == (
        "From the documents: the average Maths over the 4 rows of exams.csv with Class 10A is 78 "
        "(78 + 92 + 88 + 54 = 312, over 4):"
    )
    assert _lead("What's the average score of 10B?", rows) == (
        "From the documents: over the 4 rows of exams.csv with Class 10B, the average is Maths 69.75, English "
        "74.25, Science 71.5:"
    )


def test_no_figure_is_stated_of_a_table_not_wholly_in_the_context() -> None:
    rows = _table(EXPENSES, "expenses.csv")
    pick = _pick("How much did Alice spend in total?", rows, whole=False)
    assert pick is not None and pick.lead == (
        "From the documents (the context may not hold every row of expenses.csv, so no total is given): the rows "
        "found of expenses.csv with Person Alice:"
    )
    assert "£" not in pick.lead


@pytest.mark.parametrize(
    ("text", "question"),
    [
        # a month no column of dates can place: not the total of all Carol's rows
        ("Person,Month,Amount\nCarol,2024,£5\nCarol,2024,£6\nBob,2024,£7\n", "How much did Carol spend in March?"),
        # two currencies do not add up
        ("Person,Amount\nAlice,£5\nAlice,$6\nBob,£7\n", "How much did Alice spend in total?"),
        # price times stock is in no column
        ("Item,Stock,Price\nHose,4,£5\nTrowel,6,£2\nRake,1,£9\n", "What is the total value of the stock?"),
        # a row without a figure
        ("Person,Amount\nAlice,£5\nAlice,n/a\nBob,£7\nBob,£1\nCarol,£2\n", "How much did Alice spend in total?"),
    ],
)
def test_a_sum_that_the_rows_cannot_give_is_not_made(text: str, question: str) -> None:
    rows = _table(text, "t.csv")
    pick = _pick(question, rows)
    assert pick is None or not any(word in (pick.lead or "") for word in ("adds up", "average"))


def test_a_total_row_is_not_added_again_and_a_count_stays_a_count() -> None:
    rows = _table("Region,Sales\nNorth,100\nSouth,50\nTotal,150\n", "s.csv")
    assert _lead("What are the total sales?", rows) == "From the documents: Sales adds up to 150 over the 2 rows of s.csv (100 + 50):"
    expenses = _table(EXPENSES, "expenses.csv")
    assert _lead("How many expenses did Bob claim in total?", expenses) == "From the documents: 3 of the 10 rows of expenses.csv have Person Bob:"


def test_times_of_day_are_figures() -> None:
    assert cell_value("06:45") is not None and cell_value("06:45").value == 405  # type: ignore[union-attr]
    rows = _table(TIMETABLE, "timetable.tsv", "\t")
    first = _pick("When does the first bus leave?", rows)
    assert first is not None and first.lead == "From the documents (timetable.tsv's rows by Departs, earliest first):"
    assert [rows[i].cells["Departs"] for i in first.picked] == ["06:45", "08:15", "09:05"]
    late = _pick("Which bus arrives latest?", rows)
    assert late is not None and rows[late.picked[0]].cells["Arrives"] == "18:30"
    after = _pick("Which buses depart after 12:00?", rows)  # was read as 'Platform after 12'
    assert after is not None and after.lead == "From the documents: 3 of the 6 rows of timetable.tsv with Departs after 12:00:"


def test_a_value_of_two_columns_is_of_the_column_named_before_it() -> None:
    rows = _table(TIMETABLE, "timetable.tsv", "\t")
    assert _lead("How many departures are there from Ashford?", rows) == "From the documents: 4 of the 6 rows of timetable.tsv have From Ashford:"
    assert _lead("Which buses go from Ashford to Canterbury?", rows) == (
        "From the documents: 2 of the 6 rows of timetable.tsv have From Ashford and To Canterbury:"
    )


def test_a_superlative_over_a_table_not_wholly_in_the_context_says_so() -> None:
    rows = _table(EXAMS, "exams.csv")
    assert _lead("Who got the highest mark in Maths?", rows, whole=False) == (
        "From the documents (exams.csv's rows found by Maths, highest first; the context may not hold every row of "
        "exams.csv):"
    )


def test_follow_ups_lean_on_the_last_table_answer() -> None:
    expenses = _table(EXPENSES, "expenses.csv")
    pick = _pick("Who claimed it?", expenses, earlier=("What was the most expensive expense?",))
    assert pick is not None and expenses[pick.picked[0]].cells["Description"] == "Flight to Dublin"
    rows = _table(EXAMS, "exams.csv")
    assert _lead("which ones?", rows, earlier=("How many students are in 10B?",)) == "From the documents: 4 of the 8 rows of exams.csv have Class 10B:"


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    """An engine holding the expenses, the exam results and a 240-row sales sheet, each in its own base."""
    held = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("tables2") / "data"), embedder=embedder)
    sales = "Order,Region,Revenue\n" + "".join(
        f"SO-{i:04d},{('North', 'South', 'East', 'West')[i % 4]},£{(i * 7919) % 9000 + 100}\n" for i in range(240)
    )
    for kb, name, text in (("expenses", "expenses.csv", EXPENSES), ("exams", "exams.csv", EXAMS),
                           ("sales", "sales.csv", sales)):  # fmt: skip
        asyncio.run(held.ingest(kb, name, text.encode()))
    try:
        yield held
    finally:
        held.close()


def _ask(engine: Engine, kb: str, question: str, history: list[Turn] | None = None) -> tuple[str, list[str]]:
    answer = asyncio.run(engine.ask(kb, question, history=history))
    return answer.text.split("\n")[0], QUOTE.findall(answer.text)


def test_through_the_engine_a_total_a_first_name_and_a_large_table(engine: Engine) -> None:
    lead, quotes = _ask(engine, "expenses", "How much did Alice spend in total?")
    assert lead.startswith("From the documents: Amount adds up to £287.65 over the 4 rows")
    assert len(quotes) == 4 and all("Person: Alice" in quote for quote in quotes)
    lead, quotes = _ask(engine, "exams", "What grade did jose get?")
    assert lead == "From the documents:" and "José Martínez" in quotes[0]
    lead, quotes = _ask(engine, "sales", "Which order had the highest revenue?")
    assert "rows found by Revenue" in lead and "the context may not hold every row of sales.csv" in lead
    lead, _ = _ask(engine, "sales", "What is the total revenue of the North?")
    assert "so no total is given" in lead and "£" not in lead
    lead, _ = _ask(engine, "sales", "How many orders are there?")
    assert lead == (
        "From the documents (sales.csv is too big to read whole, more than 150 rows or 40,000 characters; the context"
        " may not hold every row of sales.csv, so no count is given): the first rows found of sales.csv:"
    )


def test_through_the_engine_who_claimed_it(engine: Engine) -> None:
    asked = "What was the most expensive expense?"
    lead, quotes = _ask(engine, "expenses", asked)
    assert "Flight to Dublin" in quotes[0]
    history = [Turn("user", asked), Turn("assistant", lead + "\n- “" + quotes[0] + "”")]
    lead, quotes = _ask(engine, "expenses", "Who claimed it?", history)
    assert lead == "From the documents:" and "Flight to Dublin" in quotes[0]


def test_a_superlative_within_the_rows_a_question_names() -> None:
    exams = _table(EXAMS, "exams.csv")
    pick = _pick("Who got the highest Maths mark in 10A?", exams)  # not Sofia Rossi of 10B
    assert pick is not None and pick.lead == "From the documents (exams.csv's rows with Class 10A by Maths, highest first):"
    assert _firsts(pick, exams) == ["Tom Okafor", "Hannah Becker", "Amélie Durand"]
    expenses = _table(EXPENSES, "expenses.csv")
    pick = _pick("What was Alice's biggest expense?", expenses)  # the Amount, not the Date
    assert pick is not None and expenses[pick.picked[0]].cells["Description"] == "Team dinner"
    assert pick.lead == "From the documents (expenses.csv's rows with Person Alice by Amount, highest first):"


def test_best_and_worst_are_superlatives_and_a_one_letter_cell_is_named_only_as_written() -> None:
    exams = _table(EXAMS, "exams.csv")
    assert _firsts(_pick("Who did best in Science?", exams), exams)[0] == "Sofia Rossi"
    assert _firsts(_pick("Who did worst in English?", exams), exams)[0] == "José Martínez"
    # the article 'a' is no Grade A
    assert _lead("Who got the highest mark in Maths as a student?", exams) == "From the documents (exams.csv's rows by Maths, highest first):"
    assert _lead("Which students got an A?", exams) == "From the documents: 3 of the 8 rows of exams.csv have Grade A or A*:"


def test_it_is_the_last_answers_first_row_and_they_its_rows() -> None:
    expenses = _table(EXPENSES, "expenses.csv")
    it = _pick("Who claimed it?", expenses, earlier=("What was the most expensive expense?",))
    assert it is not None and len(it.picked) == 1
    timetable = _table(TIMETABLE, "timetable.tsv", "\t")
    they = _pick("When do they arrive?", timetable, earlier=("Which buses go from Ashford to Canterbury?",))
    assert they is not None and [timetable[i].cells["Departs"] for i in they.picked] == ["06:45", "08:15"]


def test_how_many_of_a_column_of_figures_in_total_adds_it_and_of_anything_else_counts() -> None:
    rows = _table("Item,Units\nHose,4\nTrowel,6\nRake,1\n", "s.csv")
    assert _lead("How many units were sold in total?", rows) == "From the documents: Units adds up to 11 over the 3 rows of s.csv (4 + 6 + 1):"
    assert _lead("How many items are there in total?", rows) == "From the documents: s.csv has 3 rows:"


def test_a_month_filters_the_rows_of_a_count_and_what_did_x_spend_is_a_sum() -> None:
    expenses = _table(EXPENSES, "expenses.csv")
    # was '3 of the 10 rows of expenses.csv have Person Carol:', her March row among them
    assert _lead("What did Carol spend in March?", expenses) == (
        "From the documents: the one row of expenses.csv with Person Carol and Date in March has Amount £129.00:"
    )
    assert _lead("How many expenses were in March?", expenses) == (
        "From the documents: 3 of the 10 rows of expenses.csv have Date in March:"
    )


def test_and_the_lowest_keeps_the_rows_the_superlative_was_asked_of() -> None:
    exams = _table(EXAMS, "exams.csv")
    pick = _pick("and the lowest?", exams, earlier=("Who got the highest Maths mark in 10A?",))
    assert pick is not None and pick.lead == "From the documents (exams.csv's rows with Class 10A by Maths, lowest first):"
    assert _firsts(pick, exams)[0] == "Noah Williams"  # not José Martínez of 10B


def test_through_the_engine_which_ones_after_a_count(engine: Engine) -> None:
    """'Which ones?' is an onward ask (examples of the last answer); after a count over a table it is the
    rows counted. It quoted the Hand tools rows under 'Nothing in the documents clearly answers this'."""
    asked = "How many students are in 10B?"
    lead, quotes = _ask(engine, "exams", asked)
    history = [Turn("user", asked), Turn("assistant", lead + "".join(f"\n- “{q}”" for q in quotes))]
    lead, quotes = _ask(engine, "exams", "which ones?", history)
    assert lead == "From the documents: 4 of the 8 rows of exams.csv have Class 10B:"
    assert len(quotes) == 4 and all("Class: 10B" in quote for quote in quotes)


def test_a_word_that_is_another_columns_cell_or_a_lowercase_noun_does_not_narrow_the_rows() -> None:
    """table24's staff and members questions, kept: 'Glasgow' is an Office, not part of the Name 'Jack King,
    Glasgow'; 'member' in 'the longest-serving member' is no Role 'Member'."""
    staff = _table("Name;Office;Started\nGrace Hill;Manchester;2012\nHarry Ives;Manchester;2018\nIsla Jones;Glasgow;2009\n"
                   "Jack King, Glasgow;;2023\n", "staff.html", ";")  # fmt: skip
    assert table_pick("Who works in Glasgow?", staff, [2, 3, 1], {"staff.html"}, 3) is None  # left to ranking
    members = _table("Name,Joined,Role\nAnn,2017,Treasurer\nBen,2021,Member\nFrank,2015,Member\n", "m.csv")
    assert _lead("Who is the longest-serving member?", members) == "From the documents (m.csv's rows by Joined, earliest first):"
