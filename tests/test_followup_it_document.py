"""qa16: a follow-up's 'it' that the rewrite leaves leaning on the last answer ('who wrote it?' after
'What did the 2021 report recommend?') is searched in the one document that answer quoted, not in every
report of the knowledge base; an answer quoting two documents restricts nothing."""

from __future__ import annotations

import pytest

from raptor_engine import Engine, Turn
from raptor_engine.query.followup import quotes_in
from tests.bot.test_bot_real_process import REPORT_2019, REPORT_2021  # the reports botqa16 played
from tests.unhurried import engine_with


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("reports"), embedder, {"r2019.md": REPORT_2019, "r2021.md": REPORT_2021})
    try:
        yield engine
    finally:
        engine.close()


async def follow(engine: Engine, first: str, then: str, **filters):
    answer = await engine.ask("harbour", first)
    history = [Turn("user", first), Turn("assistant", answer.text)]
    return await engine.ask("harbour", then, history=history, **filters)


@pytest.mark.parametrize(
    ("year", "author", "other"),
    [("2019", "Ines Calloway", "Tomas Reyes"), ("2021", "Tomas Reyes", "Ines Calloway")],
)
async def test_who_wrote_it_quotes_the_author_of_the_report_the_last_answer_quoted(engine, year, author, other):
    wrote = await follow(engine, f"What did the {year} report recommend?", "who wrote it?")
    quoted = " ".join(quotes_in(wrote.text))
    assert author in quoted and other not in quoted, wrote.text
    assert {citation.document for citation in wrote.citations} == {f"r{year}.md"}


async def test_an_answer_quoting_both_reports_or_a_filter_without_its_document_restricts_nothing(engine):
    both = Turn("assistant", "From the documents:\n- \u201cWritten by Dr. Ines Calloway for the harbour board.\u201d [1]\n"
                "- \u201cWritten by Tomas Reyes, the harbour engineer.\u201d [2]")
    wrote = await engine.ask("harbour", "when was it written?", history=[Turn("user", "Who wrote the reports?"), both])
    assert engine._followed_document("harbour", wrote.query, [both], None) == (wrote.query, None)
    filtered = await follow(engine, "What did the 2019 report recommend?", "who wrote it?", documents=["r2021.md"])
    assert {citation.document for citation in filtered.citations} <= {"r2021.md"}, filtered.text


@pytest.mark.parametrize("correction", ["no, the other report", "no, the other one", "what about the other report?"])
async def test_the_other_report_is_searched_in_the_documents_the_last_answer_did_not_quote(engine, correction):
    other = await follow(engine, "What did the 2019 report recommend?", correction)
    assert other.query == "What did it recommend?"
    assert {citation.document for citation in other.citations} == {"r2021.md"}, other.text
    assert "dredging" in " ".join(quotes_in(other.text)), other.text
