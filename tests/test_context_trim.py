"""A small budget filled with the parts of nodes that answer (`retrieve.trimmed_sentences`, `Trim`): a
trimmed node keeps its id, layer and the sentences the quote model scores best, in their order, with an
elision mark where it left some out; the context never exceeds the budget; above `Trim.max_budget` (and
with no judge) the nodes stay whole, as before."""

from __future__ import annotations

import dataclasses

import pytest

from raptor_engine import Engine
from raptor_engine.ingest.sentences import NewSentences, sentence_key, sentences_of, strip_bullet
from raptor_engine.query.answer import ExtractiveAnswerer
from raptor_engine.query.ranker import load_ranker
from raptor_engine.query.retrieve import (
    ELISION,
    TRIM,
    BudgetFill,
    Trim,
    Trimmed,
    _kept_sentences,
    _only_new,
    _split_now,
    _trims,
    collapsed_tree,
)
from raptor_engine.query.tables import row_cells
from raptor_engine.storage.records import StoredNode
from raptor_engine.types import ContextNode
from tests.test_context_judge import HOW_MANY, PAPER
from tests.unhurried import unhurried_settings

TRIMMED = Trim(max_budget=10_000, keep=2, layers="all", fit=False)


def _node(text: str, layer: int = 0, page_marks: tuple[tuple[int, int], ...] = ()) -> ContextNode:
    return ContextNode(7, layer, "d.txt", 0.5, text, len(text.split()), 1, page=1, page_marks=page_marks)


def test_a_node_keeps_its_best_sentences_in_order_with_its_neighbours_if_asked():
    scores = [0.1, 0.9, None, 0.2, 0.8]  # None: not quotable (a heading)
    assert _kept_sentences(scores, Trim(keep=2), float("inf")) == [False, True, False, False, True]
    assert _kept_sentences(scores, Trim(keep=1, neighbours=1), float("inf")) == [True, True, True, False, False]
    assert _kept_sentences(scores, Trim(keep=1), 0.15) == [False, True, False, True, True]  # the head's best
    assert _kept_sentences(scores, Trim(keep=5), float("inf")) is None  # every scored one: whole
    assert _kept_sentences([None, None], Trim(keep=1), float("inf")) is None  # nothing scored: whole
    assert _kept_sentences(scores, Trim(keep=0), float("inf")) is None  # nothing kept, nothing trimmed


def test_a_trimmed_node_marks_what_it_left_out_and_counts_only_what_it_keeps():
    text = "One is here. Two is there.\nThree is far. Four is near. Five is last."
    node = _node(text, page_marks=((0, 1), (27, 2)))
    spans = _split_now(-1, text, 15, None)
    assert len(spans) == 5
    shortened, kept = _only_new(node, spans, NewSentences(), [False, True, False, True, False])
    assert shortened is not None
    assert shortened.text == f"{ELISION} Two is there. {ELISION} Four is near. {ELISION}"
    assert (shortened.node_id, shortened.layer, shortened.document) == (7, 0, "d.txt")
    assert shortened.tokens == sum(s.tokens for s in kept) + 3  # the kept sentences and three marks
    # each kept sentence keeps its page: "Four" stood after the page break at 27
    assert shortened.pages(shortened.text.index("Four")) == (2, 2)
    assert shortened.pages(0, shortened.text.index("Two") + 3) == (1, 1)
    # the marks are sentences of their own that a quote never takes
    assert [s.text for s in sentences_of(shortened.text) if s.cut_short] == [ELISION] * 3
    whole, _ = _only_new(node, spans, NewSentences(), None)
    assert whole is node  # no mask, nothing held: the node as it is


ROWS = "- Item: A; Notes: x. y.\n- Item: B; Notes: z.\n- Item: C; Notes: w.\nPlain prose here. More prose."


@pytest.mark.parametrize(
    ("shown", "expected"),
    [
        ([True, False, True, True, False], f"- Item: A; Notes: x. y.\n{ELISION}\n- Item: C; Notes: w.\nPlain prose here. {ELISION}"),
        ([False, True, False, False, True], f"{ELISION}\n- Item: B; Notes: z.\n{ELISION}\nMore prose."),
        ([False, False, True, False, False], f"{ELISION}\n- Item: C; Notes: w.\n{ELISION}"),
    ],
)  # fmt: skip
def test_a_mark_beside_a_table_row_stands_on_its_own_line(shown, expected):
    """A row is one sentence to its line's end: a mark and the next row run onto it read as its last cell
    going on, and the rows ('- Item: A; Notes: x. y. … - Item: C; Notes: w.') as no row at all."""
    spans = _split_now(-1, ROWS, 15, None)
    shortened, _ = _only_new(_node(ROWS), spans, NewSentences(), shown)
    assert shortened is not None and shortened.text == expected
    rows = [row_cells(s.text.removeprefix("- ")) for s in sentences_of(shortened.text)]
    assert [cells for cells in rows if cells] == [{"Item": item, "Notes": notes} for item, notes in (
        ("A", "x. y"), ("B", "z"), ("C", "w")) if f"Item: {item}" in expected]  # fmt: skip


def test_a_leaf_shortened_to_what_is_new_keeps_its_fences_and_the_white_space_of_its_code():
    """A fence line has no words, so it read as a copy of any other sentence held and was left out, and
    neighbours were joined by one line break: the shortened leaf's code lost its indentation and its
    closing fence, so its code read as prose and the prose after it as code (`chunk.code_lines`)."""
    from raptor_engine.ingest.chunk import code_lines

    text = 'value = parse(line)\n        settings[key] = value\n    return settings\n```\n\nThe keeper runs it hourly.'
    spans = _split_now(-1, text, 30, None)
    held = NewSentences()
    held.add([s for s in _split_now(-3, "```\n\nNothing new.", 5, None)])  # a fence line held elsewhere
    held.add([spans[0]])  # and the leaf's first line, held by a summary
    shortened, _ = _only_new(_node(text), spans, held, None)
    assert shortened is not None
    assert shortened.text == "settings[key] = value\n    return settings\n```\n\nThe keeper runs it hourly."
    lines = [shortened.text[a:b] for a, b in code_lines(shortened.text)]
    assert lines == ["settings[key] = value", "    return settings", "```"]
    # a leaf left with fence lines alone adds nothing: it is left out
    fenced = "Held here.\n\n```\nx = 1\n```"
    fenced_spans = _split_now(-4, fenced, 9, None)
    held.add([fenced_spans[0], fenced_spans[2]])
    assert _only_new(_node(fenced), fenced_spans, held, None) == (None, [])


def test_a_summary_trimmed_to_what_is_new_is_left_out_when_too_little_of_it_is():
    text = "Alpha beta gamma delta. Epsilon zeta eta theta. Iota kappa lambda mu."
    spans = _split_now(-2, text, 12, None)
    held = NewSentences()
    held.add([spans[0]])
    # the summary keeps its first two sentences; the first is held already: half of what it keeps is new
    dropped, _ = _only_new(_node(text, layer=1), spans, held, [True, True, False])
    assert dropped is None
    kept, _ = _only_new(_node(text, layer=0), spans, held, [True, True, False])
    assert kept is not None and kept.text == f"Epsilon zeta eta theta. {ELISION}"  # a leaf keeps any new one


def test_the_layers_trimmed_up_front():
    assert [_trims(layer, "summaries") for layer in (0, 1, 2)] == [False, True, True]
    assert [_trims(layer, "leaves") for layer in (0, 1)] == [True, False]
    assert [_trims(layer, "all") for layer in (0, 1)] == [True, True]
    assert [_trims(layer, "none") for layer in (0, 1)] == [False, False]
    assert TRIM.layers == "summaries" and TRIM.fit and 500 <= TRIM.max_budget < 2000


def test_a_node_too_big_for_the_room_left_keeps_its_best_sentences_that_fit():
    text = "Alpha one two three four. Beta five six seven eight. Gamma nine ten eleven twelve."
    stored = StoredNode(5, 1, 1, "d.txt", 0, "leaf", text, 15, 1, 0, len(text), None, ())
    first = StoredNode(4, 1, 1, "d.txt", 0, "leaf", "Delta alone here now.", 5, 1, 0, 21, None, ())
    ranks = {5: [2, 0, 1]}  # Gamma best, then Alpha
    for fit, expected in ((True, f"{ELISION} Gamma nine ten eleven twelve."), (False, None)):
        fill = BudgetFill(13, trimmed=Trimmed(ranks=ranks, fit=fit))
        fill.offer(first, 0.9)
        fill.offer(stored, 0.5)  # 15 tokens whole, 8 left: Gamma (5) and its marks fit, Alpha besides does not
        assert fill.used <= 13
        cut = [node for node in fill.chosen if node.node_id == 5]
        assert (cut[0].text if cut else None) == expected
    whole = BudgetFill(20, trimmed=Trimmed(ranks=ranks, fit=True))
    whole.offer(stored, 0.5)
    assert whole.chosen[0].text == text  # it fits: whole


@pytest.fixture(scope="module")
def judge(embedder) -> ExtractiveAnswerer:
    return ExtractiveAnswerer(embedder, ranker=load_ranker())


def test_sentence_scores_are_the_node_scores_by_sentence(judge):
    nodes = [_node(PAPER[1]), dataclasses.replace(_node(PAPER[4]), node_id=8)]
    vector = judge.embedder.embed([HOW_MANY])[0]
    by_sentence = judge.sentence_scores(HOW_MANY, vector, nodes)
    assert [sorted(found.values(), reverse=True) for found in by_sentence] == judge.node_scores(HOW_MANY, vector, nodes)
    assert set(by_sentence[1]) == {sentence_key(strip_bullet(s.text)) for s in sentences_of(PAPER[4])}


def _sentences_of_stored(engine: Engine, node: ContextNode) -> set[str]:
    stored = engine.store.nodes_by_ids([node.node_id])[node.node_id]
    assert stored.layer == node.layer
    return {s.text for s in sentences_of(stored.text)}


async def test_trimmed_context_cites_the_nodes_its_text_came_from_and_fits_the_budget(tmp_path, embedder, judge):
    engine = Engine(unhurried_settings(data_dir=tmp_path, ranking="hybrid"), embedder=embedder)
    try:
        await engine.ingest("kb", "paper.txt", "\n\n".join(PAPER).encode(), added_by="t")
        kb_id = engine.store.require_kb("kb")
        vector = engine.embedder.embed([HOW_MANY])[0]

        def context(budget: int, trim: Trim, with_judge: bool = True) -> list[ContextNode]:
            found = collapsed_tree(
                engine.store,
                engine.indexes.get(kb_id),
                kb_id,
                HOW_MANY,
                vector,
                budget=budget,
                ef=engine.settings.hnsw_ef,
                count_tokens_batch=engine.embedder.count_tokens_batch,
                ranking="hybrid",
                sentence_judge=judge.sentence_scores if with_judge else None,
                trim=trim,
            )
            assert found.tokens_used == sum(node.tokens for node in found.nodes) <= budget
            return found.nodes

        for budget in (40, 80, 120, 200):
            for trim in (TRIMMED, dataclasses.replace(TRIMMED, keep=1, fit=True), dataclasses.replace(TRIM, max_budget=10_000)):
                nodes = context(budget, trim)
                assert nodes or budget < 80
                for node in nodes:  # every sentence shown is one of the cited node's own, in its layer
                    shown = {s.text for s in sentences_of(node.text) if s.text != ELISION}
                    assert shown <= _sentences_of_stored(engine, node)
        trimmed = context(80, TRIMMED)
        assert any(ELISION in node.text for node in trimmed)
        # a budget above max_budget, or no judge: whole nodes, exactly as before
        whole = [(n.node_id, n.text) for n in context(80, TRIMMED, with_judge=False)]
        assert [(n.node_id, n.text) for n in context(80, dataclasses.replace(TRIMMED, max_budget=79))] == whole
        assert all(ELISION not in text for _, text in whole)
    finally:
        engine.close()


async def test_the_engine_trims_only_budgets_up_to_the_limit(tmp_path, embedder, monkeypatch):
    engine = Engine(unhurried_settings(data_dir=tmp_path, ranking="hybrid"), embedder=embedder)
    try:
        await engine.ingest("kb", "paper.txt", "\n\n".join(PAPER).encode(), added_by="t")
        large = max(TRIM.max_budget + 1, 2000)
        assert engine._sentence_judge(large) is None
        assert not any(ELISION in node.text for node in engine.retrieve("kb", HOW_MANY, budget=large).nodes)
        if TRIM.max_budget:
            assert engine._sentence_judge(TRIM.max_budget) is not None
            small = engine.retrieve("kb", HOW_MANY, budget=80)
            assert small.tokens_used <= 80 and small.nodes
    finally:
        engine.close()


def test_an_engine_whose_answerer_writes_prose_still_trims_by_the_quote_model(tmp_path, embedder):
    """With an LLM configured the context it reads is trimmed by a quoting answerer the engine keeps."""
    writer = object()  # any answerer that does not quote
    engine = Engine(unhurried_settings(data_dir=tmp_path), embedder=embedder, answerer=writer)  # type: ignore[arg-type]
    try:
        judge = engine._sentence_judge(TRIM.max_budget)
        assert judge is not None and isinstance(judge.__self__, ExtractiveAnswerer)
        assert engine._sentence_judge(TRIM.max_budget).__self__ is judge.__self__  # kept, not rebuilt
        assert engine._sentence_judge(TRIM.max_budget + 1) is None
        engine.settings = dataclasses.replace(engine.settings, ranking="vector")
        assert engine._sentence_judge(TRIM.max_budget) is None  # no quote model, nothing trimmed
    finally:
        engine.close()
