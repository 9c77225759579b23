"""A question asked of every row of a table (a count, a threshold, a superlative, a listing) is answered from
every row of that table's document, read from the store, when the table is small enough to read whole
(`tables.MAX_WHOLE_TABLE_ROWS`, `MAX_WHOLE_TABLE_CHARS`); the search's few rows were not the table. A larger
table is answered from the rows found, and its answer says no count is given. A question about one row is
answered from the context as retrieved. Through the engine."""

from __future__ import annotations

import asyncio
import csv
import io

import pytest

import raptor_engine.engine as engine_module
from raptor_engine.engine import Engine
from raptor_engine.query.answer import QUOTE
from raptor_engine.query.tables import asks_whole_table
from tests.unhurried import unhurried_settings

NAMES = (
    "Kittiwake Morning-Star Grey-Heron Sea-Lark Brave-Tern Curlew Puffin Osprey Gannet Shearwater Petrel Fulmar "
    "Skua Guillemot Razorbill Cormorant Shag Dunlin Plover Redshank Sanderling Turnstone Oystercatcher Avocet "
    "Godwit Whimbrel Merganser Eider Scoter Teal"
).split()
TYPES = ["Sloop", "Ketch", "Cutter", "Yawl", "Schooner", "Lugger"]
PORTS = ["Whitby", "Falmouth", "Oban", "Tobermory", "Brixham", "Fowey"]
BUDGET = 600  # tokens: a few of the table's leaves, not all of them


def _boat(i: int) -> list[str]:
    """Row i of the fleet: its year and length vary so no two rows tie, and a long Notes cell spreads the 30
    rows over many leaves."""
    notes = f"Restored in {1960 + i} by the {PORTS[(i + 3) % 6]} yard; {TYPES[(i + 2) % 6].lower()} rig trials followed"
    return [NAMES[i].replace("-", " "), TYPES[i % 6], str(1900 + (i * 7) % 90), f"{8 + ((i * 13) % 150) / 10:.1f}",
            PORTS[i % 6], notes]  # fmt: skip


ROWS = [_boat(i) for i in range(len(NAMES))]


def _fleet_csv() -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Boat", "Type", "Built", "Length (m)", "Home port", "Notes"])
    writer.writerows(ROWS)
    return out.getvalue().encode()


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    """An engine holding the fleet table."""
    held = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("whole") / "data"), embedder=embedder)
    asyncio.run(held.ingest("fleet", "fleet.csv", _fleet_csv()))
    try:
        yield held
    finally:
        held.close()


def _ask(engine: Engine, question: str) -> tuple[str, list[str], set[int]]:
    """The answer's first line, its quotes, and the context's leaves' ids."""
    answer = asyncio.run(engine.ask("fleet", question, budget=BUDGET))
    leaves = {node.node_id for node in answer.context.nodes if node.layer == 0}
    return answer.text.split("\n")[0], QUOTE.findall(answer.text), leaves


def _leaf_count(engine: Engine) -> int:
    kb_id = engine.store.kb_id("fleet")
    return sum(1 for node in engine.store.nodes_of_kb(kb_id) if node.layer == 0)


def test_the_fleet_spans_more_leaves_than_a_question_retrieves(engine):
    """The premise: a detail question's context holds some of the table's leaves, not all."""
    _, quotes, leaves = _ask(engine, "What is Kittiwake's home port?")
    assert 1 <= len(leaves) < _leaf_count(engine) and "Kittiwake" in quotes[0]


@pytest.mark.parametrize(
    ("question", "lead"),
    [
        ("How many boats are there?", f"From the documents: fleet.csv has {len(ROWS)} rows; the first 10 are quoted:"),
        ("How many boats were built before 1950?",
         f"From the documents: {sum(int(r[2]) < 1950 for r in ROWS)} of the {len(ROWS)} rows of fleet.csv with Built "
         "before 1950; the first 10 are quoted:"),
        ("List all boats", f"From the documents: fleet.csv has {len(ROWS)} rows; the first 10 are quoted:"),
        ("Which boats are in Oban?",
         f"From the documents: {sum(r[4] == 'Oban' for r in ROWS)} of the {len(ROWS)} rows of fleet.csv have Home port "
         "Oban:"),
    ],
)  # fmt: skip
def test_a_question_over_every_row_counts_the_whole_table(engine, question, lead):
    first_line, quotes, leaves = _ask(engine, question)
    assert first_line == lead
    assert len(leaves) == _leaf_count(engine)  # every leaf of the table is in the context, and cited from it
    assert quotes and all(quote.startswith("Boat: ") for quote in quotes)


@pytest.mark.parametrize(
    ("question", "port"),
    [
        ("Who is based in Oban?", "Oban"),
        ("Which boat is from Brixham?", "Brixham"),
        ("Which boat sails from Fowey?", "Fowey"),
    ],
)
def test_a_which_question_naming_a_value_counts_the_whole_table(engine, question, port):
    first_line, quotes, leaves = _ask(engine, question)
    matching = sum(row[4] == port for row in ROWS)
    assert (
        first_line
        == f"From the documents: {matching} of the {len(ROWS)} rows of fleet.csv have Home port {port}:"
    )
    assert len(quotes) == matching and len(leaves) == _leaf_count(engine)


def test_a_which_question_naming_one_row_keeps_its_context(engine):
    """'Which port is Kittiwake from?' names a key's row: a lookup, answered from the context as retrieved."""
    _, quotes, leaves = _ask(engine, "Which port is Kittiwake from?")
    assert "Kittiwake" in quotes[0] and len(leaves) < _leaf_count(engine)


def test_the_superlative_is_of_every_row(engine):
    longest = max(ROWS, key=lambda row: float(row[3]))
    first_line, quotes, _ = _ask(engine, "Which boat has the greatest length?")
    assert first_line == "From the documents (fleet.csv's rows by Length (m), highest first):"
    assert quotes[0].startswith(f"Boat: {longest[0]};")
    # 'longest', 'shortest': a superlative of the one column of figures that is no year
    shortest = min(ROWS, key=lambda row: float(row[3]))
    for question, row in (("Which boat is the longest?", longest), ("Which boat is the shortest?", shortest)):
        first_line, quotes, _ = _ask(engine, question)
        assert "by Length (m)" in first_line, (question, first_line)
        assert quotes[0].startswith(f"Boat: {row[0]};"), (question, quotes)
    oldest = min(ROWS, key=lambda row: int(row[2]))
    _, quotes, _ = _ask(engine, "Which boat was built first?")
    assert quotes[0].startswith(f"Boat: {oldest[0]};")


def test_a_table_too_big_to_read_whole_is_answered_from_the_rows_found(engine, monkeypatch):
    monkeypatch.setattr(engine_module, "MAX_WHOLE_TABLE_ROWS", 10)
    first_line, _, leaves = _ask(engine, "How many boats are there?")
    assert first_line.startswith(
        "From the documents (fleet.csv is too big to read whole, more than 150 rows or 40,000 characters; "
        "the context may not hold every row of fleet.csv, so no count is given): the first rows found of fleet.csv:"
    )
    assert len(leaves) < _leaf_count(engine)
    first_line, _, _ = _ask(engine, "How many boats were built before 1950?")
    assert "fleet.csv is too big to read whole" in first_line
    assert "the rows found of fleet.csv with Built" in first_line


@pytest.mark.parametrize(
    ("question", "whole"),
    [
        ("How many boats are there?", True),
        ("How many boats were built before 1950?", True),
        ("Which boat has the most crew?", True),
        ("What is the average length?", True),
        ("What is the total tonnage?", True),
        ("List all boats", True),
        ("Show every boat", True),
        ("What are all the boats?", True),
        ("Which boats are in Oban?", True),
        ("What is Kittiwake's home port?", False),
        ("Where was Sea Lark restored?", False),
        ("Tell me about the Grey Heron.", False),
    ],
)
def test_which_questions_read_the_whole_table(question, whole):
    assert asks_whole_table(question) is whole


class _PromptRecorder:
    """An answerer that writes prose (an LLM's place), recording the context it is given."""

    writes_prose = True
    name = "recorder"

    def __init__(self) -> None:
        self.given: list[list] = []

    async def answer(self, question, nodes, history):
        from raptor_engine.types import AnswerDraft

        self.given.append(list(nodes))
        return AnswerDraft("The fleet has boats [1].")


def test_an_llm_is_given_a_whole_table_only_within_the_budget(tmp_path, embedder):
    """The quoting answer counts every row past the budget; an LLM's prompt stays within it: a table that does
    not fit the budget reaches it as retrieved, one that fits reaches it whole."""
    recorder = _PromptRecorder()
    held = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder, answerer=recorder)
    try:
        asyncio.run(held.ingest("fleet", "fleet.csv", _fleet_csv()))
        small = asyncio.run(held.ask("fleet", "How many boats are there?", budget=BUDGET))
        assert small.context.tokens_used <= BUDGET
        assert sum(1 for node in recorder.given[-1] if "Boat:" in node.text) < len(ROWS)
        asyncio.run(held.ask("fleet", "How many boats are there?", budget=20_000))
        given = " ".join(node.text for node in recorder.given[-1])  # what the LLM read, not only the context
        assert all(f"Boat: {row[0]};" in given for row in ROWS)
    finally:
        held.close()
