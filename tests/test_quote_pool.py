"""The extractive answer's quote pool: sentences of leaves outside the context that the quotes may come
from, cited with their own leaf, which then joins the answer's context."""

from __future__ import annotations

import re

from raptor_engine import Engine, Settings
from raptor_engine.query.answer import (
    POOL_SENTENCES,
    QUOTE,
    ExtractiveAnswerer,
    _candidates,
    map_citations,
    pool_candidates,
)
from raptor_engine.query.retrieve import quote_pool
from raptor_engine.types import ContextNode, RetrievedContext

SHOWN = [
    "The mill stood on the river bank north of the town for two centuries.",
    "Farmers brought their grain to the mill every autumn after the harvest.",
]
ANSWERING = "The mill's great wheel was nine metres across and turned twelve times a minute."


def _node(node_id: int, text: str) -> ContextNode:
    return ContextNode(node_id, 0, "mill.md", 0.5, text, 20, 1, start=0, end=len(text))


def test_a_quote_from_the_pool_is_numbered_after_the_context_and_cited_with_its_leaf(embedder):
    context = [_node(1, SHOWN[0]), _node(2, SHOWN[1])]
    pool = [_node(7, ANSWERING)]
    draft = ExtractiveAnswerer(embedder)._answer_sync("How large was the mill's wheel across?", context, [], pool)
    assert draft.added == [7]
    quoted = dict(re.findall(r"\u201c(.+?)\u201d \[(\d+)\]", draft.text))
    assert quoted[ANSWERING] == "3"
    text, citations = map_citations(draft.text, context + pool)
    assert {c.node_id for c in citations} >= {7}
    assert ANSWERING in QUOTE.findall(text)


def test_without_a_pool_or_for_a_question_about_the_whole_nothing_is_added(embedder):
    context = [_node(1, SHOWN[0]), _node(2, SHOWN[1])]
    answerer = ExtractiveAnswerer(embedder)
    assert answerer._answer_sync("How large was the mill's wheel?", context, []).added == []
    thematic = answerer._answer_sync("What is this document about?", context, [], [_node(7, ANSWERING)])
    assert thematic.added == [] and ANSWERING not in thematic.text


def test_pool_sentences_need_a_question_term_are_new_and_few():
    context = [_node(1, SHOWN[0])]
    held = _candidates(context)
    filler = [_node(100 + i, f"The wheel number {i} of the mill turned slowly in spring floods.") for i in range(30)]
    pool = [_node(50, SHOWN[0]), _node(51, "Nobody remembers the miller's dog any longer."), *filler]
    kept = pool_candidates(held, pool, len(context), "How fast did the wheel of the mill turn?")
    texts = [c.text for c in kept]
    assert SHOWN[0] not in texts  # the context already says it
    assert not any("dog" in t for t in texts)  # shares no term with the question
    assert 0 < len(kept) <= POOL_SENTENCES
    assert all(c.position > len(context) for c in kept)


async def test_a_question_quotes_a_leaf_the_context_left_out_and_cites_it(tmp_path, embedder):
    """The context a question gets lacks the leaf that answers it (the retrieval is narrowed here to
    make it so); the full-text index finds that leaf, the answer quotes it and cites it, and the
    answer's context lists it."""
    notes = [f"In year {i + 1} the mill ground oats and barley for the farms of the valley." for i in range(12)]
    notes.insert(6, "The great wheel of the mill measured nine metres across and was made of oak.")
    engine = Engine(Settings(data_dir=tmp_path), embedder=embedder)
    try:
        await engine.ingest("kb", "mill.txt", "\n\n".join(notes).encode(), added_by="t")
        question = "How large was the great wheel?"
        full = engine.retrieve

        def narrowed(kb, query, **options):
            context = full(kb, query, **options)
            stored = engine.store.nodes_by_ids([n.node_id for n in context.nodes])
            context.nodes = [n for n in context.nodes if "wheel" not in stored[n.node_id].text]
            return context

        engine.retrieve = narrowed
        answer = await engine.ask("kb", question)
    finally:
        engine.close()
    assert "nine metres" in answer.text
    marker = int(re.search(r"nine metres[^\u201d]*\u201d \[(\d+)\]", answer.text).group(1))
    cited = next(c for c in answer.citations if c.marker == marker)
    leaf = next(n for n in answer.context.nodes if n.node_id == cited.node_id)
    assert "nine metres" in leaf.text and leaf.layer == 0


async def test_the_pool_leaves_out_the_context_and_summaries_and_respects_a_layer_filter(tmp_path, embedder):
    text = "\n\n".join(f"Entry {i}: the wheel of the mill turned {i} times in the flood." for i in range(40))
    engine = Engine(Settings(data_dir=tmp_path), embedder=embedder)
    try:
        await engine.ingest("kb", "mill.txt", text.encode(), added_by="t")
        kb_id = engine.store.kb_id("kb")
        query = "How often did the wheel turn?"
        context = engine.retrieve("kb", query, budget=200)
        vector = embedder.embed([query])[0]
        pool = quote_pool(engine.store, kb_id, query, vector, context)
        assert pool and all(n.layer == 0 for n in pool)
        assert not {n.node_id for n in pool} & {n.node_id for n in context.nodes}
        assert quote_pool(engine.store, kb_id, query, vector, context, layers=[1]) == []
        traversal = RetrievedContext(context.nodes, context.tokens_used, 200, "traversal", query)
        assert engine.quote_pool("kb", query, traversal) == []
    finally:
        engine.close()
