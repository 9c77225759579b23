"""What a question asks (query/asked.py): filler, the document named and a pasted paragraph taken off;
what is asked kept."""

from __future__ import annotations

import pytest

from raptor_engine.query.asked import (
    LONG_QUESTION_CHARS,
    in_brief,
    named_files,
    question_sentences,
    what_is_asked,
    without_asides,
)

DOCUMENTS = {"manual.md", "minutes.md", "report_2021.pdf", "lighthouse_keepers.md"}


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("can you please tell me who chaired the meeting?", "Who chaired the meeting?"),
        ("hi! who chaired the meeting? thanks!", "Who chaired the meeting?"),
        ("Hey there could you please tell me who designed the tower? Thanks so much!", "Who designed the tower?"),
        ("I was wondering if you could tell me who designed the tower, thanks!", "Who designed the tower?"),
        ("quick question: who designed the tower?", "Who designed the tower?"),
        ("I was wondering, when will the troughs be cleaned?", "When will the troughs be cleaned?"),
        ("what does manual.md say about the tines?", "What about the tines?"),
        ("according to minutes.md, who chaired the meeting?", "Who chaired the meeting?"),
        ("in report_2021.pdf, what was revenue?", "What was revenue?"),
        ("what was revenue in report_2021.pdf?", "What was revenue?"),
        ("according to lighthouse_keepers.md, who designed the tower?", "Who designed the tower?"),
        ("according to the handbook, how often is the lens cleaned?", "How often is the lens cleaned?"),
        ("what does the manual say about the tines?", "What about the tines?"),
        # a request's frame after the document's: off too
        ("according to minutes.md, can you tell me who chaired the meeting?", "Who chaired the meeting?"),
        ("according to the handbook, could you tell me how often it is cleaned? thanks", "How often it is cleaned?"),
    ],
)
def test_words_that_ask_nothing_are_taken_off(question, asked):
    assert what_is_asked(question, DOCUMENTS) == asked


@pytest.mark.parametrize(
    "question",
    [
        "Who wrote the report?",  # the document is what is asked about
        "who took the minutes?",  # a document's stem as an ordinary word, outside a frame
        "Tell me about the tines",
        "What is in the file?",  # nothing would be left to ask
        "in report_2022.pdf, what was revenue?",  # a file the documents are not called
        "According to the author, does the public receive any blame?",
        "Question marks: what are they for?",
        "Who is the narrator in the story?",  # a common noun at the end is often what is asked about
        'The text says "The expert frowned horribly." What makes the smile so horrible?',
    ],
)
def test_what_is_asked_is_kept(question):
    assert what_is_asked(question, DOCUMENTS) == question


def test_a_file_is_named_by_its_name_anywhere_and_by_an_ordinary_word_only_in_a_frame():
    assert named_files("what does manual.md say about the tines?", DOCUMENTS) == {"manual.md"}
    assert named_files("according to the manual, how often?", DOCUMENTS) == {"manual.md"}
    assert named_files("what was revenue in report 2021?", DOCUMENTS) == {"report_2021.pdf"}
    assert named_files("who took the minutes?", DOCUMENTS) == set()
    assert named_files("what is a manual gearbox?", DOCUMENTS) == set()


def test_a_long_question_is_its_questions_and_a_short_one_all_of_its_sentences():
    paragraph = "We bought a rotavator last spring and use it on the clay beds near the gate most weekends. " * 4
    assert len(paragraph) > LONG_QUESTION_CHARS
    long = paragraph + "How often should the tines be cleaned? How often should the tines be cleaned?"
    assert question_sentences(long) == "How often should the tines be cleaned?"
    assert question_sentences(paragraph) == paragraph  # no question among them: all of it
    short = 'The text says "The expert frowned horribly." What makes his smile horrible?'
    assert question_sentences(short) == short
    assert without_asides(long) == "How often should the tines be cleaned?"


def test_ranking_keeps_a_common_noun_for_the_document():
    """'the story' helps find the story's sentences: only the lead line leaves it out, and only where it
    names whom the question is asked of."""
    question = "According to the story, who is the narrator?"
    assert without_asides(question) == question
    assert what_is_asked(question) == "Who is the narrator?"


@pytest.mark.parametrize(
    ("question", "ranked"),
    [
        ("according to minutes.md, can you tell me who chaired the meeting?", "Who chaired the meeting?"),
        ("in report_2021.pdf, could you please tell me what revenue was? thanks", "What revenue was?"),
        ("what does manual.md say about the tines?", "What about the tines?"),
        # a common noun's frame stays for ranking, and so does the request behind it
        (
            "according to the handbook, could you tell me how often it is cleaned?",
            "according to the handbook, could you tell me how often it is cleaned?",
        ),
    ],
)
def test_ranking_strips_a_request_behind_a_named_file_as_the_lead_line_does(question, ranked):
    """The search ranks with what the lead line judges, but for a common noun for the document: a
    request's frame after a file's name goes from both ('Can you tell me who ...' ranked with 'can you
    tell me' as words of the question)."""
    assert without_asides(question, DOCUMENTS) == ranked
    assert what_is_asked(question, DOCUMENTS) == what_is_asked(ranked, DOCUMENTS)


@pytest.mark.parametrize(
    ("question", "brief"),
    [
        ("How do I start the rotavator?", "How do I start the rotavator?"),
        (("how do I start the rotavator, " * 120).rstrip(", ") + "?", "How do I start the rotavator?"),
        ("how do I start the rotavator, " * 100 + "how do I start…", "How do I start the rotavator, how do I start"),
        (("how do I start it, what oil does it take, " * 90).rstrip(", ") + "?", "How do I start it, what oil does it take?"),
        ("We bought a rotavator in May. " * 90 + "How often should the tines be cleaned?",
         "How often should the tines be cleaned?"),
        ("We bought a rotavator in May and it ran well all summer. " * 60, "We bought a rotavator in May and it ran well all summer."),
    ],
)
def test_a_long_question_in_brief_is_what_it_asks(question, brief):
    """What a later follow-up reads of an earlier question (bot/answering.py `in_context`)."""
    assert in_brief(question) == brief


def test_a_long_question_in_brief_is_bounded_and_cut_at_a_word():
    for question in ("word " * 900, "x" * 3000, "why " + "very " * 700 + "slow?"):
        brief = in_brief(question)
        mark = "?" if question.endswith("?") else ""  # a question keeps its "?" after the cut ("…?")
        assert len(brief) <= LONG_QUESTION_CHARS + 1 and brief.endswith("…" + mark), brief[-20:]
        kept = brief.removesuffix("…" + mark)
        assert question.startswith(kept) and question[len(kept)] in " x", brief[-20:]
