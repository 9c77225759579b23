"""One document's tree as a pure function: bytes + settings -> nodes, embeddings, edges, chunks (and
`build_trees`: the trees of message documents chunked already).

Nothing here reads or writes the store, so the same function runs in the engine's process (the CLI's
default) or on a Dask worker (raptor_engine.workers) that shares no disk with the bot. The engine adds
the cross-document layer and commits the result in one transaction.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from ..config import Settings
from ..errors import IngestError, LimitError
from ..ingest.budget import current_budget
from ..ingest.chunk import chunk_document
from ..ingest.load import LoadLimits, document_fingerprint, document_words_fingerprint
from ..ingest.parse_worker import ParseStats, WorkerLimits, load_isolated
from ..storage.records import NewNode
from ..types import Chunk, LoadedDocument, Progress, ProgressCallback, Summarizer
from .build import BuiltTree, build_document_tree
from .cluster import import_umap, may_cluster
from .embed import Embedder, token_floor

log = logging.getLogger(__name__)

# Refuse a document when more than this share of its text is [UNK] to the model: its chunks would all
# embed alike (a DNA sequence, a flood of emoji), so it could not be searched, and it would cost minutes.
MAX_UNKNOWN_SHARE = 0.5
PARSE_GRACE_S = 1.0  # the parse child outlives a build stopped at its deadline by at most this
Ready = TypeVar("Ready")


@dataclass
class DocumentTree:
    """What building one document produced: everything the engine needs to store it."""

    tree: BuiltTree
    chunks: list[Chunk]
    format: str
    parse: ParseStats = field(default_factory=ParseStats)
    notices: tuple[str, ...] = ()  # the loaded document's (LoadedDocument.notices)
    text_sha256: str = ""  # the loaded text's fingerprint (load.document_fingerprint): the same document re-saved
    words_sha256: str = ""  # its words' alone (load.words_fingerprint): the same document under another kind


def parse_limits(settings: Settings) -> WorkerLimits:
    """The bounds on reading one upload: the parse child's and the loader's (all from Settings)."""
    return WorkerLimits(
        timeout_s=settings.parse_timeout,
        memory_mb=settings.parse_memory_mb,
        max_bytes=settings.max_file_bytes,
        load=LoadLimits(
            max_expanded_bytes=settings.max_expanded_mb * 1024 * 1024,
            max_pages=settings.max_pages,
            max_elements=settings.max_elements,
            max_text_chars=settings.max_text_chars,
        ),
    )


def budgeted_parse_limits(settings: Settings) -> WorkerLimits:
    """The parse child's limits, its deadline no later than just after the build's (budget.py): the build's
    own sentence reaches the user first, and the child does not outlive the build by more than a second."""
    limits = parse_limits(settings)
    budget = current_budget()
    if budget is None or budget.remaining() + PARSE_GRACE_S >= limits.timeout_s:
        return limits
    return replace(limits, timeout_s=max(budget.remaining(), 0.0) + PARSE_GRACE_S)


async def read_upload(name: str, data: bytes, settings: Settings, stats: ParseStats) -> LoadedDocument:
    """The upload read in the parse child. A parse killed at a deadline the build's budget set (shorter
    than RAPTOR_PARSE_TIMEOUT) is the build running out of time, and says so with the budget's sentence:
    where no `budget.bound` ends the build first (on a Dask worker), that kill is what stops it."""
    limits = budgeted_parse_limits(settings)
    try:
        doc, _ = await asyncio.to_thread(load_isolated, name, data, limits, stats)
    except IngestError:
        budget = current_budget()
        if stats.outcome == "timeout" and budget is not None and limits.timeout_s < settings.parse_timeout:
            raise budget.expire() from None
        raise
    return doc


def check_token_bounds(settings: Settings, name: str, tokens: int, held: int, *, at_least: bool = False) -> None:
    """One document's tokens bound how long its ingest runs; the knowledge base's bound its size."""
    if tokens > settings.max_document_tokens:
        raise LimitError(
            f"{name} has {'at least ' if at_least else ''}{tokens:,} tokens, over the limit of "
            f"{settings.max_document_tokens:,} for one document; split it into smaller files."
        )
    if held + tokens > settings.max_kb_tokens:
        raise LimitError(
            f"{name} has {'at least ' if at_least else ''}{tokens:,} tokens; with the {held:,} already stored "
            f"that passes this knowledge base's limit of {settings.max_kb_tokens:,}."
        )


async def build_document(
    name: str,
    data: bytes,
    *,
    settings: Settings,
    held: int,
    embedder: Embedder | Awaitable[Embedder],
    summarizer: Summarizer | Awaitable[Summarizer],
    progress: ProgressCallback | None = None,
    loaded: Callable[[str, str], None] | None = None,
    leaves_ready: Callable[[list[NewNode]], None] | None = None,
) -> DocumentTree:
    """Read (in the parse child), chunk, embed, cluster and summarise one upload; `held` is how many
    tokens its knowledge base already stores (the bound on its size). `loaded` gets the text's
    fingerprint once it is read and may raise to stop there (a document stored already is not built);
    `leaves_ready` gets the leaves once embedded (`build_document_tree`).

    The embedder and summariser may still be loading (awaitables): the upload is parsed meanwhile, in
    its own process, so a new process loads its model and parses the file at the same time.
    """
    if progress:
        progress(Progress("load", 0, 1, message=name))
    stats = ParseStats()
    doc = await read_upload(name, data, settings, stats)
    log.info("read %s in %.2f s (parse child peak %.0f MB)", name, stats.seconds, stats.peak_rss_mb)
    fingerprinted: list[asyncio.Future[tuple[str, str]]] = []
    known: tuple[str, str] | None = None
    if loaded:
        known = _fingerprints(doc)
        loaded(*known)
    else:  # nothing to check it against now: it is computed beside the leaf layer's clustering
        leaves_ready = _fingerprint_beside(doc, fingerprinted, leaves_ready)
    embedder, summarizer = await _ready(embedder), await _ready(summarizer)
    # Every text counts at least one token per few characters: refuse before chunking what cannot fit.
    check_token_bounds(settings, name, token_floor(doc.text), held, at_least=True)
    if await asyncio.to_thread(embedder.unknown_share, doc.text) > MAX_UNKNOWN_SHARE:
        raise IngestError(
            name,
            "is mostly strings the embedding model cannot read (long runs of letters, digits or symbols), "
            "so it could not be searched.",
        )
    chunks = await asyncio.to_thread(
        chunk_document,
        doc,
        embedder.count_tokens,
        max_tokens=settings.chunk_tokens,
        hard_limit=embedder.max_tokens,
        count_tokens_batch=embedder.count_tokens_batch,
        max_chars=settings.node_max_chars,
    )
    if not chunks:
        raise IngestError(name, "has no text to index")
    check_token_bounds(settings, name, sum(c.tokens for c in chunks), held)
    if progress:
        progress(Progress("chunk", len(chunks), len(chunks)))
    # A process that has not warmed up (`raptor ingest` after a machine's first run) imports umap (~1.5
    # CPU s) only for a document large enough to cluster; here, before the embedding: on a thread beside
    # it, a cold 100k-token ingest took 1.4-3.2 CPU s more (the embedder keeps both cores busy).
    if may_cluster(len(chunks), settings.stop_nodes):
        await asyncio.to_thread(import_umap)
    try:
        tree = await build_document_tree(
            chunks,
            embedder=embedder,
            summarizer=summarizer,
            settings=settings,
            progress=progress,
            leaves_ready=leaves_ready,
        )
    finally:
        for future in fingerprinted:  # a failed build still waits for its thread, so nothing runs on behind it
            await asyncio.wait([future])
    fingerprint, words = fingerprinted[0].result() if fingerprinted else known or _fingerprints(doc)
    return DocumentTree(tree, chunks, doc.format, stats, doc.notices, fingerprint, words)


def _fingerprints(doc: LoadedDocument) -> tuple[str, str]:
    """The document's `document_fingerprint` and `document_words_fingerprint`, computed once for its check and
    its record."""
    return document_fingerprint(doc), document_words_fingerprint(doc)


def _fingerprint_beside(
    doc: LoadedDocument,
    started: list[asyncio.Future[tuple[str, str]]],
    leaves_ready: Callable[[list[NewNode]], None] | None,
) -> Callable[[list[NewNode]], None]:
    """A `leaves_ready` that also starts the text's fingerprints (`_fingerprints`) on a thread (appended to `started`), then
    calls `leaves_ready`. The fingerprint reads the text as Markdown (0.1-0.2 s for 100k tokens, one core):
    once the leaves are embedded, the leaf layer's global clustering leaves the other core idle, and the
    build, not the fingerprint, is what the upload waits for."""

    def ready(leaves: list[NewNode]) -> None:
        started.append(asyncio.ensure_future(asyncio.to_thread(_fingerprints, doc)))
        if leaves_ready is not None:
            leaves_ready(leaves)

    return ready


async def build_trees(
    chunk_lists: list[list[Chunk]],
    *,
    embedder: Embedder,
    summarizer: Summarizer,
    settings: Settings,
    progress: ProgressCallback | None = None,
) -> list[BuiltTree]:
    """The trees of documents chunked already (a message rebuild's documents, which the engine chunks
    where it planned them), one after another: the unit a message rebuild runs, in the engine's process
    or as one Dask task."""
    return [
        await build_document_tree(
            chunks, embedder=embedder, summarizer=summarizer, settings=settings, progress=progress
        )
        for chunks in chunk_lists
    ]


async def _ready(value: Ready | Awaitable[Ready]) -> Ready:
    """A component, once it has loaded."""
    return await value if inspect.isawaitable(value) else value
