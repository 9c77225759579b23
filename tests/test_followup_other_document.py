"""qa17: a correction that moves the last question to another document ('no, the other report', 'what
about the second report?', 'and in the other file?', 'same for the 2019 report') is answered as that
question was, over that document: the question is searched there with the document as 'it', so its
support is judged against what it asks, not against words naming the document ('Nothing in the documents
clearly answers this' before). With two reports and with three."""

from __future__ import annotations

import pytest

from raptor_engine import Engine, Turn
from raptor_engine.query.followup import quotes_in
from tests.bot.test_bot_real_process import REPORT_2019, REPORT_2021
from tests.unhurried import engine_with

REPORT_2020 = """# Harbour survey report 2020

Written by Maren Olufsen, the harbour master.

Olufsen recommended rebuilding the slipway because winter storms had loosened its stones.
"""

TWO = {"r2019.md": REPORT_2019, "r2021.md": REPORT_2021}
THREE = {"r2019.md": REPORT_2019, "r2020.md": REPORT_2020, "r2021.md": REPORT_2021}
R2019 = "What did the 2019 report recommend?"
R2021 = "What did the 2021 report recommend?"
# what each report's answer must quote
RECOMMENDED = {"r2019.md": "closing the north pier", "r2020.md": "rebuilding the slipway", "r2021.md": "dredging"}
WROTE = {"r2019.md": "Ines Calloway", "r2020.md": "Maren Olufsen", "r2021.md": "Tomas Reyes"}


@pytest.fixture(scope="module")
def engines(tmp_path_factory, embedder):
    made = {}
    for count, texts in ((2, TWO), (3, THREE)):
        made[count] = engine_with(tmp_path_factory.mktemp(f"reports{count}"), embedder, texts)
    try:
        yield made
    finally:
        for engine in made.values():
            engine.close()


async def conversation(engine: Engine, questions: list[str]):
    history: list[Turn] = []
    answer = None
    for question in questions:
        answer = await engine.ask("harbour", question, history=list(history))
        history += [Turn("user", question), Turn("assistant", answer.text)]
    assert answer is not None
    return answer


OTHER = ["no, the other report", "no, the other one", "what about the other report?", "and in the other file?",
         "same for the other report"]


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("correction", OTHER)
async def test_the_other_report_is_the_last_question_answered_over_the_reports_it_did_not_quote(engines, count, correction):
    answer = await conversation(engines[count], [R2019, correction])
    rest = sorted(set(THREE if count == 3 else TWO) - {"r2019.md"})
    assert answer.query == "What did it recommend?"
    assert answer.answered, answer.text
    assert {citation.document for citation in answer.citations} <= set(rest), answer.text
    assert RECOMMENDED[rest[-1]] in " ".join(quotes_in(answer.text)), answer.text


@pytest.mark.parametrize(
    ("count", "which", "document"),
    [(2, "second", "r2021.md"), (3, "second", "r2020.md"), (3, "2nd", "r2020.md"), (3, "last", "r2021.md")],
)
async def test_the_second_report_is_the_second_document_added(engines, count, which, document):
    answer = await conversation(engines[count], [R2019, f"what about the {which} report?"])
    assert answer.query == "What did it recommend?"
    assert answer.answered, answer.text
    assert {citation.document for citation in answer.citations} == {document}, answer.text
    assert RECOMMENDED[document] in " ".join(quotes_in(answer.text)), answer.text


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("correction", ["same for the 2019 report", "the same for 2019?", "same question for the 2019 one"])
async def test_same_for_another_year_asks_the_last_question_of_that_report(engines, count, correction):
    answer = await conversation(engines[count], [R2021, correction])
    assert answer.query == "What did it recommend?"  # of the one report whose title says 2019
    assert {citation.document for citation in answer.citations} == {"r2019.md"}, answer.text
    assert answer.answered, answer.text
    assert RECOMMENDED["r2019.md"] in " ".join(quotes_in(answer.text)), answer.text


@pytest.mark.parametrize("count", [2, 3])
async def test_who_wrote_the_other_one_quotes_only_the_other_authors(engines, count):
    answer = await conversation(engines[count], [R2019, "who wrote it?", "and the other one?"])
    rest = sorted(set(THREE if count == 3 else TWO) - {"r2019.md"})
    assert answer.query == "Who wrote it?"
    quoted = " ".join(quotes_in(answer.text))
    assert all(WROTE[name] in quoted for name in rest) and WROTE["r2019.md"] not in quoted, answer.text


async def test_a_second_report_the_knowledge_base_lacks_or_a_first_question_moves_nothing(engines):
    fifth = await conversation(engines[2], [R2019, "what about the fifth report?"])
    assert fifth.query == "What did the fifth report recommend?"
    first = await conversation(engines[2], ["What did the second report recommend?"])
    assert first.query == "What did the second report recommend?"
