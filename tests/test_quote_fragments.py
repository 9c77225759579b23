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


# An extractive summary copies sentences from all over its cluster: its next sentence is seldom the
# document's. The leaf that left the copy out (`ContextNode.held_elsewhere`) says what follows it there.
OPENING = "Two ferries crossed the Ambry before the bridge opened."
ALDER = "The Alder was a paddle steamer launched in 1862 at Greenock."
WREN = "The Wren carried only passengers, for example mill workers and schoolchildren, and held 40 people."


def _summary_and_leaf(leaf_text: str, held: tuple[tuple[int, str], ...]) -> list[ContextNode]:
    summary = ContextNode(1, 1, "ferries.md", 0.9, f"{OPENING} {WREN}", 40, 2)
    leaf = ContextNode(2, 0, "ferries.md", 0.5, leaf_text, 40, 1, start=0, end=200, held_elsewhere=held)
    return [summary, leaf]


def _answered(context: list[ContextNode]) -> list[str]:
    from raptor_engine.query.answer import _document_next, _with_next_sentence_of_its_document

    candidates = _candidates(context)
    opening = next(c for c in candidates if c.text == OPENING)
    follows = _document_next(context, candidates)
    return [c.text for c in _with_next_sentence_of_its_document(opening, [opening], follows)]


def test_a_summarys_copy_is_quoted_with_the_sentence_after_it_in_its_document_not_in_the_summary():
    from raptor_engine.ingest.sentences import sentence_key

    held = ((0, sentence_key(OPENING)),)
    assert _answered(_summary_and_leaf(f"{ALDER} It carried cattle.", held)) == [OPENING, ALDER]
    # the leaf goes on past a trimmed run, or a new paragraph: the copy is quoted alone
    assert _answered(_summary_and_leaf(f"\u2026 {ALDER}", held)) == [OPENING]
    assert _answered(_summary_and_leaf(f"\n\n{ALDER}", held)) == [OPENING]
    # the document's next sentence is the summary's next copy too: joined as the summary has it
    both = ((0, sentence_key(OPENING)), (0, sentence_key(WREN)))
    assert _answered(_summary_and_leaf(ALDER, both)) == [f"{OPENING} {WREN}"]
    # another copy comes next in the document: not the summary's neighbour, so the copy stands alone
    other = ((0, sentence_key(OPENING)), (0, sentence_key(ALDER)))
    assert _answered(_summary_and_leaf("It carried cattle.", other)) == [OPENING]


def test_a_summarys_sentence_no_leaf_left_out_is_joined_with_its_summary_neighbour():
    assert _answered(_summary_and_leaf(ALDER, ())) == [f"{OPENING} {WREN}"]


def test_the_answer_quotes_the_documents_next_sentence_from_its_leaf(embedder):
    from raptor_engine.ingest.sentences import sentence_key

    context = _summary_and_leaf(f"{ALDER} It carried cattle.", ((0, sentence_key(OPENING)),))
    draft = ExtractiveAnswerer(embedder)._answer_sync("Which ferries crossed the Ambry?", context, [])
    assert f"\u201c{OPENING}\u201d [1]\n- \u201c{ALDER}\u201d [2]" in draft.text
    assert f"{OPENING} {WREN}" not in draft.text
