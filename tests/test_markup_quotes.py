"""A sentence holding typesetting source a conversion left in it ('$k=20$', '\\mathbf {r}', 'tab:stats')
ranks below one that says the same in plain words, for a standalone question that is not about the whole."""

from __future__ import annotations

import pytest

from raptor_engine.query import answer
from raptor_engine.query.answer import MARKUP_PENALTY, MARKUP_RESIDUE, ExtractiveAnswerer
from raptor_engine.query.followup import split_standalone, standalone_question
from raptor_engine.query.ranker import load_ranker
from raptor_engine.types import ContextNode, Turn

MARKED = "For prior recipe attention we set $k=20$, the 80th percentile of the number of user interactions."
PLAIN = "We collected the user interactions with the recipes from Food.com over eighteen years."
OTHER = "The model is trained with Adam for ten epochs on a single graphics card in our laboratory."


@pytest.mark.parametrize(
    "text",
    [
        "we set $k=20$, the 80th percentile",
        "a recipe $\\mathbf {r} \\in \\mathbb {R}^{d_r}$ of size d",
        "each item is embedded by \\textbf{w} before pooling",
        "See tab:int-stats for the dataset's statistics.",
        "Our contributions are: [leftmargin=4mm] We propose an approach.",
    ],
)
def test_typesetting_source_is_markup(text):
    assert MARKUP_RESIDUE.search(text)


@pytest.mark.parametrize(
    "text",
    [
        "A ticket costs $5 and a season pass $120.",
        "Prices rose from $ 5 to $7 in a year.",
        "Set $HOME and $PATH before you run the installer.",
        "The files are under C:\\Users\\bob\\data on the server.",
        "The ratio was 3:1 and the meeting ended at 10:30.",
        "He said: yes, and the table [see below] lists them.",
    ],
)
def test_prices_paths_times_and_plain_brackets_are_not(text):
    assert not MARKUP_RESIDUE.search(text)


def _node(text: str, node_id: int = 1) -> ContextNode:
    return ContextNode(node_id, 0, "paper.md", 0.5, text, 60, 1, start=0, end=len(text))


def quote_scores(
    embedder, question: str, history: list[Turn], texts: tuple[str, str], monkeypatch, **constants: float
) -> dict[str, float]:
    """Each candidate's quote score over two nodes, with the answer module's constants set as given (also
    tests/test_pointer_and_subject_quotes.py)."""
    for name, value in constants.items():
        monkeypatch.setattr(answer, name, value)
    quoted = ExtractiveAnswerer(embedder, ranker=load_ranker())._quotes(
        question, [_node(texts[0]), _node(texts[1], 2)], history
    )
    assert quoted is not None
    return {c.text: c.score for c in quoted.candidates}


def _scores(embedder, question: str, history: list[Turn], penalty: float, monkeypatch) -> dict[str, float]:
    return quote_scores(
        embedder, question, history, (f"{MARKED} {OTHER}", PLAIN), monkeypatch, MARKUP_PENALTY=penalty
    )


def test_a_marked_sentence_loses_the_penalty_and_a_plain_one_nothing(embedder, monkeypatch):
    question = "How did they obtain the user interactions?"
    without = _scores(embedder, question, [], 0.0, monkeypatch)
    shipped = _scores(embedder, question, [], MARKUP_PENALTY, monkeypatch)
    assert shipped[MARKED] == pytest.approx(without[MARKED] - MARKUP_PENALTY)
    assert shipped[PLAIN] == pytest.approx(without[PLAIN])
    assert shipped[OTHER] == pytest.approx(without[OTHER])


def test_a_follow_up_and_a_question_about_the_whole_are_ranked_as_before(embedder, monkeypatch):
    history = [
        Turn("user", "What user interactions do they use?"),
        Turn("assistant", "From the documents:\n- \u201cWe use the user interactions of recipes.\u201d [1]"),
    ]
    follow_up = standalone_question("How did they obtain them?", history)
    assert split_standalone(follow_up).context  # read as a follow-up, with the question it follows
    for question, turns in ((follow_up, history), ("What is this paper about?", [])):
        without = _scores(embedder, question, turns, 0.0, monkeypatch)
        shipped = _scores(embedder, question, turns, MARKUP_PENALTY, monkeypatch)
        assert shipped == pytest.approx(without)
