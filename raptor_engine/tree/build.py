"""Build a RAPTOR tree in memory: leaves, then layers of summaries until clustering is no longer feasible.

Stop rule (documented in docs/HOW_IT_WORKS.md): a layer gets a parent layer only while it has more than
`stop_nodes` nodes (default 3) and clustering groups it into fewer clusters than it has nodes;
otherwise that layer is the document's top. The cross-document layer (`build_kb_layer`) then
groups every document's top nodes, so a knowledge base always has summaries above its documents.
Nothing here touches SQLite: the engine stores the result in one transaction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import Settings
from ..errors import RaptorError
from ..ingest.sentences import SentenceSpan, sentence_spans
from ..storage.records import NewNode, StoredTop
from ..types import Chunk, Clustering, Progress, ProgressCallback, Summarizer, SummaryRequest
from .cluster import cluster_nodes
from .embed import Embedder
from .summarize import clip_chars, pooled_vector, summary_budget

log = logging.getLogger(__name__)

SUMMARY_VECTORS = ("pooled", "model")  # RAPTOR_SUMMARY_VECTORS: see `_summary_vectors`


@dataclass
class LayerRecord:
    """What happened at one layer, kept in the build record."""

    layer: int
    nodes: int
    clusters: int = 0
    method: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class BuiltTree:
    nodes: list[NewNode]
    layers: list[LayerRecord]
    stop_reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def height(self) -> int:
        return len(self.layers)


@dataclass
class Summarized:
    """A layer of new summary nodes, with the API usage it cost."""

    nodes: list[NewNode]
    clusters: int
    method: str
    notes: list[str]
    prompt_tokens: int
    completion_tokens: int


def _notify(progress: ProgressCallback | None, event: Progress) -> None:
    if progress is not None:
        try:
            progress(event)
        except Exception:  # a broken progress display must never break a build
            log.warning("progress callback failed", exc_info=True)


async def _embed_beside_sentences(
    embedder: Embedder,
    texts: list[str],
    counts: list[int],
    report: Callable[[int, int], None] | None = None,
    *,
    sentences_of: list[str] | None = None,
    code: list[bool] | None = None,
) -> tuple[np.ndarray, list[list[SentenceSpan]]]:
    """The texts' vectors and the stored sentences of `sentences_of` (default: the same texts), computed
    at the same time on two threads.

    The model runs in onnxruntime without the GIL and does not keep both cores busy; splitting and
    counting the sentences (Python) uses the rest instead of waiting for the vectors.
    """
    return await asyncio.gather(
        asyncio.to_thread(embedder.embed, texts, report, token_counts=counts),
        asyncio.to_thread(
            sentence_spans, texts if sentences_of is None else sentences_of, embedder.count_tokens_batch, code or ()
        ),
    )


async def _summary_vectors(
    embedder: Embedder, texts: list[str], counts: list[int], pooled: list[np.ndarray | None]
) -> tuple[np.ndarray, list[list[SentenceSpan]]]:
    """The summaries' vectors (pooled where given, the model's for the rest) and their stored sentences."""
    missing = [j for j, vector in enumerate(pooled) if vector is None]
    embedded, sentences = await _embed_beside_sentences(
        embedder, [texts[j] for j in missing], [counts[j] for j in missing], sentences_of=texts
    )
    vectors = np.empty((len(texts), embedder.dim), dtype=np.float32)
    for j, vector in enumerate(pooled):
        if vector is not None:
            vectors[j] = vector
    vectors[missing] = embedded
    log.debug("summary vectors: %d pooled from their children, %d embedded", len(texts) - len(missing), len(missing))
    return vectors, sentences


async def embed_leaves(
    chunks: list[Chunk], embedder: Embedder, progress: ProgressCallback | None = None
) -> list[NewNode]:
    """Layer 0: one node per chunk, embedded in batches off the event loop."""

    def report(done: int, total: int) -> None:
        _notify(progress, Progress("embed", done, total, layer=0))

    texts = [c.text for c in chunks]
    tokens = [c.tokens for c in chunks]
    vectors, sentences = await _embed_beside_sentences(embedder, texts, tokens, report, code=[c.code for c in chunks])
    return [
        NewNode(
            key=i,
            layer=0,
            kind="leaf",
            text=c.text,
            tokens=c.tokens,
            embedding=vectors[i],
            start=c.start,
            end=c.end,
            page=c.page,
            heading=tuple(c.heading),
            page_marks=c.page_marks,
            sentences=sentences[i],
            code=c.code,
        )
        for i, c in enumerate(chunks)
    ]


async def cluster_layer(
    members: list[NewNode] | list[StoredTop],
    *,
    layer: int,
    summarizer: Summarizer,
    settings: Settings,
    progress: ProgressCallback | None = None,
) -> Clustering:
    """Cluster a layer's nodes (UMAP + GMM off the event loop), bounded by the summariser's input budget."""
    _notify(progress, Progress("cluster", 0, len(members), layer=layer))
    return await asyncio.to_thread(
        cluster_nodes,
        np.vstack([m.embedding for m in members]).astype(np.float32),
        [m.tokens for m in members],
        max_cluster_tokens=summarizer.input_budget,
        threshold=settings.cluster_threshold,
        dim=settings.cluster_dim,
        max_clusters=settings.max_clusters,
        seed=settings.seed,
    )


async def summarize_clusters(
    members: list[NewNode] | list[StoredTop],
    clusters: list[list[int]],
    *,
    layer: int,
    first_key: int,
    kind: str,
    embedder: Embedder,
    summarizer: Summarizer,
    settings: Settings,
    progress: ProgressCallback | None = None,
) -> tuple[list[NewNode], int, int]:
    """One summary node per cluster (all requests at once, so an LLM backend can run them concurrently).

    Returns the nodes and the prompt and completion tokens spent. Members that are stored nodes
    (`StoredTop`) become `stored_children`; members built in this run become `children`.
    """
    if settings.summary_vectors not in SUMMARY_VECTORS:
        raise RaptorError(
            f"RAPTOR_SUMMARY_VECTORS must be one of {', '.join(SUMMARY_VECTORS)}, not {settings.summary_vectors!r}."
        )
    max_tokens = min(settings.summary_max_tokens, embedder.max_tokens)
    requests = [
        SummaryRequest(
            texts=[members[i].text for i in cluster],
            code=[getattr(members[i], "code", False) for i in cluster],
            embeddings=np.vstack([members[i].embedding for i in cluster]).astype(np.float32),
            max_tokens=summary_budget(
                sum(members[i].tokens for i in cluster), settings.summary_ratio, max_tokens
            ),
        )
        for cluster in clusters
    ]
    _notify(progress, Progress("summarise", 0, len(requests), layer=layer))
    summaries = await summarizer.summarize_many(requests)
    texts = [clip_chars(s.text, settings.node_max_chars) for s in summaries]
    counts = await asyncio.to_thread(embedder.count_tokens_batch, texts)
    pooled = [
        pooled_vector(s.copied, r.embeddings) if settings.summary_vectors == "pooled" and s.text == text else None
        for s, r, text in zip(summaries, requests, texts, strict=True)
    ]
    vectors, sentences = await _summary_vectors(embedder, texts, counts, pooled)
    _notify(
        progress, Progress("summarise", len(requests), len(requests), layer=layer, summaries=len(requests))
    )
    nodes = []
    for j, cluster in enumerate(clusters):
        node = NewNode(
            key=first_key + j,
            layer=layer,
            kind=kind,
            text=texts[j],
            tokens=counts[j],
            embedding=vectors[j],
            sentences=sentences[j],
        )
        for i in cluster:
            member = members[i]
            if isinstance(member, StoredTop):
                node.stored_children.append(member.id)
            else:
                node.children.append(member.key)
        nodes.append(node)
    return nodes, sum(s.prompt_tokens for s in summaries), sum(s.completion_tokens for s in summaries)


async def build_document_tree(
    chunks: list[Chunk],
    *,
    embedder: Embedder,
    summarizer: Summarizer,
    settings: Settings,
    progress: ProgressCallback | None = None,
    leaves_ready: Callable[[list[NewNode]], None] | None = None,
) -> BuiltTree:
    """Leaves, then summary layers until the stop rule holds. Raises whatever the summariser raises.

    `leaves_ready` gets the embedded leaves before the first clustering (the engine starts their search
    index on the core that clustering's single-threaded global step leaves idle); they come first in
    the returned nodes, in chunk order."""
    leaves = await embed_leaves(chunks, embedder, progress)
    if leaves_ready is not None:
        leaves_ready(leaves)
    nodes = list(leaves)
    current = leaves
    records = [LayerRecord(layer=0, nodes=len(leaves))]
    prompt_tokens = completion_tokens = 0
    while True:
        if len(current) <= settings.stop_nodes:
            stop = f"layer {current[0].layer} has {len(current)} node(s), at most stop_nodes={settings.stop_nodes}"
            break
        layer = current[0].layer + 1
        clustering = await cluster_layer(
            current, layer=layer, summarizer=summarizer, settings=settings, progress=progress
        )
        record = records[-1]
        record.clusters, record.method, record.notes = (
            len(clustering.clusters),
            clustering.method,
            clustering.notes,
        )
        if len(clustering.clusters) >= len(current):
            stop = f"clustering layer {layer - 1} gave {len(clustering.clusters)} clusters for {len(current)} nodes"
            break
        current, used_prompt, used_completion = await summarize_clusters(
            current,
            clustering.clusters,
            layer=layer,
            first_key=len(nodes),
            kind="summary",
            embedder=embedder,
            summarizer=summarizer,
            settings=settings,
            progress=progress,
        )
        prompt_tokens += used_prompt
        completion_tokens += used_completion
        nodes += current
        records.append(LayerRecord(layer=layer, nodes=len(current)))
    log.info("built %d layers, %d nodes (%s)", len(records), len(nodes), stop)
    return BuiltTree(nodes, records, stop, prompt_tokens, completion_tokens)


async def build_kb_layer(
    tops: list[StoredTop],
    *,
    first_key: int,
    embedder: Embedder,
    summarizer: Summarizer,
    settings: Settings,
    progress: ProgressCallback | None = None,
) -> Summarized | None:
    """Cross-document summaries over every document's top nodes; None when there is nothing to group.

    It sits one layer above the highest document top, and always groups (a single cluster at
    least), so even a one-document knowledge base gets a root that speaks for the whole.
    """
    if len(tops) < 2:
        return None
    layer = max(t.layer for t in tops) + 1
    clustering = await cluster_layer(
        tops, layer=layer, summarizer=summarizer, settings=settings, progress=progress
    )
    clusters = clustering.clusters
    notes = list(clustering.notes)
    if len(clusters) >= len(tops):
        clusters = [list(range(len(tops)))]
        notes.append(f"{len(tops)} document tops did not cluster; grouped as one")
    nodes, used_prompt, used_completion = await summarize_clusters(
        tops,
        clusters,
        layer=layer,
        first_key=first_key,
        kind="kb",
        embedder=embedder,
        summarizer=summarizer,
        settings=settings,
        progress=progress,
    )
    return Summarized(nodes, len(clusters), clustering.method, notes, used_prompt, used_completion)
