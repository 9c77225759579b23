"""qa18: follow-ups that name a document by a year or a label its title holds ('same for the 2021
report', 'and in the 2019 one?', 'what about the Q3 review?'), by its place ('the first one', the second
of the sources the last answer listed), comparisons with another year or quarter ('was that more than in
2019?', 'is that higher than last quarter?'), slips of question words ('whne', 'teh', 'aftr') and 'they'
for the people a who-question's answer named together. Played through the real engine (no model)."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine import Turn
from raptor_engine.engine import _labelled_document
from raptor_engine.query.followup import quotes_in, standalone_question
from raptor_engine.query.respell import question_word
from tests.test_followup_other_document import conversation  # asks of the knowledge base "harbour"
from tests.unhurried import engine_with

# each report says its year in its title only; the body's figures differ
SURVEY_2019 = """# Marina survey 2019

Prepared by Ines Calloway for the marina board.

The survey counted 180 moorings, and the waiting list had 20 names.
Calloway recommended closing the north pier to vehicles.
"""
SURVEY_2021 = """# Marina survey 2021

Prepared by Tomas Reyes for the marina board.

The survey counted 230 moorings, and the waiting list had 55 names.
Reyes recommended dredging the inner basin.
"""
SALES_Q2 = """# Sales review, Q2

Prepared by Lena Okafor.

Sales of the garden range reached 3,200 units after the spring launch.
"""
SALES_Q3 = """# Sales review, Q3

Prepared by Lena Okafor.

Sales of the garden range rose to 4,100 units, helped by a dry summer.
"""
KEEPERS = """# The lighthouse on Skerry

Jude Penhallow and Ansel Trask kept the Skerry light from 1890. The keepers' cottage stood below the tower.

In the great storm of 1894 the lamp failed twice. Jude climbed the tower each time, and she relit the lamp by hand.
"""
# added in this order: the 2021 survey before the 2019 one, so add order and year order differ
TEXTS = {"keepers.md": KEEPERS, "m2021.md": SURVEY_2021, "m2019.md": SURVEY_2019, "q2.md": SALES_Q2, "q3.md": SALES_Q3}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("labels"), embedder, TEXTS)
    try:
        yield engine
    finally:
        engine.close()


RECOMMENDED = {"m2019.md": "closing the north pier", "m2021.md": "dredging"}
R2019 = "What did the 2019 survey recommend?"
R2021 = "What did the 2021 survey recommend?"


@pytest.mark.parametrize(
    ("first", "then", "document", "quoted"),
    [
        (R2019, "same for the 2021 survey", "m2021.md", "dredging"),
        (R2021, "and in the 2019 one?", "m2019.md", "closing the north pier"),
        (R2021, "what about the 2019 survey?", "m2019.md", "closing the north pier"),
        (R2021, "and in 2019?", "m2019.md", "closing the north pier"),
        ("What did the Q2 review say about garden sales?", "what about the Q3 review?", "q3.md", "4,100"),
        ("How many units of the garden range were sold in Q2?", "and the Q3 review?", "q3.md", "4,100"),
    ],
)
async def test_a_document_named_by_a_year_or_label_is_the_one_whose_title_holds_it(engine, first, then, document, quoted):
    answer = await conversation(engine, [first, then])
    assert {citation.document for citation in answer.citations} == {document}, (answer.query, answer.text)
    assert quoted in " ".join(quotes_in(answer.text)), answer.text


@pytest.mark.parametrize("questions", [[R2019, "same for the 2021 survey"], [R2021]])
async def test_the_report_named_by_its_year_is_asked_of_as_it(engine, questions):
    answer = await conversation(engine, questions)
    assert answer.query == "What did it recommend?"
    assert answer.answered, answer.text  # 'The documents say nothing about this' when asked of every document
    assert RECOMMENDED["m2021.md"] in " ".join(quotes_in(answer.text)), answer.text


async def test_a_first_question_naming_the_second_report_moves_nothing(engine):
    answer = await conversation(engine, ["What did the second survey recommend?"])
    assert answer.query == "What did the second survey recommend?"


@pytest.mark.parametrize(
    ("then", "document"),
    [("and the first one?", "m2021.md"), ("what about the second survey?", "m2019.md"), ("the last survey", "m2019.md")],
)
async def test_the_nth_survey_counts_the_documents_whose_title_says_survey_in_added_order(engine, then, document):
    answer = await conversation(engine, [R2019, then])
    assert {citation.document for citation in answer.citations} == {document}, (answer.query, answer.text)


def test_the_nth_document_is_the_nth_source_the_last_answer_cited_when_it_cited_several(engine):
    kb_id = engine.store.kb_id("harbour")
    both = [Turn("user", "How many moorings were counted?"),
            Turn("assistant", "From the documents:\n- \u201cThe survey counted 180 moorings, and the waiting list had 20 "
                 "names.\u201d [1]\n- \u201cThe survey counted 230 moorings, and the waiting list had 55 names.\u201d [2]")]
    named = list(TEXTS)
    assert engine._nth_document(kb_id, "first", "survey", named, both) == "m2019.md"  # as the sources listed them
    assert engine._nth_document(kb_id, "second", "survey", named, both) == "m2021.md"
    assert engine._nth_document(kb_id, "first", "survey", named, both[:1]) == "m2021.md"  # added first
    assert engine._nth_document(kb_id, "third", "survey", named, both[:1]) is None


def test_a_label_several_titles_hold_or_none_names_no_document():
    openings = {"a.md": (("Sales review, Q2 2022",), ""), "b.md": (("Sales review, Q3 2022",), ""), "r2019.md": ((), "")}
    assert _labelled_document("Q3", openings, list(openings)) == "b.md"
    assert _labelled_document("2019", openings, list(openings)) == "r2019.md"  # by its file name
    assert _labelled_document("2022", openings, list(openings)) is None  # both
    assert _labelled_document("Q4", openings, list(openings)) is None
    assert _labelled_document("201", openings, list(openings)) is None  # no part of a number


@pytest.mark.parametrize(
    ("first", "then", "searched"),
    [
        ("How many moorings did the 2021 survey count?", "was that more than in 2019?", "How many moorings did the 2019 survey count?"),
        ("How many moorings did the 2021 survey count?", "is that higher than last year?", "How many moorings did the 2020 survey count?"),
        ("How many moorings were counted in 2021?", "how does that compare with 2019?", "How many moorings were counted in 2019?"),
        ("How many moorings were counted in 2021?", "and compared to the 2019 figure?", "How many moorings were counted in 2019?"),
        ("How many garden units were sold in Q3?", "is that higher than last quarter?", "How many garden units were sold in Q2?"),
        ("How many garden units were sold in Q3?", "was it less than in Q2?", "How many garden units were sold in Q2?"),
        ("How many visitors did the Ashby site have?", "how does that compare with the other site?",
         "How many visitors did the other site have?"),
    ],
)
def test_a_comparison_with_another_time_asks_the_same_of_it_beside_the_last_question(first, then, searched):
    history = [Turn("user", first), Turn("assistant", "\u201cThe figure was 230.\u201d [1]")]
    assert standalone_question(then, history) == f"{searched} (context: {first})"


def test_a_comparison_with_a_number_or_another_thing_of_no_such_kind_asks_the_last_question_again():
    history = [Turn("user", "How many moorings did the 2021 survey count?"), Turn("assistant", "\u201c230.\u201d [1]")]
    assert standalone_question("is that more than 200?", history) == "How many moorings did the 2021 survey count?"
    assert standalone_question("how does that compare with the other site?", history) == (
        "How many moorings did the 2021 survey count?"
    )


async def test_a_comparison_with_another_year_quotes_both_figures(engine):
    answer = await conversation(engine, ["How many moorings did the 2021 survey count?", "was that more than in 2019?"])
    quoted = " ".join(quotes_in(answer.text))
    assert "230 moorings" in quoted and "180 moorings" in quoted, answer.text


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("teh", "the"), ("aftr", "after"), ("wat", "what"), ("becuase", "because"), ("whne", "when"), ("waht", "what"),
     ("thier", "their"), ("tehy", "they"), ("the", None), ("hte", "the"), ("wehn", "when")],
)
def test_a_slip_of_a_question_word_is_that_word(typed, meant):
    assert question_word(typed) == meant


@pytest.mark.parametrize(
    ("then", "searched"),
    [
        ("whne did they build the cottage?", "When did Jude Penhallow and Ansel Trask build the cottage?"),
        ("what did they do aftr teh storm?", "What did Jude Penhallow and Ansel Trask do after the storm?"),
        ("why did she climb the tower, becuase of the lamp?", "Why did Jude Penhallow climb the tower, because of the lamp?"),
    ],
)
async def test_slips_of_question_words_in_a_follow_up_are_respelled(engine, then, searched):
    answer = await conversation(engine, ["Who kept the Skerry light?", then])
    assert answer.query.startswith(searched), answer.query


def test_a_question_word_slip_the_documents_use_or_a_real_word_is_left_as_written(engine):
    assert engine.respelled("harbour", "what form did the cottage take?") == "what form did the cottage take?"
    assert engine.respelled("harbour", "what did the cousin do aftr 1890?") == "what did the cousin do after 1890?"
    asyncio.run(engine.ingest("teh", "teh.md", b"# Teh\n\nTeh Penhallow was Jude's cousin and rowed the boat.\n"))
    assert engine.respelled("teh", "what did teh cousin do aftr 1890?") == "what did teh cousin do after 1890?"
    assert engine.respelled("teh", "whne did teh row?") == "when did teh row?"


@pytest.mark.parametrize(
    ("then", "searched"),
    [
        ("what did they do in the storm?", "What did Jude Penhallow and Ansel Trask do in the storm?"),
        ("where did they live?", "Where did Jude Penhallow and Ansel Trask live?"),
    ],
)
async def test_they_after_a_who_question_answered_with_two_people_is_both(engine, then, searched):
    answer = await conversation(engine, ["Who kept the Skerry light?", then])
    assert answer.query.startswith(searched), answer.query


def test_they_after_another_question_or_one_person_is_left_to_the_context():
    one = [Turn("user", "Who prepared the Q3 review?"), Turn("assistant", "\u201cPrepared by Lena Okafor.\u201d [1]")]
    assert standalone_question("what did they say?", one).startswith("What did they say? (context:")
    what = [Turn("user", "What happened in 1890?"),
            Turn("assistant", "\u201cJude Penhallow and Ansel Trask kept the Skerry light from 1890.\u201d [1]")]
    assert "Jude Penhallow and Ansel Trask" not in standalone_question("what did they do?", what)


def test_a_document_named_after_a_preposition_leaves_the_question_with_it():
    from raptor_engine.engine import _THE_LABELLED, _THE_OTHER, _the_document

    def moved(query, pattern):
        return _the_document(query, pattern.search(query))

    assert moved("What did the committee agree in the Q1 minutes?", _THE_LABELLED) == "What did the committee agree?"
    assert moved("Who was present at the Q2 meeting?", _THE_LABELLED) == "Who was present?"
    assert moved("What did the 2021 report recommend?", _THE_LABELLED) == "What did it recommend?"
    assert moved("What is in the other report?", _THE_OTHER) == "What is in it?"  # nothing would be left


def test_and_in_the_2019_one_after_why_renumbers_the_question_why_leaned_on():
    history = [Turn("user", R2021), Turn("assistant", "\u201cReyes recommended dredging.\u201d [1]"),
               Turn("user", "why?"), Turn("assistant", "\u201cSilt had built up.\u201d [1]")]
    assert standalone_question("and in the 2019 one?", history) == R2019


@pytest.mark.parametrize(
    ("first", "then", "searched"),
    [
        ("What did the Q2 minutes say about vacant plots?", "and Q1?", "What did the Q1 minutes say about vacant plots?"),
        ("What did the committee agree in Q2?", "and in the previous quarter?", "What did the committee agree in Q1?"),
        ("How many loaves were sold in 2023?", "and the year before?", "How many loaves were sold in 2022?"),
        ("How many loaves were sold in 2023?", "what about last year?", "How many loaves were sold in 2022?"),
        ("What did the 2022 report recommend?", "what abt the 2023 one?", "What did the 2023 report recommend?"),
        ("How many loaves were sold?", "and last year?", "Last year? (context: How many loaves were sold?)"),
    ],
)
def test_a_time_alone_asks_the_last_question_of_that_time(first, then, searched):
    history = [Turn("user", first), Turn("assistant", "\u201cThe figure was 230.\u201d [1]")]
    assert standalone_question(then, history).startswith(searched)


def test_no_quarter_before_the_first_is_made_up():
    history = [Turn("user", "What did the committee agree in Q1?"), Turn("assistant", "\u201cRent.\u201d [1]")]
    assert "Q0" not in standalone_question("and the quarter before?", history)
    assert "Q0" not in standalone_question("was that more than the previous quarter?", history)


def test_a_comparison_with_a_years_figure_written_with_an_apostrophe_is_that_year():
    history = [Turn("user", "How many loaves were sold in 2023?"), Turn("assistant", "\u201c52,500.\u201d [1]")]
    assert standalone_question("is that bigger than 2022's figure?", history) == (
        "How many loaves were sold in 2022? (context: How many loaves were sold in 2023?)"
    )


async def test_a_label_after_in_names_the_document_unless_a_comparison_wants_both(engine):
    asked = await conversation(engine, ["How many units of the garden range were sold in Q3?"])
    assert asked.query == "How many units of the garden range were sold?"
    assert {citation.document for citation in asked.citations} == {"q3.md"}, asked.text
    compared = await conversation(engine, ["How many units of the garden range were sold in Q3?", "is that higher than in Q2?"])
    quoted = " ".join(quotes_in(compared.text))
    assert "4,100" in quoted and "3,200" in quoted, compared.text
    year = await conversation(engine, ["What happened in 1894?"])  # a year is a time the text tells of
    assert year.query == "What happened in 1894?"


@pytest.mark.parametrize(
    ("then", "searched"),
    [
        ("and what did the other one say?", "What did the other survey say?"),
        ("who prepared the other file?", "Who prepared the other survey?"),
        ("what did the other site say?", "What did the other site say? (context:"),  # no document
    ],
)
def test_the_other_one_inside_a_question_is_the_other_numbered_document(then, searched):
    history = [Turn("user", R2021), Turn("assistant", "\u201cReyes recommended dredging the inner basin.\u201d [1]")]
    assert standalone_question(then, history).startswith(searched)
    ferry = [Turn("user", "When did the 3 pm ferry leave?"), Turn("assistant", "\u201cAt three.\u201d [1]")]
    assert "the other one" in standalone_question("and when did the other one leave?", ferry)


async def test_the_other_survey_is_asked_of_the_other_surveys_only(engine):
    answer = await conversation(engine, [R2021, "and what did the other one recommend?"])
    assert answer.query == "What did it recommend?"
    assert {citation.document for citation in answer.citations} == {"m2019.md"}, answer.text
