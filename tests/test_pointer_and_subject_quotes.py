"""Two paper rules of the extractive answer's quote score: a sentence that only points at a table, figure,
equation or section ('Table 3 shows the results.') loses POINTER_PENALTY, and for 'how is X done?' or 'what
does X consist of?' a sentence that opens with X ('Each chunk consists of ...') gains SUBJECT_BONUS."""

from __future__ import annotations

import pytest

from raptor_engine.ingest.sentences import stem
from raptor_engine.query.answer import (
    POINTER_PENALTY,
    SUBJECT_BONUS,
    asked_subject,
    form_score,
    only_points,
    stated_form_score,
)
from raptor_engine.query.followup import split_standalone, standalone_question
from raptor_engine.types import Turn
from tests.test_markup_quotes import quote_scores


@pytest.mark.parametrize(
    "text",
    [
        "Table 3 shows the results.",
        "Figure FIGREF10 illustrates the UTCNN model.",
        "Tables 2 and 3 show the results of the baselines.",
        "Fig. 4 depicts the architecture of the encoder.",
        "The score of each word is calculated as in (4).",
        "Using the training data only, the polarity score is calculated as in (DISPLAY_FORM4).",
        "Results are shown in Table TABREF38 .",
        "The details are given in Section 3.4.",
        "We obtained varying accuracies as shown in Table IV.",
    ],
)
def test_a_sentence_that_only_points_elsewhere(text):
    assert only_points(text)


@pytest.mark.parametrize(
    "text",
    [
        "Table 2 shows that our model beats every baseline.",  # states the finding
        "Table 4 shows the same: a 21% gain in accuracy.",
        "Table 3 shows an accuracy of 91.2 on the test set.",  # a figure of its own
        "10 reports were filed with the council that year.",  # a number opening, no table
        "The door was shown in Figure 2 of the brochure we were given.",  # the pointer is not what it says
        "We evaluate on three datasets and report accuracy.",
        "The table shows a crack along its left leg.",  # a table, not a numbered one
    ],
)
def test_a_sentence_that_says_something_itself_is_no_pointer(text):
    assert not only_points(text)


@pytest.mark.parametrize(
    ("question", "head"),
    [
        ('How is a "chunk of posts" defined in this work?', "chunk"),
        ("How are chunks defined?", "chunk"),
        ("How was the dataset collected?", "dataset"),
        ("How are the supervised scores of the words calculated?", "score"),
        ("What does an individual model consist of?", "model"),
        ("How were the annotators chosen for the task?", "annotators"),
    ],
)
def test_the_asked_subject(question, head):
    assert asked_subject(question) == stem(head)


@pytest.mark.parametrize(
    "question",
    ["How is it done?", "How did they obtain the dataset?", "What is a chunk?", "How many chunks are there?"],
)
def test_no_subject_for_other_questions(question):
    assert asked_subject(question) is None


def test_a_sentence_opening_with_the_subject_gains_in_both_form_scores():
    question = "How is a chunk defined?"
    opens = "Each chunk consists of a sorted sequence of tweets from one account."
    uses = "We extract a set of features from each chunk and feed them to a network."
    for score in (form_score, stated_form_score):
        assert score(question, opens) - score(question, uses) == pytest.approx(SUBJECT_BONUS)
    assert form_score("What is a chunk?", opens) == form_score("What is a chunk?", uses)


POINTER = "Table 3 shows the statistics of the collected dataset."
STATES = "The dataset holds 171 accounts and 522,967 tweets collected over two years."
OTHER = "We train the model with Adam for ten epochs on a single graphics card."


def _scores(embedder, question: str, history: list[Turn], penalty: float, monkeypatch) -> dict[str, float]:
    texts = (f"{POINTER} {OTHER}", STATES)
    return quote_scores(embedder, question, history, texts, monkeypatch, POINTER_PENALTY=penalty)


def test_a_pointer_loses_the_penalty_and_other_sentences_nothing(embedder, monkeypatch):
    question = "How big is the dataset?"
    without = _scores(embedder, question, [], 0.0, monkeypatch)
    shipped = _scores(embedder, question, [], POINTER_PENALTY, monkeypatch)
    assert shipped[POINTER] == pytest.approx(without[POINTER] - POINTER_PENALTY)
    assert shipped[STATES] == pytest.approx(without[STATES])
    assert shipped[OTHER] == pytest.approx(without[OTHER])


def test_a_question_about_a_table_a_follow_up_and_the_whole_are_ranked_as_before(embedder, monkeypatch):
    history = [
        Turn("user", "What dataset do they use?"),
        Turn("assistant", "From the documents:\n- \u201cWe use a dataset of tweets.\u201d [1]"),
    ]
    follow_up = standalone_question("How big is it?", history)
    assert split_standalone(follow_up).context  # read as a follow-up, with the question it follows
    asked = ((follow_up, history), ("What is this paper about?", []), ("What does Table 3 show?", []))
    for question, turns in asked:
        without = _scores(embedder, question, turns, 0.0, monkeypatch)
        shipped = _scores(embedder, question, turns, POINTER_PENALTY, monkeypatch)
        assert shipped == pytest.approx(without)
