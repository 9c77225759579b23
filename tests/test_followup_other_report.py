"""qa20: 'and what about the other report?' after a question about a person ('What did Ines Calloway
recommend?'), which numbered no document, asks the same thing of the report(s) the last answer did not
cite, the person read as that report ('What did it recommend?'): before, it searched every document as
'What about the other report?' and said the documents say nothing. With two reports and with three."""

from __future__ import annotations

import pytest

from raptor_engine.query.followup import quotes_in
from tests.test_followup_other_document import RECOMMENDED, THREE, TWO, conversation
from tests.unhurried import engine_with

PIKE_1902 = """# Harbour report 1902

Rowan Pike argued that the piers of the Kessel Bridge would silt up the channel.
"""
MINUTES = """# Harbour committee minutes, Q2

Present: Joan Petrie (chair), eleven members.

The committee agreed to raise the mooring fee to 40 pounds. The budget for repairs was set at 12,000 pounds.
"""
PIKE_1915 = """# Harbour report 1915

Rowan Pike argued for a tunnel under the Ambry instead of a second bridge.
"""


@pytest.fixture(scope="module")
def engines(tmp_path_factory, embedder):
    made = {}
    pike = {"p1902.md": PIKE_1902, "p1915.md": PIKE_1915}
    for key, texts in ((2, TWO), (3, THREE), ("pike", pike), ("mixed", {**TWO, "minutes.md": MINUTES})):
        made[key] = engine_with(tmp_path_factory.mktemp(f"other{key}"), embedder, texts)
    try:
        yield made
    finally:
        for engine in made.values():
            engine.close()


PERSON = ["What did Ines Calloway recommend?", "What did Dr. Calloway recommend?", "what did calloway recommend?"]
OTHER = [
    "and what about the other report?",
    "what about the other report?",
    "and the other report?",
    "can you check the other report?",
    "how about in the other file?",
    "same for the other document",
    "ok, now the other doc",
]


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("first", PERSON)
@pytest.mark.parametrize("then", OTHER)
async def test_the_other_report_after_a_person_asks_the_same_of_the_reports_not_cited(engines, count, first, then):
    answer = await conversation(engines[count], [first, then])
    rest = sorted(set(THREE if count == 3 else TWO) - {"r2019.md"})
    assert answer.query == "What did it recommend?", answer.query
    assert answer.answered, answer.text
    assert answer.citations and {c.document for c in answer.citations} <= set(rest), answer.text
    assert RECOMMENDED[rest[-1]] in " ".join(quotes_in(answer.text)), answer.text


async def test_a_question_of_its_own_about_the_other_report_is_asked_of_it(engines):
    answer = await conversation(engines[2], ["What did Ines Calloway recommend?", "what did the other report recommend?"])
    assert {c.document for c in answer.citations} == {"r2021.md"}, answer.text
    assert RECOMMENDED["r2021.md"] in " ".join(quotes_in(answer.text)), answer.text


async def test_the_second_report_after_a_person_is_that_report(engines):
    answer = await conversation(engines[3], ["What did Ines Calloway recommend?", "what about the second report?"])
    assert answer.query == "What did it recommend?", answer.query
    assert {c.document for c in answer.citations} == {"r2020.md"}, answer.text


async def test_a_person_the_other_report_names_too_stays_in_the_question(engines):
    answer = await conversation(engines["pike"], ["What did Rowan Pike argue?", "and the other report?"])
    assert answer.query.startswith("What did Rowan Pike argue"), answer.query
    assert len({c.document for c in answer.citations}) == 1 and answer.answered, answer.text


async def test_a_question_no_report_answers_still_says_so(engines):
    answer = await conversation(engines[2], ["How many moorings did Tomas Reyes count?", "and in the other report?"])
    assert {c.document for c in answer.citations} <= {"r2019.md"}, answer.text
    assert not answer.answered, answer.text  # the 2019 report counts no moorings


async def test_the_other_one_after_a_person_is_not_moved_to_a_document(engines):
    answer = await conversation(engines[2], ["What did Ines Calloway recommend?", "and the other one?"])
    assert "it recommend" not in answer.query, answer.query


@pytest.mark.parametrize("then", ["and what about the other report?", "same for the other report"])
async def test_the_other_report_is_a_report_when_minutes_are_beside_the_reports(engines, then):
    answer = await conversation(engines["mixed"], ["What did Ines Calloway recommend?", then])
    assert answer.query == "What did it recommend?", answer.query
    assert {c.document for c in answer.citations} == {"r2021.md"} and answer.answered, answer.text
