"""Retrieval: the collapsed tree (the paper's choice) and tree traversal.

Collapsed tree: every layer is searched at once through the knowledge base's hnswlib index, and
nodes are taken in score order while they fit the token budget. A node that does not fit is
skipped and the next one tried, so one long summary does not end the context early (the official
code stops at the first node that does not fit).

The collapsed tree fills the budget with new text only: a node's sentences that the context already
holds (an extractive summary is made of its children's sentences) are dropped and not counted, so
the budget buys distinct text; the node stays cited for what it adds.

Tree traversal: the top-k nodes among the roots, then the top-k among their children, down to
the leaves; the selected nodes fill the budget top-down.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable

import numpy as np

from ..ingest.sentences import NewSentences, SentenceSpan, decode_spans, sentence_spans, sentences_of
from ..storage.index import KBIndex
from ..storage.records import StoredNode
from ..storage.store import Store
from ..types import ContextNode, PageMarks, RetrievedContext
from .followup import asks_about_the_whole

CountTokensBatch = Callable[[list[str]], list[int]]

CANDIDATES = 200  # nodes fetched from the index before filling the budget
MIN_NEW_SUMMARY_SHARE = (
    0.7  # a summary less than 70% new is skipped (see _only_new; measured in EVALUATION.md)
)
# A question about the whole that names nothing in it ('what is this document about?') is answered from
# the summaries first, highest layer first. Its similarities say little: on a four-chunk text they all fell
# within +-0.03, and the order of leaves and summaries changed with the embedding runtime.
FETCH_BATCH = 40  # candidates read in full at a time (about twice what a 2,000-token budget takes)
SENTENCE_CACHE_NODES = 50_000  # nodes stored without their sentences whose split is kept between questions


def _context_node(node: StoredNode, score: float) -> ContextNode:
    return ContextNode(
        node_id=node.id,
        layer=node.layer,
        document=node.document,
        score=score,
        text=node.text,
        tokens=node.tokens,
        leaf_count=node.leaf_count,
        page=node.page,
        heading=node.heading,
        start=node.start,
        end=node.end,
        page_marks=node.page_marks,
    )


def _joined(text: str, kept: list[SentenceSpan]) -> str:
    """The kept sentences in their original wording, a line break kept where one separated them."""
    parts: list[str] = []
    for previous, sentence in zip([None, *kept], kept, strict=False):
        if previous is not None:
            parts.append("\n" if "\n" in text[previous.end : sentence.start] else " ")
        parts.append(text[sentence.start : sentence.end])
    return "".join(parts)


def _moved_marks(node: ContextNode, kept: list[SentenceSpan]) -> PageMarks:
    """The node's page marks for the shortened text: each kept sentence keeps the page it was on."""
    marks: list[tuple[int, int]] = []
    offset = 0
    for sentence in kept:
        pages = node.pages(sentence.start, sentence.end)
        if pages is not None and (not marks or marks[-1][1] != pages[0]):
            marks.append((offset, pages[0]))
        offset += sentence.end - sentence.start + 1
    return tuple(marks)


def node_sentences(
    node: StoredNode, count_tokens_batch: CountTokensBatch | None = None
) -> tuple[SentenceSpan, ...]:
    """A node's sentences as stored with it, or split now for a node stored before they were (m004)."""
    if node.sentences is not None:
        return decode_spans(node.sentences, node.text)
    return _split_now(node.id, node.text, node.tokens, count_tokens_batch)


@functools.lru_cache(maxsize=SENTENCE_CACHE_NODES)
def _split_now(
    node_id: int, text: str, tokens: int, count_tokens_batch: CountTokensBatch | None
) -> tuple[SentenceSpan, ...]:
    """Split and count once per process (keyed by id and text, so two databases' nodes with one id never
    mix). Without a counter each sentence gets its share of the node's tokens by characters."""
    if count_tokens_batch is not None:
        return tuple(sentence_spans([text], count_tokens_batch)[0])
    total = max(1, len(text))
    return tuple(
        SentenceSpan(s.start, s.end, max(1, round(tokens * (s.end - s.start) / total)), s.fingerprint, text)
        for s in sentences_of(text)
    )


def _only_new(
    node: ContextNode, sentences: tuple[SentenceSpan, ...], held: NewSentences
) -> tuple[ContextNode | None, list[SentenceSpan]]:
    """The node with the sentences the context already holds removed, or None if too little is new;
    and the sentences it keeps. A shortened node counts the tokens of the sentences it keeps.

    The node keeps its id, layer and citation; only its text and token count shrink. A summary with
    less than MIN_NEW_SUMMARY_SHARE of it new is left out: its score was earned mostly by text
    already held, so it does not vouch for the stray sentences left over. A leaf is kept for any new
    sentence, since what is left of it is the held sentence's own neighbourhood.
    """
    kept = [s for s in sentences if not held.is_copy(s)]
    if not kept:
        return None, []
    if len(kept) == len(sentences):
        return node, kept
    text = _joined(node.text, kept)
    if node.layer > 0 and len(text) < MIN_NEW_SUMMARY_SHARE * len(node.text):
        return None, []
    tokens = max(1, sum(s.tokens for s in kept))
    return dataclasses.replace(node, text=text, tokens=tokens, page_marks=_moved_marks(node, kept)), kept


class BudgetFill:
    """Nodes offered in score order are taken while they fit; one that does not is skipped, not the end.

    With `new_text_only`, only new text counts: a node's sentences already in the context (an
    extractive summary copies its children's) are dropped first, and a node with nothing new is left
    out. A shortened node counts its kept sentences' tokens, as stored with the node (for a node stored
    before they were, counted by `count_tokens_batch`, or estimated from characters without it).
    """

    def __init__(
        self, budget: int, count_tokens_batch: CountTokensBatch | None = None, *, new_text_only: bool = True
    ):
        self.budget = budget
        self.count_tokens_batch = count_tokens_batch
        self.new_text_only = new_text_only
        self.chosen: list[ContextNode] = []
        self.used = 0
        self._held = NewSentences()

    @property
    def room(self) -> int:
        return self.budget - self.used

    def offer(self, stored: StoredNode, score: float) -> None:
        node: ContextNode | None = _context_node(stored, score)
        kept: list[SentenceSpan] = []
        if self.new_text_only:
            node, kept = _only_new(node, node_sentences(stored, self.count_tokens_batch), self._held)
        if node is None or node.tokens > self.room:
            return
        self.chosen.append(node)
        self._held.add(kept)
        self.used += node.tokens


def fill_budget(
    scored: Iterable[tuple[StoredNode, float]],
    budget: int,
    count_tokens_batch: CountTokensBatch | None = None,
    *,
    new_text_only: bool = True,
) -> tuple[list[ContextNode], int]:
    """Take nodes in the given order while they fit (see `BudgetFill`); the chosen nodes and tokens used."""
    fill = BudgetFill(budget, count_tokens_batch, new_text_only=new_text_only)
    for stored, score in scored:
        fill.offer(stored, score)
    return fill.chosen, fill.used


def _fill_reading_lazily(
    store: Store, index: KBIndex, hits: list[tuple[int, float]], fill: BudgetFill
) -> None:
    """Offer the hits in score order, reading full rows a batch at a time, and stop reading once no
    remaining candidate fits whole: at 100k nodes reading all 200 candidates' texts cost more than
    the search. (A candidate too big whole could still shrink below the room by dropping held
    sentences; leaving it out costs little, since most of its text is then already there.)

    Whether a candidate fits whole is read from the token counts the index holds."""
    batch = FETCH_BATCH
    sizes = index.tokens.counts_of([node_id for node_id, _ in hits])
    if len(sizes) < len(hits):  # not in the index (it is kept in step with SQLite, so this is rare)
        sizes.update(store.node_tokens([node_id for node_id, _ in hits if node_id not in sizes]))
    pending = [(node_id, score) for node_id, score in hits if node_id in sizes]
    for begin in range(0, len(pending), batch):
        if not any(sizes[node_id] <= fill.room for node_id, _ in pending[begin:]):
            return
        part = [
            (node_id, score)
            for node_id, score in pending[begin : begin + batch]
            if sizes[node_id] <= fill.room
        ]
        nodes = store.nodes_by_ids([node_id for node_id, _ in part])
        for node_id, score in part:
            if node_id in nodes:
                fill.offer(nodes[node_id], score)


def allowed_ids(
    store: Store, kb_id: int, layers: list[int] | None, documents: list[str] | None
) -> set[int] | None:
    """The node ids a filtered search may return, or None for no filter."""
    if not layers and not documents:
        return None
    sql = "SELECT n.id FROM nodes n LEFT JOIN documents d ON d.id = n.doc_id WHERE n.kb_id = ?"
    params: list[object] = [kb_id]
    if layers:
        sql += f" AND n.layer IN ({','.join('?' * len(layers))})"
        params += list(layers)
    if documents:
        sql += f" AND d.name IN ({','.join('?' * len(documents))})"
        params += list(documents)
    return {row[0] for row in store.db.execute(sql, params).fetchall()}


def collapsed_tree(
    store: Store,
    index: KBIndex,
    kb_id: int,
    query: str,
    query_vector: np.ndarray,
    *,
    budget: int,
    ef: int,
    layers: list[int] | None = None,
    documents: list[str] | None = None,
    count_tokens_batch: CountTokensBatch | None = None,
) -> RetrievedContext:
    allowed = allowed_ids(store, kb_id, layers, documents)
    if allowed is not None and not allowed:
        return RetrievedContext([], 0, budget, "collapsed", query)
    hits = index.search(
        query_vector, k=CANDIDATES, ef=ef, allowed=None if allowed is None else allowed.__contains__
    )
    if asks_about_the_whole(query):
        hits = _summaries_first(store, kb_id, hits, query_vector, allowed)
    fill = BudgetFill(budget, count_tokens_batch)
    _fill_reading_lazily(store, index, hits, fill)
    chosen, used = fill.chosen, fill.used
    return RetrievedContext(chosen, used, budget, "collapsed", query)


def _summaries_first(
    store: Store,
    kb_id: int,
    hits: list[tuple[int, float]],
    query_vector: np.ndarray,
    allowed: set[int] | None,
) -> list[tuple[int, float]]:
    """The candidates for a question about the whole that matches nothing in particular: summaries from
    the top layer down (the tree's answer to 'what is this about?'), then the search's own hits.

    Each keeps its real cosine as its score; within a layer the closer summary comes first.
    """
    layer_of = {
        node_id: layer
        for node_id, layer in store.summaries_top_down(kb_id, CANDIDATES)
        if allowed is None or node_id in allowed
    }
    if not layer_of:
        return hits
    found, matrix = store.embeddings(kb_id, ids=list(layer_of))
    scores = matrix @ query_vector.astype(np.float32)
    ranked = sorted(
        ((int(i), float(s)) for i, s in zip(found, scores, strict=True)),
        key=lambda pair: (-layer_of[pair[0]], -pair[1], pair[0]),
    )
    first = {node_id for node_id, _ in ranked}
    return ranked + [(node_id, score) for node_id, score in hits if node_id not in first]


def tree_traversal(
    store: Store,
    kb_id: int,
    query: str,
    query_vector: np.ndarray,
    *,
    budget: int,
    top_k: int,
    layers: list[int] | None = None,
    documents: list[str] | None = None,
) -> RetrievedContext:
    """Top-k per layer from the roots down; exact cosine scores over the few candidates at each step."""
    allowed = allowed_ids(store, kb_id, layers, documents)
    if documents:
        # Cross-document summaries mix documents; start from the chosen documents' own tops.
        frontier = [t.id for t in store.document_tops(kb_id) if allowed is not None and t.id in allowed]
    else:
        frontier = store.root_ids(kb_id)
    selected: list[tuple[int, float]] = []
    seen: set[int] = set()
    while frontier:
        ids, matrix = store.embeddings(kb_id, ids=frontier)
        if len(ids) == 0:
            break
        scores = matrix @ query_vector.astype(np.float32)
        order = np.argsort(-scores, kind="stable")[:top_k]
        picked = [(int(ids[i]), float(scores[i])) for i in order if int(ids[i]) not in seen]
        seen.update(node_id for node_id, _ in picked)
        selected += picked
        children = store.children([node_id for node_id, _ in picked])
        frontier = sorted({c for kids in children.values() for c in kids} - seen)
    nodes = store.nodes_by_ids([node_id for node_id, _ in selected])
    scored = [
        (nodes[node_id], score)
        for node_id, score in selected
        if node_id in nodes and (not layers or nodes[node_id].layer in layers)
    ]
    # The nodes are fixed before the fill, so budget freed by dropping copies could buy nothing new.
    chosen, used = fill_budget(scored, budget, new_text_only=False)
    return RetrievedContext(chosen, used, budget, "traversal", query)
