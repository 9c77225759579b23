"""Retrieval: the collapsed tree (the paper's choice) and tree traversal.

Collapsed tree: every layer is searched at once through the knowledge base's hnswlib index, and
nodes are taken in score order while they fit the token budget. A node that does not fit is
skipped and the next one tried, so one long summary does not end the context early (the official
code stops at the first node that does not fit).

The collapsed tree fills the budget with new text only: a node's sentences that the context already
holds (an extractive summary is made of its children's sentences) are dropped and not counted, so
the budget buys distinct text; the node stays cited for what it adds.

Hybrid candidates (`ranking` "hybrid", the default, or "learned"): the vector search's candidates are
fused with a full-text (SQLite FTS5, BM25) search over every node by reciprocal rank fusion, and the
nodes holding a distinctive word of the question that few nodes hold (a code like E-4012, a part
number, a surname) come first, so such a question finds the node that names it even when the
embedding does not. With "learned", the first RERANK candidates are then ordered by the shipped
ranker's node model (ranker.py); it measured worse than the fused order (docs/EVALUATION.md), so it
is not the default. Given a judge (the extractive answer's quote model) and `Fusion.judged` above 0,
the fused order's first nodes are reordered by how well their best sentences answer the question
(`judged_order`); that measured no better either, so the engine passes none.

A small budget (up to `Trim.max_budget` tokens) is filled with the parts of nodes that answer: the fill
order's first nodes are judged sentence by sentence by the extractive answer's quote model, a summary
keeps only its best sentences, and a node too big for the room left keeps the best sentences that fit
instead of being skipped (`trimmed_sentences`). A trimmed node keeps its id, layer and citation; an
ELISION mark stands where its left-out sentences stood.

Tree traversal: the top-k nodes among the roots, then the top-k among their children, down to
the leaves; the selected nodes fill the budget top-down.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ..ingest.chunk import is_row_line
from ..ingest.sentences import (
    STOPWORDS,
    NewSentences,
    SentenceSpan,
    content_terms,
    decode_spans,
    in_bigrams,
    sentence_key,
    sentence_spans,
    sentences_of,
    stem,
    strip_bullet,
)
from ..storage.index import KBIndex
from ..storage.records import StoredNode
from ..storage.store import Store
from ..types import ContextNode, PageMarks, RetrievedContext
from .followup import asks_about_the_whole
from .ranker import NodeCandidate, load_ranker, node_features

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
RANKINGS = ("hybrid", "learned", "vector")
RERANK = 60  # candidates the learned ranker orders (their texts are read); the rest follow in fused order
# A code, part number or reference: letters and digits joined by - / . _ ("E-4012", "7731-B", "v2.3")
CODE = re.compile(r"[A-Za-z0-9]+(?:[-/._][A-Za-z0-9]+)+")
DISTINCTIVE = re.compile(r"[A-Za-z0-9]+(?:[-/._][A-Za-z0-9]+)+|\b[A-Za-z]*\d[A-Za-z0-9]*\b|\b[A-Z][a-z]{2,}\b")
MAX_DISTINCTIVE = 4  # distinctive words looked up per question (one small text search each)
RARE_NODES = 3  # a distinctive word held by at most this many nodes puts them first


@dataclasses.dataclass(frozen=True)
class Fusion:
    """How the hybrid order is made from the two searches. The defaults are the engine's; the others
    measured no better on the evaluation sets' training split (docs/EVALUATION.md, "Small budgets"),
    and `raptor_tools.benchmarks.context_orders` measures them side by side."""

    rrf_k: int = 60  # reciprocal rank fusion's constant (Cormack et al. 2009)
    text_weight: float = 1.0  # the full-text rank's share against the vector rank's 1
    text_candidates: int = 50  # nodes fetched from the full-text index
    rare_first: bool = True  # nodes naming a rare distinctive word of the question come first
    # The quote model as a judge of the fused order's first nodes (`judged_order`): measured no better
    # (docs/EVALUATION.md, "Small budgets"), so the engine judges none.
    judged: int = 0  # the fused order's first nodes (after the rare-term ones) a judge reorders
    judge_sentences: int = 2  # a node's worth: the mean of its best this many sentences' scores; 0: of all
    judge_rank_weight: float = 0.1  # what the fused rank takes off a judged node's worth, first to last


FUSION = Fusion()


@dataclasses.dataclass(frozen=True)
class Trim:
    """How a small budget is filled with the parts of nodes that answer (`trimmed_sentences`): the
    fill order's first `head` nodes are judged by the quote model; a summary keeps only its best
    sentences, so a thematic question still gets it but it leaves room for leaves, and a node too big
    for the room left keeps the best sentences that fit instead of being skipped. The defaults are the
    engine's, chosen in docs/EVALUATION.md ("Small budgets: the parts of nodes that answer"), where
    `raptor_tools.benchmarks.context_orders` measures the others."""

    max_budget: int = 1000  # budgets up to this are trimmed; 0: none is
    head: int = 20  # the fill order's first nodes judged
    keep: int = 3  # a trimmed node's best sentences kept
    neighbours: int = 0  # sentences either side of a kept one kept too
    top: int = 0  # also kept: any sentence among the head's best `top` (0: none)
    layers: str = "summaries"  # judged nodes trimmed up front: "all", "summaries", "leaves" or "none"
    whole: int = 0  # the head's first nodes never trimmed up front
    fit: bool = True  # a judged node too big for the room left keeps the best sentences that fit


TRIM = Trim()

# How well each sentence of a context's nodes answers the question, per node, best first (the extractive
# answer's quote model: `ExtractiveAnswerer.node_scores`); empty for a node it cannot judge. Retrieval
# takes it as a callable so that it depends on no answerer.
Judge = Callable[[str, np.ndarray, list[ContextNode]], list[list[float]]]
# The same model's score of each quotable sentence of each node, by sentence key
# (`ExtractiveAnswerer.sentence_scores`): what a trimmed node keeps.
SentenceJudge = Callable[[str, np.ndarray, list[ContextNode]], list[dict[str, float]]]


def context_node(node: StoredNode, score: float) -> ContextNode:
    """A stored node as the context holds it, with its retrieval score."""
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
        code=node.code,
    )


ELISION = "\u2026"  # stands where a trimmed node's left-out sentences stood: its own sentence, never quoted
ELISION_TOKENS = 1  # what one mark costs of the budget


@dataclasses.dataclass
class Trimmed:
    """What `trimmed_sentences` decided, per node id: the sentences each trimmed node keeps, the tokens
    that leaves it, and for every judged node its scored sentences' indices, best first (what
    `Trim.fit` keeps of a node too big for the room left)."""

    wanted: dict[int, list[bool]] = dataclasses.field(default_factory=dict)
    sizes: dict[int, int] = dataclasses.field(default_factory=dict)
    ranks: dict[int, list[int]] = dataclasses.field(default_factory=dict)
    fit: bool = False


@dataclasses.dataclass(frozen=True)
class _Shortened:
    """A node's text rebuilt from some of its sentences: the text, where each kept sentence starts in
    it, and where each sentence the context holds elsewhere stood (see `_left_out`)."""

    text: str
    offsets: list[int]
    held_elsewhere: tuple[tuple[int, str], ...]
    elisions: int


_FENCE_SENTENCE = re.compile(r"(?:`{3,}|~{3,})[^`\n]*")


def _is_fence(text: str, sentence: SentenceSpan) -> bool:
    """Whether a sentence is a code fence's line: it has no words, so it reads as a copy of any other, yet
    a leaf rebuilt without it reads its code as prose and the prose after it as code (`chunk.code_lines`)."""
    return _FENCE_SENTENCE.fullmatch(text, sentence.start, sentence.end) is not None


def _rebuilt(
    text: str, sentences: tuple[SentenceSpan, ...], shown: list[bool], copies: list[bool]
) -> _Shortened:
    """The shown sentences in their original wording, a line break kept where one separated them. A run
    of sentences neither shown nor copies (trimmed for the budget) leaves an ELISION mark in its place,
    so a reader (and the LLM) sees that the node goes on; a copy leaves no mark, the context holds it."""
    parts: list[str] = []
    offsets: list[int] = []
    left_out: list[tuple[int, str]] = []
    length, elisions = 0, 0
    previous: SentenceSpan | None = None
    last: SentenceSpan | None = None  # the sentence before this one, shown or not
    gap = False  # a trimmed sentence since the last shown one
    for sentence, show, copy in zip(sentences, shown, copies, strict=True):
        before, last = last, sentence
        if not show:
            gap = gap or not copy
            if copy:
                left_out.append((length + (1 if parts else 0), sentence_key(strip_bullet(sentence.text))))
            continue
        if gap:
            separator = _elision(text, previous, sentence)
            elisions += 1
        elif previous is None:
            separator = ""
        elif previous is before:  # the white space between neighbours as it was: a blank line, code's indentation
            separator = text[previous.end : sentence.start]
        else:
            separator = "\n" if "\n" in text[previous.end : sentence.start] else " "
        parts.append(separator)
        length += len(separator)
        offsets.append(length)
        parts.append(text[sentence.start : sentence.end])
        length += sentence.end - sentence.start
        previous, gap = sentence, False
    if gap and parts:
        parts.append(_elision(text, previous, None))
        elisions += 1
    return _Shortened("".join(parts), offsets, tuple(left_out), elisions)


def _elision(text: str, before: SentenceSpan | None, after: SentenceSpan | None) -> str:
    """The mark, with its spacing, for sentences left out between two shown ones (either may be None: the
    text's start or end). Beside a table's row it stands on a line of its own: a row is one sentence to
    its line's end, so a mark and the next row run onto its line read as more of its last cell, and both
    rows as no row ('- Item: A; Notes: x. … - Item: C; Notes: w.')."""
    rows = [s for s in (before, after) if s is not None and is_row_line(text[s.start : s.end])]
    if not rows:
        return f" {ELISION} " if before and after else f" {ELISION}" if before else f"{ELISION} "
    return f"\n{ELISION}\n" if before and after else f"\n{ELISION}" if before else f"{ELISION}\n"


def _moved_marks(node: ContextNode, kept: list[SentenceSpan], offsets: list[int]) -> PageMarks:
    """The node's page marks for the shortened text: each kept sentence keeps the page it was on."""
    marks: list[tuple[int, int]] = []
    for sentence, offset in zip(kept, offsets, strict=True):
        pages = node.pages(sentence.start, sentence.end)
        if pages is not None and (not marks or marks[-1][1] != pages[0]):
            marks.append((offset, pages[0]))
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
    node: ContextNode,
    sentences: tuple[SentenceSpan, ...],
    held: NewSentences,
    wanted: list[bool] | None = None,
) -> tuple[ContextNode | None, list[SentenceSpan]]:
    """The node with the sentences the context already holds removed, or None if too little is new;
    and the sentences it keeps. A shortened node counts the tokens of the sentences it keeps.

    The node keeps its id, layer and citation; only its text and token count shrink. A summary with
    less than MIN_NEW_SUMMARY_SHARE of it new is left out: its score was earned mostly by text
    already held, so it does not vouch for the stray sentences left over. A leaf is kept for any new
    sentence, since what is left of it is the held sentence's own neighbourhood.

    `wanted` (from `trimmed_sentences`) leaves out, besides, the sentences a small budget cannot afford;
    the share of new text is then judged on the wanted ones alone.
    """
    fences = [not s.fingerprint and _is_fence(node.text, s) for s in sentences]
    copies = [held.is_copy(s) and not fence for s, fence in zip(sentences, fences, strict=True)]
    shown = [not copy and (wanted is None or want) for copy, want in zip(copies, wanted or copies, strict=True)]
    kept = [s for s, show in zip(sentences, shown, strict=True) if show]
    if not any(show and not fence for show, fence in zip(shown, fences, strict=True)):  # none, or fences alone
        return None, []
    if len(kept) == len(sentences):
        return node, kept
    rebuilt = _rebuilt(node.text, sentences, shown, copies)
    wanted_length = sum(
        s.end - s.start for s, want in zip(sentences, wanted or shown, strict=True) if wanted is None or want
    )
    new_length = len(rebuilt.text) if wanted is None else sum(s.end - s.start for s in kept)
    if node.layer > 0 and new_length < MIN_NEW_SUMMARY_SHARE * (len(node.text) if wanted is None else wanted_length):
        return None, []
    tokens = max(1, sum(s.tokens for s in kept) + ELISION_TOKENS * rebuilt.elisions)
    shortened = dataclasses.replace(
        node,
        text=rebuilt.text,
        tokens=tokens,
        page_marks=_moved_marks(node, kept, rebuilt.offsets),
        held_elsewhere=rebuilt.held_elsewhere,
    )
    return shortened, kept


class BudgetFill:
    """Nodes offered in score order are taken while they fit; one that does not is skipped, not the end.

    With `new_text_only`, only new text counts: a node's sentences already in the context (an
    extractive summary copies its children's) are dropped first, and a node with nothing new is left
    out. A shortened node counts its kept sentences' tokens, as stored with the node (for a node stored
    before they were, counted by `count_tokens_batch`, or estimated from characters without it).
    """

    def __init__(
        self,
        budget: int,
        count_tokens_batch: CountTokensBatch | None = None,
        *,
        new_text_only: bool = True,
        trimmed: Trimmed | None = None,
    ):
        self.budget = budget
        self.count_tokens_batch = count_tokens_batch
        self.new_text_only = new_text_only
        self.trimmed = trimmed or Trimmed()  # what a small budget keeps of the first nodes
        self.chosen: list[ContextNode] = []
        self.used = 0
        self._held = NewSentences()

    @property
    def room(self) -> int:
        return self.budget - self.used

    def offer(self, stored: StoredNode, score: float) -> None:
        node: ContextNode | None = context_node(stored, score)
        kept: list[SentenceSpan] = []
        if self.new_text_only:
            sentences = node_sentences(stored, self.count_tokens_batch)
            whole = node
            node, kept = _only_new(whole, sentences, self._held, self.trimmed.wanted.get(stored.id))
            if node is not None and node.tokens > self.room and self.trimmed.fit and stored.id in self.trimmed.ranks:
                node, kept = self._fitted(whole, sentences, self.trimmed.ranks[stored.id])
        if node is None or node.tokens > self.room:
            return
        self.chosen.append(node)
        self._held.add(kept)
        self.used += node.tokens


    def _fitted(
        self, node: ContextNode, sentences: tuple[SentenceSpan, ...], ranks: list[int]
    ) -> tuple[ContextNode | None, list[SentenceSpan]]:
        """The node cut to its best new sentences that fit the room left, each counted with the
        elision mark it may need."""
        mask = [False] * len(sentences)
        used = ELISION_TOKENS
        for i in ranks:
            cost = sentences[i].tokens + ELISION_TOKENS
            if not self._held.is_copy(sentences[i]) and used + cost <= self.room:
                mask[i] = True
                used += cost
        if not any(mask):
            return None, []
        return _only_new(node, sentences, self._held, mask)


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
    store: Store,
    index: KBIndex,
    hits: list[tuple[int, float]],
    fill: BudgetFill,
    known: dict[int, StoredNode] | None = None,
    trimmed: Trimmed | None = None,
) -> None:
    """Offer the hits in score order, reading full rows a batch at a time, and stop reading once no
    remaining candidate fits whole: at 100k nodes reading all 200 candidates' texts cost more than
    the search. (A candidate too big whole could still shrink below the room by dropping held
    sentences; leaving it out costs little, since most of its text is then already there.)

    Whether a candidate fits whole is read from the token counts the index holds; `known` nodes (read
    already, by the ranker) are not read again; a `trimmed` node's size is that of what it keeps."""
    batch = FETCH_BATCH
    known = known or {}
    sizes = index.tokens.counts_of([node_id for node_id, _ in hits])
    if len(sizes) < len(hits):  # not in the index (it is kept in step with SQLite, so this is rare)
        sizes.update(store.node_tokens([node_id for node_id, _ in hits if node_id not in sizes]))
    if trimmed is not None:
        sizes.update({node_id: size for node_id, size in trimmed.sizes.items() if node_id in sizes})
    pending = [(node_id, score) for node_id, score in hits if node_id in sizes]
    for begin in range(0, len(pending), batch):
        if not any(sizes[node_id] <= fill.room for node_id, _ in pending[begin:]):
            return
        part = [
            (node_id, score)
            for node_id, score in pending[begin : begin + batch]
            if sizes[node_id] <= fill.room
        ]
        nodes = {node_id: known[node_id] for node_id, _ in part if node_id in known}
        nodes.update(store.nodes_by_ids([node_id for node_id, _ in part if node_id not in known]))
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
    ranking: str = "learned",
    fusion: Fusion = FUSION,
    judge: Judge | None = None,
    sentence_judge: SentenceJudge | None = None,
    trim: Trim = TRIM,
) -> RetrievedContext:
    """The context for a question: candidates in `ranked_hits` order (judged by `judge`, if given, but
    for a question about the whole, whose summaries come first), taken while they fit the budget. With
    a `sentence_judge` and a budget up to `trim.max_budget`, the first nodes are trimmed to their best
    sentences (`trimmed_sentences`), but for a question about the whole."""
    allowed = allowed_ids(store, kb_id, layers, documents)
    if allowed is not None and not allowed:
        return RetrievedContext([], 0, budget, "collapsed", query)
    about_the_whole = asks_about_the_whole(query)
    hits, known = ranked_hits(
        store,
        index,
        kb_id,
        query,
        query_vector,
        ef=ef,
        allowed=allowed,
        ranking=ranking,
        fusion=fusion,
        judge=None if about_the_whole else judge,
    )
    if about_the_whole:
        hits = _summaries_first(store, kb_id, hits, query_vector, allowed)
    trimmed = None
    if sentence_judge is not None and budget <= trim.max_budget and not about_the_whole:
        trimmed = trimmed_sentences(store, query, query_vector, hits, known, sentence_judge, trim, count_tokens_batch)
    fill = BudgetFill(budget, count_tokens_batch, trimmed=trimmed)
    _fill_reading_lazily(store, index, hits, fill, known, trimmed)
    chosen, used = fill.chosen, fill.used
    return RetrievedContext(chosen, used, budget, "collapsed", query)


def trimmed_sentences(
    store: Store,
    query: str,
    query_vector: np.ndarray,
    hits: list[tuple[int, float]],
    known: dict[int, StoredNode],
    judge: SentenceJudge,
    trim: Trim,
    count_tokens_batch: CountTokensBatch | None = None,
) -> Trimmed:
    """Which sentences each of the first `trim.head` hits keeps, by node id, and the tokens that leaves
    it (its kept sentences and elision marks). A node keeps its `trim.keep` best-scored sentences (and
    `trim.neighbours` either side of each, and any among the head's `trim.top` best); a node the
    judge cannot score, or that would keep every sentence, is left whole (absent). The nodes read are
    added to `known`."""
    head = hits[: trim.head]
    known.update(store.nodes_by_ids([node_id for node_id, _ in head if node_id not in known]))
    present = [(known[node_id], score) for node_id, score in head if node_id in known]
    scores = judge(query, query_vector, [context_node(node, score) for node, score in present])
    spans = [node_sentences(node, count_tokens_batch) for node, _ in present]
    keys = [[sentence_key(strip_bullet(s.text)) for s in sentences] for sentences in spans]
    every = sorted((v for found in scores for v in found.values()), reverse=True)
    floor = every[trim.top - 1] if 0 < trim.top <= len(every) else float("inf")
    found = Trimmed(fit=trim.fit)
    for rank, ((node, _), sentences, names, scored) in enumerate(zip(present, spans, keys, scores, strict=True)):
        values = [scored.get(key) for key in names]
        ranks = sorted((i for i, v in enumerate(values) if v is not None), key=lambda i: (-(values[i] or 0.0), i))
        if not ranks:
            continue
        found.ranks[node.id] = ranks
        if trim.fit:  # the smallest it can shrink to, so the lazy fill reads it
            found.sizes[node.id] = sentences[ranks[0]].tokens + 2 * ELISION_TOKENS
        if rank < trim.whole or not _trims(node.layer, trim.layers):
            continue
        mask = _kept_sentences(values, trim, floor)
        if mask is None:
            continue
        found.wanted[node.id] = mask
        runs = sum(1 for i, keep in enumerate(mask) if not keep and (i == 0 or mask[i - 1]))
        size = sum(s.tokens for s, keep in zip(sentences, mask, strict=True) if keep) + runs * ELISION_TOKENS
        found.sizes[node.id] = min(size, found.sizes.get(node.id, size))
    return found


def _trims(layer: int, layers: str) -> bool:
    """Whether a node of this layer is trimmed up front under `Trim.layers`."""
    return layers == "all" or (layers == "summaries" and layer > 0) or (layers == "leaves" and layer == 0)


def _kept_sentences(scores: list[float | None], trim: Trim, floor: float) -> list[bool] | None:
    """The sentences a node keeps (see `trimmed_sentences`), or None to keep it whole."""
    ranked = sorted((score, -i) for i, score in enumerate(scores) if score is not None)
    if not ranked:
        return None
    best = ranked[max(0, len(ranked) - trim.keep) :] if trim.keep > 0 else []
    chosen = {-i for _, i in best} | {i for i, score in enumerate(scores) if score is not None and score >= floor}
    if not chosen or len(chosen) == len(ranked):  # none or every scored sentence: the node stays whole
        return None
    mask = [False] * len(scores)
    for i in chosen:
        for j in range(max(0, i - trim.neighbours), min(len(scores), i + trim.neighbours + 1)):
            mask[j] = True
    return None if all(mask) else mask


def ranked_hits(
    store: Store,
    index: KBIndex,
    kb_id: int,
    query: str,
    query_vector: np.ndarray,
    *,
    ef: int,
    allowed: set[int] | None,
    ranking: str,
    fusion: Fusion = FUSION,
    judge: Judge | None = None,
) -> tuple[list[tuple[int, float]], dict[int, StoredNode]]:
    """The candidates in the order that fills the budget, each with its cosine (what a citation shows),
    and the nodes already read on the way (the ranker and the judge read their candidates' texts).
    With a `judge`, the fused order's first `fusion.judged` nodes after the rare-term ones are
    reordered by it (`judged_order`); the vector ranking is never judged."""
    if ranking not in RANKINGS:
        raise ValueError(f"unknown ranking {ranking!r}; use one of {', '.join(RANKINGS)}")
    hits = index.search(
        query_vector, k=CANDIDATES, ef=ef, allowed=None if allowed is None else allowed.__contains__
    )
    if ranking == "vector":
        return hits, {}
    pinned = rare_term_nodes(store, kb_id, query, allowed) if fusion.rare_first else []
    candidates = fused_candidates(store, kb_id, query, query_vector, hits, allowed, pinned, fusion)
    known: dict[int, StoredNode] = {}
    if ranking == "learned":
        known = read_candidates(store, candidates[:RERANK])
        head = [c for c in candidates[:RERANK] if c.node_id in known]
        scores = load_ranker().node_scores(node_features(query, query_terms(query), head))
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
        candidates = [head[i] for i in order] + candidates[RERANK:]
    first = set(pinned)
    lead = [c for c in candidates if c.node_id in first]
    rest = [c for c in candidates if c.node_id not in first]
    if judge is not None and fusion.judged > 0:
        rest = judged_order(store, query, query_vector, rest, judge, fusion, known)
    return [(c.node_id, c.cosine) for c in lead + rest], known


def judged_order(
    store: Store,
    query: str,
    query_vector: np.ndarray,
    candidates: list[NodeCandidate],
    judge: Judge,
    fusion: Fusion,
    known: dict[int, StoredNode],
) -> list[NodeCandidate]:
    """The first `fusion.judged` candidates reordered by their worth, the rest after them as they were. A
    node's worth is the mean of the judge's scores of its best `fusion.judge_sentences` sentences, less
    `fusion.judge_rank_weight` times its rank over `fusion.judged`. The judge weighs what
    the searches cannot: "how large is the vocabulary?" wants the leaf giving a number, not the nodes
    repeating "large". A node the judge cannot score counts as the lowest worth found; ties keep the
    fused order. The nodes read are added to `known`."""
    head, tail = candidates[: fusion.judged], candidates[fusion.judged :]
    known.update(store.nodes_by_ids([c.node_id for c in head if c.node_id not in known]))
    present = [c for c in head if c.node_id in known]
    judged = judge(query, query_vector, [context_node(known[c.node_id], c.cosine) for c in present])
    best = [scores[: fusion.judge_sentences] if fusion.judge_sentences > 0 else scores for scores in judged]
    means = [float(np.mean(scores)) if scores else None for scores in best]
    floor = min((mean for mean in means if mean is not None), default=0.0)

    def worth(rank: int) -> float:
        mean = means[rank]
        return (floor if mean is None else mean) - fusion.judge_rank_weight * rank / fusion.judged

    order = sorted(range(len(present)), key=lambda rank: (-worth(rank), rank))
    missing = [c for c in head if c.node_id not in known]  # gone since the search: left for the fill to skip
    return [present[rank] for rank in order] + missing + tail


def distinctive_phrases(query: str) -> list[str]:
    """The question's words that name one thing: codes ('E-4012'), words with a digit ('1887', 'B12')
    and capitalised words after its first ('Okonkwo' in 'What did Okonkwo sign?')."""
    found = [m.group(0) for m in DISTINCTIVE.finditer(query) if m.start() > 0 or CODE.fullmatch(m.group(0))]
    return list(dict.fromkeys(p for p in found if p.lower() not in STOPWORDS))[:MAX_DISTINCTIVE]


def rare_term_nodes(store: Store, kb_id: int, query: str, allowed: set[int] | None) -> list[int]:
    """Nodes holding a distinctive word of the question that at most RARE_NODES nodes of the knowledge
    base hold: a question naming a part number or a surname wants the node that names it first,
    whatever the embedding or the ranker (fitted on questions that rarely name one) make of it."""
    found: list[int] = []
    for phrase in distinctive_phrases(query):
        hits = store.text_search(kb_id, [phrase], RARE_NODES + 1, inside_words=in_bigrams(query))
        if len(hits) <= RARE_NODES:
            found += [node_id for node_id, _ in hits if allowed is None or node_id in allowed]
    return list(dict.fromkeys(found))


def text_phrases(query: str) -> list[str]:
    """What the full-text search looks for: each code whole ('E-4012', '7731-B'), then the question's
    other content words."""
    codes = CODE.findall(query)
    inside = {word for code in codes for word in content_terms(code)}
    return list(dict.fromkeys([*codes, *(t for t in content_terms(query) if t not in inside)]))


def query_terms(query: str) -> set[str]:
    return {stem(t) for t in content_terms(query)}


def fusion_score(candidate: NodeCandidate, fusion: Fusion = FUSION) -> float:
    """Reciprocal rank fusion: each search adds weight / (rrf_k + rank), so either alone can bring a
    node up (the vector search's weight is 1)."""
    score = 0.0
    if candidate.vector_rank is not None:
        score += 1.0 / (fusion.rrf_k + candidate.vector_rank + 1)
    if candidate.text_rank is not None:
        score += fusion.text_weight / (fusion.rrf_k + candidate.text_rank + 1)
    return score


def fused_candidates(
    store: Store,
    kb_id: int,
    query: str,
    query_vector: np.ndarray,
    hits: list[tuple[int, float]],
    allowed: set[int] | None,
    pinned: Sequence[int] = (),
    fusion: Fusion = FUSION,
) -> list[NodeCandidate]:
    """The vector hits and the full-text hits (and `pinned` nodes, were neither search to find them) in
    one list, best fused rank first. A node the vector search did not find gets its cosine from its
    stored embedding, so every candidate shows a real score."""
    candidates = {node_id: NodeCandidate(node_id, score, vector_rank=rank) for rank, (node_id, score) in enumerate(hits)}
    for node_id in pinned:
        candidates.setdefault(node_id, NodeCandidate(node_id, float("nan")))
    text_hits = store.text_search(
        kb_id, text_phrases(query), fusion.text_candidates, inside_words=in_bigrams(query)
    )
    for rank, (node_id, score) in enumerate(hit for hit in text_hits if allowed is None or hit[0] in allowed):
        candidate = candidates.setdefault(node_id, NodeCandidate(node_id, float("nan")))
        candidate.text_score, candidate.text_rank = score, rank
    missing = [node_id for node_id, c in candidates.items() if c.vector_rank is None]
    if missing:
        found, matrix = store.embeddings(kb_id, ids=missing)
        for node_id, cosine in zip(found, matrix @ query_vector.astype(np.float32), strict=True):
            candidates[int(node_id)].cosine = float(cosine)
    present = [c for c in candidates.values() if c.cosine == c.cosine]  # NaN: no embedding stored
    return sorted(present, key=lambda c: (-fusion_score(c, fusion), c.node_id))


def read_candidates(store: Store, candidates: list[NodeCandidate]) -> dict[int, StoredNode]:
    """Read the candidates' rows and give each its layer, size, text and terms (for the ranker)."""
    nodes = store.nodes_by_ids([c.node_id for c in candidates])
    for candidate in candidates:
        node = nodes.get(candidate.node_id)
        if node is not None:
            candidate.layer, candidate.tokens, candidate.text = node.layer, node.tokens, node.text
            candidate.terms = frozenset(query_terms(node.text))
    return nodes


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
