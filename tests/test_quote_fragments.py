"""A quote too short to say anything alone is read with the sentence after it in its paragraph."""

from __future__ import annotations

from raptor_engine.query.answer import (
    FRAGMENT_WORDS,
    QUOTE,
    ExtractiveAnswerer,
    _candidates,
    _with_next_sentence,
)
from raptor_engine.types import ContextNode

SHORT = "On the third day Korvin escaped."
NEXT = "He had loosened the bars of his cell with a spoon over many nights."
LONG = "The guards of the tower searched the valley for a week and never found the prisoner who escaped."


def _node(text: str, node_id: int = 1) -> ContextNode:
    return ContextNode(node_id, 0, "story.md", 0.5, text, 40, 1, start=0, end=len(text))


def _quote(text: str, quoted: str, picked_texts: tuple[str, ...] = ()) -> str:
    candidates = _candidates([_node(text)])
    candidate = next(c for c in candidates if c.text == quoted)
    picked = [candidate, *(c for c in candidates if c.text in picked_texts)]
    return _with_next_sentence(candidate, picked).text


def test_a_fragment_is_quoted_with_the_next_sentence_of_its_paragraph():
    assert len(SHORT.split()) < FRAGMENT_WORDS
    assert _quote(f"{SHORT} {NEXT}", SHORT) == f"{SHORT} {NEXT}"


def test_a_full_sentence_a_paragraph_end_a_last_sentence_or_a_quoted_neighbour_stay_alone():
    assert _quote(f"{LONG} {NEXT}", LONG) == LONG
    assert _quote(f"{SHORT}\n\n{NEXT}", SHORT) == SHORT
    assert _quote(f"{NEXT} {SHORT}", SHORT) == SHORT
    assert _quote(f"{SHORT} {NEXT}", SHORT, picked_texts=(NEXT,)) == SHORT


def test_the_answer_quotes_the_extended_fragment_once_with_its_block(embedder):
    context = [_node(f"{SHORT} {NEXT}"), _node(LONG, 2)]
    draft = ExtractiveAnswerer(embedder)._answer_sync("When did Korvin escape?", context, [])
    quotes = QUOTE.findall(draft.text)
    assert quotes[0] == f"{SHORT} {NEXT}"
    assert f"\u201c{SHORT} {NEXT}\u201d [1]" in draft.text
    assert quotes.count(NEXT) == 0


DESCRIBED = "To limit what an attacker gains, we count the distinct outputs that an attack can induce."
NAMING = "We denote this quantity as sensitivity."


def test_a_fragment_that_refers_back_is_quoted_with_the_sentence_before_it():
    assert len(NAMING.split()) < FRAGMENT_WORDS
    assert _quote(f"{DESCRIBED} {NAMING} {NEXT}", NAMING) == f"{DESCRIBED} {NAMING}"
    assert _quote(f"{DESCRIBED} This is called sensitivity. {NEXT}", "This is called sensitivity.") == (
        f"{DESCRIBED} This is called sensitivity."
    )
    # no sentence before it in the paragraph, or that one quoted already: the next one, as any fragment
    assert _quote(f"{DESCRIBED}\n\n{NAMING} {NEXT}", NAMING) == f"{NAMING} {NEXT}"
    assert _quote(f"{DESCRIBED} {NAMING} {NEXT}", NAMING, picked_texts=(DESCRIBED,)) == f"{NAMING} {NEXT}"
    # a fragment that names something of its own reads on
    assert _quote(f"{DESCRIBED} {SHORT} {NEXT}", SHORT) == f"{SHORT} {NEXT}"


def test_a_sentence_holding_a_quotation_is_quoted_with_single_quotes_inside(embedder):
    """“His daughter called it “the finest mill”.” read as two quotes, one of them cut; nested quotes are
    single inside double ones, and `quotes_in` finds the whole sentence."""
    from raptor_engine.query.followup import quotes_in

    said = "His daughter called the building \u201cthe finest mill in the county\u201d in her letters home."
    draft = ExtractiveAnswerer(embedder)._answer_sync("What did his daughter call the building?", [_node(said)], [])
    assert "\u201cHis daughter called the building \u2018the finest mill in the county\u2019 in her letters home.\u201d [1]" in draft.text
    assert quotes_in(draft.text) == ["His daughter called the building \u2018the finest mill in the county\u2019 in her letters home."]
