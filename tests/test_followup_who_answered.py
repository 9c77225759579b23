"""qa24: 'when?' (or 'where?', 'what year?', 'how old?') after a who-question ('Who was elected treasurer?')
was asked with the question as context ('When? (context: Who was elected treasurer?)'), so it was searched
for no one: the follow-up means 'when was <the person the last answer named> elected treasurer?'. Now it is
asked of the one a quote names as doing what was asked ('Colin Ashworth stood down as treasurer and Joan
Pryce was elected in his place': Joan Pryce), and the answer's quotes are about that person."""

from __future__ import annotations

import pytest

from raptor_engine.query.followup import standalone_question
from raptor_engine.types import Turn
from tests.followup_documents_qa24 import TEXTS
from tests.test_followup_other_document import conversation
from tests.unhurried import engine_with

ELECTED = "Colin Ashworth stood down as treasurer and Joan Pryce was elected in his place."
BOARD = "In 1902 he left Port Lenning. His daughter, Clara Pike, became the first woman on the harbour board in 1931."
FOUNDED = "The clinic was founded by Dr Priya Nair in 2009. Owen Fletcher joined as senior physiotherapist in 2014."
CHAIR = "Grace Okonkwo was elected chair, replacing Martin Hale, who had chaired the committee since 2016."


def _after(asked: str, quote: str, follow_up: str) -> str:
    answer = f"From the documents:\n- \u201c{quote}\u201d [1]"
    return standalone_question(follow_up, [Turn("user", asked), Turn("assistant", answer)])


@pytest.mark.parametrize(
    ("asked", "quote", "follow_up", "standalone"),
    [
        ("Who was elected treasurer?", ELECTED, "when?", "When was Joan Pryce elected treasurer?"),
        ("Who was elected treasurer?", ELECTED, "and where?", "Where was Joan Pryce elected treasurer?"),
        ("Who was elected treasurer?", ELECTED, "what year?", "What year was Joan Pryce elected treasurer?"),
        ("Who was elected treasurer?", ELECTED, "how old?", "How old was Joan Pryce when elected treasurer?"),
        ("Who was elected chair?", CHAIR, "when?", "When was Grace Okonkwo elected chair?"),
        ("Who was re-elected treasurer?", "Leo Baptiste was re-elected treasurer.", "when?",
         "When was Leo Baptiste re-elected treasurer?"),
        ("Who became the first woman on the harbour board?", BOARD, "when?",
         "When did Clara Pike become the first woman on the harbour board?"),
        ("Who became the first woman on the harbour board?", BOARD, "how old?",
         "How old was Clara Pike when she became the first woman on the harbour board?"),
        ("Who joined as senior physiotherapist?", FOUNDED, "ok when?",
         "When was it that Owen Fletcher joined as senior physiotherapist?"),
    ],
)
def test_a_time_or_place_after_a_who_question_is_asked_of_the_person_answered(asked, quote, follow_up, standalone):
    assert _after(asked, quote, follow_up) == standalone


@pytest.mark.parametrize(
    ("asked", "quote", "follow_up", "standalone"),
    [
        # no quote names who did it: the question stays the context
        ("Who was elected treasurer?", "Three wins.", "when?", "When? (context: Who was elected treasurer?)"),
        ("Who was elected treasurer?", "The treasurer is elected each October.", "when?",
         "When? (context: Who was elected treasurer?)"),
        # the question names its person already, or asks of a thing: as before
        ("Who founded Marrow's Bakery?", "Alfred Marrow founded Marrow's Bakery.", "when?", "When was Marrow's Bakery founded?"),
        ("Who was elected treasurer?", ELECTED, "who?", "Who? (context: Who was elected treasurer?)"),
    ],
)
def test_no_person_is_carried_where_no_quote_names_the_doer(asked, quote, follow_up, standalone):
    assert _after(asked, quote, follow_up) == standalone


def test_an_answer_that_found_nothing_carries_no_one():
    answer = "Nothing in the documents clearly answers this; the closest passages are:\n- \u201c" + ELECTED + "\u201d [1]"
    history = [Turn("user", "Who was elected treasurer?"), Turn("assistant", answer)]
    assert standalone_question("when?", history) == "When? (context: Who was elected treasurer?)"


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("who_answered"), embedder, TEXTS)
    try:
        yield engine
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("questions", "query", "named"),
    [
        (["Who was elected chair?", "when?"], "When was Grace Okonkwo elected chair?", "Grace Okonkwo"),
        (["Who became the project's lead maintainer?", "when?"],
         "When did Ravi Menon become the project's lead maintainer?", "Ravi Menon"),
        (["Who became the first plot holder to win the county vegetable show?", "when?"],
         "When did Fatima Khan become the first plot holder to win the county vegetable show?", "Fatima Khan"),
    ],
)
async def test_the_follow_up_is_searched_for_the_person_and_quotes_them(engine, questions, query, named):
    answer = await conversation(engine, questions)
    assert answer.query == query
    quotes = [line for line in answer.text.split("\n") if line.startswith("- ")]
    assert quotes and all(named in line for line in quotes), answer.text  # no dated quote about anything else


@pytest.mark.parametrize(
    ("question", "thematic"),
    [
        ("Who became the first plot holder to win the county vegetable show?", False),
        ("How much does a full plot cost?", False),
        ("Who holds plot 7?", False),
        ("and a half plot?", False),
        ("What is the plot?", True),
        ("What is the plot of the story?", True),
        ("summarise the plot and the themes", True),
    ],
)
def test_a_gardens_plot_is_no_storys_plot(question, thematic):
    """'the first plot holder' read as a question about a story's plot, and was answered with the opening
    sentence of every document."""
    from raptor_engine.ingest.sentences import THEMATIC

    assert bool(THEMATIC.search(question)) is thematic


def test_a_unit_after_a_number_is_no_thing_it_stands_for_but_a_numbered_label_is():
    """'what did it introduce?' after 'Does version 2.0 need more than 2 GB of memory?' was searched as 'What
    did GB introduce?': 'it' is version 2.0, a thing named by a noun and its number, as 'plot 7' is."""
    asked = "Does version 2.0 need more than 2 GB of memory?"
    standalone = _after(asked, "Version 2.0 raised the minimum memory to 4 GB.", "what did it introduce?")
    assert standalone == "What did version 2.0 introduce?"
    assert _after("Is 20 GB enough?", "It is.", "what does it cost?") == "What does it cost? (context: Is 20 GB enough?)"
    assert _after("Who holds plot 7?", "Joan holds plot 7.", "how big is it?") == "How big is plot 7?"
    assert _after("When did Kestrel Optics close?", "It closed in 1990.", "what did it make?") == "What did Kestrel Optics make?"
