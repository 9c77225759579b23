"""qa25's outside pass: answers that said "From the documents:" over quotes that do not answer, a question
about one document's whole that quoted every document's opening, and a row of an error-code table that lost
its section because the leaf holding it spans two sections of an HTML page."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine.engine import thematic_document
from raptor_engine.query.answer import (
    _candidates,
    _counts_the_asked,
    _measures_the_asked,
    asked_thing,
    counted_terms,
)
from raptor_engine.types import ContextNode
from tests.documents_qa25 import PAPER, TEXTS
from tests.unhurried import engine_with

LEAF = (
    "The console is for indoor use only and is not waterproof.\n\n{heading}\n\n"
    "- Code: E1; Meaning: No signal from the sensor; What to do: Check the sensor batteries."
)
OPENINGS = {
    "handbook.md": (
        ("Brackenfield Print Co.: Employee Handbook",),
        "Brackenfield Print Co. is a printing company.",
    ),
    "mill_history.txt": (
        (),
        "The Weir Mill at Cranleigh Bridge: A Short History\n\nThe village sits by the river.",
    ),
    "minutes.docx": (
        ("Holmebrook Tenants' Association: Minutes of the Committee Meeting",),
        "Held on 14 January.",
    ),
    "paper.md": (("Mulch Type and Soil Moisture in Raised Beds",), "We compared four mulches."),
}


@pytest.mark.parametrize(
    ("question", "document"),
    [
        ("What is this handbook about?", "handbook.md"),
        ("What is the history about?", "mill_history.txt"),
        ("What were the minutes about?", "minutes.docx"),
        ("Summarise the paper.", "paper.md"),  # by its file name
        ("Give me an overview of the employee handbook", "handbook.md"),
        ("What is this document about?", None),  # names no one document
        ("What is the central theme?", None),
        ("Compare the handbook and the minutes: what are they about?", None),  # two
    ],
)
def test_a_question_about_the_whole_names_one_document(question, document):
    assert thematic_document(question, OPENINGS, list(OPENINGS)) == document


@pytest.mark.parametrize(
    ("question", "sentence", "measures"),
    [
        ("How long is the warranty?", "The station has a two-year warranty from the date of purchase.", True),
        ("How long is the warranty?", "The station has a 2-year warranty.", True),
        ("How far is the walk?", "It is a five-mile walk along the cliffs.", True),
        ("How long is the drive?", "It is a thirty-five-minute drive.", True),
        ("How long is the warranty?", "The warranty is transferable to a second owner.", False),
        # units by their abbreviations: quotes that give them answered under 'Nothing ... clearly answers'
        ("How deep was the straw mulch?", "Straw mulch was laid 8 cm deep, wood chip 5 cm deep.", True),
        ("How much does the console weigh?", "Console size: 18 cm by 12 cm by 3 cm; weight 340 g.", True),
        ("How long is the bed?", "Each bed is 2.4 m by 1.2 m and 30 cm deep.", True),
    ],
)
def test_a_number_word_hyphened_to_its_unit_is_a_measure(question, sentence, measures):
    assert _measures_the_asked(question, sentence) is measures


def test_a_number_word_of_two_parts_still_counts():
    assert counted_terms("How many men were lost?") == frozenset({"men"})
    assert _counts_the_asked("How many men were lost?", "Twenty-one men were lost that night.")


@pytest.mark.parametrize(
    ("question", "thing"),
    [
        ("Is there an app for the weather station?", {"app"}),
        ("Does the company pay for gym membership?", {"gym", "membership"}),
        ("Are there any showers?", {"shower"}),
        ("Who founded the company?", set()),
    ],
)
def test_the_thing_an_is_there_question_asks_after(question, thing):
    assert asked_thing(question) == thing


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("answer_honest"), embedder, TEXTS)
    try:
        yield engine
    finally:
        engine.close()


@pytest.mark.parametrize(
    "question",
    [
        "How many people died in the 1836 flood?",  # the flood's sentence gives no count; 310 people is of 1860
        "Is there an app for the weather station?",
        "Does the company pay for gym membership?",
    ],
)
async def test_quotes_that_do_not_give_what_is_asked_are_only_the_closest(engine, question):
    answer = await engine.ask("harbour", question)
    assert not answer.answered, answer.text
    # a yes/no question says what the documents do not say (qa27), any other that nothing clearly answers it
    assert answer.text.startswith(
        ("Nothing in the documents clearly answers this", "The documents do not say whether")
    ), answer.text


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("How many people work at the company?", "We employ 38"),
        ("How many days of paid holiday do full-time staff get?", "Full-time staff receive 25 days"),
        (
            "How much is the company's pension contribution?",
            "The company contributes 5%",
        ),  # any number, not a unit's
        (
            "How high should the sensor unit be mounted?",
            "Mount the sensor unit on the pole at least 1.5 metres",
        ),
        ("How many people did the mill employ when it opened?", "When it opened"),
        ("How much did Edward Fenwick spend on the weir?", "Edward Fenwick rebuilt the weir"),
        ("Is the console waterproof?", "The console is for indoor use only"),
        ("Did Edward Fenwick have children?", "Edward Fenwick had no children."),
    ],
)
async def test_quotes_that_give_what_is_asked_still_answer(engine, question, first):
    answer = await engine.ask("harbour", question)
    assert answer.answered, answer.text
    assert answer.text.split("\n")[1].startswith(f"- \u201c{first}"), answer.text


@pytest.mark.parametrize(
    ("text", "section"),
    [
        # an HTML, Word or text document's heading in a leaf that spans two sections: a paragraph of its own
        (LEAF.format(heading="Error codes"), {"error"}),
        (LEAF.format(heading="## Error codes"), {"error"}),  # Markdown's, as before
        # a list item or a line that runs on into the next is no heading of a section
        (LEAF.format(heading="- Error codes"), set()),
        (LEAF.replace("\n\n{heading}\n\n", " ").format(heading=""), set()),
    ],
)
def test_a_row_under_a_heading_line_in_a_leaf_that_spans_sections_is_read_under_it(text, section):
    """'How do I fix error E1?' quoted the E7 row first: the E1 row stands in the leaf that holds the end of
    'Care and maintenance' too, under the plain line 'Error codes', and so had no section; E7's leaf has it."""
    node = ContextNode(
        node_id=1, layer=0, document="manual.html", score=0.5, text=text, tokens=60, leaf_count=1
    )
    node.heading = ("Skylark WS-40 Home Weather Station: User Manual",)
    row = next(c for c in _candidates([node]) if c.text.startswith("Code: E1"))
    assert row.section == section


@pytest.mark.parametrize(
    ("question", "document"),
    [
        ("What is this handbook about?", "handbook.md"),
        ("What is the history about?", "mill_history.txt"),
        ("What were the minutes about?", "minutes.txt"),
    ],
)
async def test_a_question_about_one_documents_whole_quotes_that_document(engine, question, document):
    answer = await engine.ask("harbour", question)
    assert {citation.document for citation in answer.citations} == {document}, answer.text


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("Which mulch reduced weeds the most?", "Treatment: Wood chip;"),  # the fewest weeds, not the most
        ("Which mulch gave the highest yield?", "Treatment: Black plastic;"),
    ],
)
def test_a_verb_of_lowering_turns_a_superlative_round(tmp_path, embedder, question, first):
    engine = engine_with(tmp_path, embedder, {"paper.md": PAPER})
    try:
        answer = asyncio.run(engine.ask("harbour", question))
    finally:
        engine.close()
    assert answer.text.split("\n")[1].startswith(f"- \u201c{first}"), answer.text
