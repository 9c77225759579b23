"""The held-out check's question variants (raptor_tools/grounding_variants.py): misspelt, pronoun-only and
negated rewrites of a question, and the check's summary of lead lines."""

from __future__ import annotations

import pytest

from raptor_engine.query.grounding import asks_a_negative, one_slip_apart
from raptor_tools import grounding as tool
from raptor_tools import grounding_variants as gv
from raptor_tools.evaluate import EvalQuestion


@pytest.mark.parametrize("word", ["lighthouse", "keeper", "Marrow", "designed", "baselines", "microwave"])
def test_a_slip_is_one_typing_slip_inside_the_word(word):
    slipped = gv.slip(word)
    assert slipped != word and slipped[0] == word[0]
    assert one_slip_apart(slipped.lower(), word.lower())
    assert gv.slip(word) == slipped  # the same slip every run


def test_the_misspelt_variant_mistypes_the_longest_content_words():
    question = "Who kept the lighthouse on Skerrow Point in 1887?"
    variant = gv.misspelt(question)
    changed = [(a, b) for a, b in zip(question.split(), variant.split(), strict=True) if a != b]
    assert [a for a, _ in changed] == ["lighthouse", "Skerrow"]
    assert gv.misspelt("Who is he?") is None  # no word long enough to mistype


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did Elias Marrow write?", "What did they write?"),
        ("Why did the Tr'en leave Korvin's door unlocked?", "Why did they leave their door unlocked?"),
        ("Who designed the tower?", "Who designed it?"),
        ("What baselines do the authors compare to?", "What baselines do they compare to?"),
        ("How big is the dataset used in this work?", "How big is it used in this work?"),
        ("What does the radio show cause?", "What does it cause?"),
    ],
)
def test_the_pronoun_variant_asks_about_they_or_it(question, expected):
    assert gv.pronoun(question) == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Who did keep the light?", "Who didn't keep the light?"),
        ("Is the dataset public?", "Isn't the dataset public?"),
        ("Who commits suicide?", "Who never commits suicide?"),
    ],
)
def test_the_negated_variant_asks_the_opposite_and_reads_as_negative(question, expected):
    assert gv.negated(question) == expected
    assert asks_a_negative(expected) and not asks_a_negative(question)


def test_a_question_without_a_variant_of_a_kind_has_only_the_others():
    found = gv.variants("Describe it.")  # no name and no "the ...": no pronoun variant; no auxiliary
    assert set(found) == {"original", "misspelt"}
    assert set(gv.variants("Who designed the tower?")) == set(gv.VARIANTS)


def test_the_check_pairs_negatives_as_the_fitting_tool_does():
    question = EvalQuestion("qasper_q03", "b", "Which corpus?", ("BERT",))
    pairs = gv.pairs_for(question, ["a", "b", "c"], ["x", "y"])
    assert pairs == [("own", "b"), ("same_set", "c"), ("other_set", ["x", "y"][tool.hash_index("qasper_q03", 2)])]
    assert gv.pairs_for(question, ["b"], []) == [("own", "b")]


def test_the_summary_counts_answerable_rows_called_weak_and_negatives_caught():
    def r(kind, variant, lead, recall):
        return {"kind": kind, "variant": variant, "lead": lead, "recall": recall}

    rows = [
        r("own", "misspelt", "answered", 0.9),
        r("own", "misspelt", "nothing", 0.8),
        r("own", "misspelt", "closest", 0.1),  # the quotes miss: not answerable
        r("same_set", "misspelt", "nothing", 0.0),
        r("other_set", "misspelt", "answered", 0.0),
    ]
    found = {s["variant"]: s for s in gv.summary(rows)}["misspelt"]
    assert (found["answerable"], found["answerable_answered"], found["answerable_nothing"]) == (2, 1, 1)
    assert (found["negatives"], found["negatives_caught"], found["negatives_nothing"]) == (2, 1, 1)
    assert "| misspelt | 2 | 1 | 0 | 1 | 2 | 1 | 1 |" in gv.render(gv.summary(rows))


@pytest.mark.parametrize(
    ("text", "lead"),
    [
        (gv.FOUND + "\n- x", "answered"),
        (gv.NOTHING_RELATED + "\n- x", "nothing"),
        ("Nothing in the documents clearly answers this; the closest passages are:\n- x", "closest"),
    ],
)
def test_the_lead_is_read_off_the_answers_first_line(text, lead):
    assert gv.lead_of(text) == lead
