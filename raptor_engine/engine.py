"""The engine: the one API the CLI, the bot and the evaluation call.

It wires the RAPTOR steps together (load -> chunk -> embed -> cluster -> summarise -> build ->
store -> index; retrieve -> answer), keeps heavy work off the caller's event loop, and serialises
builds per knowledge base while questions go on being answered from the last complete tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import hashlib
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .config import Settings
from .errors import IngestError, LimitError, NotFoundError, RaptorError
from .ingest.budget import BuildBudget, current_budget
from .ingest.load import safe_filename
from .ingest.parse_worker import ParseStats, WorkerLimits
from .query.answer import ExtractiveAnswerer, cite_pages, map_citations, neutralise_context
from .query.ranker import ranker_for
from .query.retrieve import RANKINGS, collapsed_tree, tree_traversal
from .query.smalltalk import (
    REPLIES,
    Act,
    documents_reply,
    small_talk_act,
    sources_reply,
    strip_small_talk,
    without_small_talk,
)
from .storage.index import IndexManager
from .storage.spaces import Space, Spaces, migrate_to_spaces
from .storage.store import DocumentInfo, NewNode, StaleTreeError, Store, StoredTop
from .storage.writers import WriterGate
from .tree.build import BuiltTree, Summarized, build_kb_layer
from .tree.cluster import use_compile_cache
from .tree.docbuild import build_document, parse_limits
from .tree.embed import Embedder
from .tree.stages import StageClock
from .tree.summarize import ExtractiveSummarizer
from .tree.treeplot import plan_picture, render_png
from .types import (
    Answer,
    AnswerDraft,
    Answerer,
    ContextNode,
    Progress,
    ProgressCallback,
    RetrievedContext,
    Summarizer,
    TextCallback,
    Turn,
)

if TYPE_CHECKING:
    from .workers import BuildCluster

log = logging.getLogger(__name__)

MODES = ("collapsed", "traversal")
MAX_QUESTION_CHARS = 2000
MAX_COMMIT_ATTEMPTS = 5


# The space the current Engine call works in (see `_in_space`); copied into threads by asyncio.to_thread.
_current_space: contextvars.ContextVar[tuple[Spaces, Space] | None] = contextvars.ContextVar(
    "raptor_space", default=None
)


def _in_space(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run an Engine method whose first argument is a knowledge base name against that knowledge base's
    space: inside it (and in the threads it starts) `self.store` and `self.indexes` are that space's."""
    if asyncio.iscoroutinefunction(method):

        @functools.wraps(method)
        async def run_async(self: Engine, kb: str, *args: Any, **kwargs: Any) -> Any:
            with self.in_space(kb):
                return await method(self, kb, *args, **kwargs)

        return run_async

    @functools.wraps(method)
    def run(self: Engine, kb: str, *args: Any, **kwargs: Any) -> Any:
        with self.in_space(kb):
            return method(self, kb, *args, **kwargs)

    return run


class EmptyKnowledgeBaseError(RaptorError):
    """Asked a question of a knowledge base with no documents."""


class QuestionTimeoutError(RaptorError):
    """A question was not answered within RAPTOR_QUESTION_TIMEOUT seconds."""


@dataclass
class IngestResult:
    status: str  # "added" | "duplicate"
    document: DocumentInfo
    chunks: int = 0
    layers: int = 0
    nodes: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)  # by build stage (stages.StageClock)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["document"] = self.document.to_dict()
        return out


@dataclass
class LayerInfo:
    layer: int
    kind: str  # "leaf" | "summary" | "kb"
    nodes: int
    tokens: int


@dataclass
class TreeInfo:
    kb: str
    documents: int
    layers: list[LayerInfo]

    @property
    def nodes(self) -> int:
        return sum(layer.nodes for layer in self.layers)

    def kind_label(self, kind: str) -> str:
        """What a layer's nodes are, in words; over a single document the top layer combines nothing
        across documents, so it is not called cross-document."""
        if kind == "kb":
            return "cross-document summaries" if self.documents > 1 else "top summaries of the document"
        return {"leaf": "leaves", "summary": "summaries"}.get(kind, "nodes")

    @property
    def tokens(self) -> int:
        return sum(layer.tokens for layer in self.layers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kb": self.kb,
            "documents": self.documents,
            "nodes": self.nodes,
            "tokens": self.tokens,
            "layers": [layer.__dict__ for layer in self.layers],
        }


@dataclass
class TreePicture:
    """`Engine.tree_picture`'s result: the PNG and which of the requested nodes it highlights."""

    png: bytes
    nodes: int
    highlighted: list[int]  # requested ids found in the tree, in the order given
    cited: list[int]
    missing: list[int]  # requested ids no longer in the tree
    binned: bool  # some rows were too crowded and were drawn as groups of nodes


@dataclass
class DoctorReport:
    problems: list[str]
    repaired: list[str]

    @property
    def healthy(self) -> bool:
        return not self.problems or len(self.repaired) == len(self.problems)


def _human_size(size: int) -> str:
    """Bytes as a person reads them: a small limit must not show as '0.0 MB'."""
    if size < 10_000:
        return f"{size:,} bytes"
    if size < 10_000_000:
        return f"{size / 1000:,.0f} kB"
    return f"{size / 1e6:,.1f} MB"


def _placeholder_top(node: NewNode) -> StoredTop:
    """A top node of the document being stored, named by a negative id until it has a real one."""
    return StoredTop(
        id=-(node.key + 1), layer=node.layer, text=node.text, tokens=node.tokens, embedding=node.embedding
    )


def _conversation(question: str, history: list[Turn]) -> tuple[str, list[Turn]]:
    """The question without small talk in front of it, and the history without small-talk exchanges
    (a scan of every turn: the engine runs it in a thread)."""
    return strip_small_talk(question), without_small_talk(history)


def _resolve_placeholders(kb_nodes: list[NewNode], ids: dict[int, int]) -> list[NewNode]:
    for node in kb_nodes:
        node.stored_children = [ids[-c - 1] if c < 0 else c for c in node.stored_children]
    return kb_nodes


class Engine:
    """One engine per data directory; share it between the CLI's or the bot's tasks."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        summarizer: Summarizer | None = None,
        answerer: Answerer | None = None,
    ):
        self.settings = settings or Settings.from_env()
        use_compile_cache(self.settings.cache_dir / "numba")
        self.spaces = Spaces(self.settings)
        migrate_to_spaces(self.spaces)
        self._embedder = embedder
        self._summarizer = summarizer
        self._answerer = answerer
        self._model_lock = threading.Lock()
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, int] = defaultdict(int)
        self.last_parse: ParseStats | None = None  # what reading the latest upload cost (logs, robustness)
        self.cluster: BuildCluster | None = None  # set by the bot (or `ingest --scheduler`): builds on Dask

    # -- spaces: which store and indices a call works on ------------------------------------------

    @property
    def store(self) -> Store:
        """The store of the space the current call works in (the root store outside any call)."""
        return self._space().store

    @property
    def indexes(self) -> IndexManager:
        return self._space().indexes

    def _space(self) -> Space:
        current = _current_space.get()
        return current[1] if current is not None and current[0] is self.spaces else self.spaces.root

    @contextlib.contextmanager
    def in_space(self, kb: str) -> Iterator[Space]:
        """Work in `kb`'s space (pinned open) until the block ends: `engine.store` and `engine.indexes`
        are that space's inside it (what tools and tests that read a store directly use)."""
        with self.spaces.using(kb) as space, self._working_in(space):
            yield space

    @contextlib.contextmanager
    def _working_in(self, space: Space) -> Iterator[None]:
        token = _current_space.set((self.spaces, space))
        try:
            yield
        finally:
            _current_space.reset(token)

    def space_of(self, kb: str) -> str | None:
        """The space knowledge base `kb` lives in (None: the data directory's root store)."""
        return self.spaces.space_of(kb)

    def delete_space(self, name: str) -> bool:
        """Delete a whole space, its knowledge bases and indices (the bot: removed from a server)."""
        return self.spaces.delete(name)

    # -- components, created on first use so listing documents never loads a model ------------

    @property
    def embedder(self) -> Embedder:
        with self._model_lock:
            if self._embedder is None:
                self._embedder = Embedder(
                    self.settings.embed_model,
                    batch_size=self.settings.embed_batch_size,
                    batch_tokens=self.settings.embed_batch_tokens,
                    backend=self.settings.embed_backend,
                    cache_dir=self.settings.cache_dir,
                )
            return self._embedder

    def _llm_backends(self) -> tuple[Summarizer | None, Answerer | None]:
        if not self.settings.llm_configured:
            return None, None
        from .llm import make_backends

        return make_backends(self.settings, self.settings.db_path, count_tokens=self.embedder.count_tokens)

    @property
    def summarizer(self) -> Summarizer:
        if self._summarizer is None:
            llm_summarizer, llm_answerer = self._llm_backends()
            self._summarizer = llm_summarizer or ExtractiveSummarizer(
                self.embedder.count_tokens,
                count_tokens_batch=self.embedder.count_tokens_batch,
                input_budget=self.settings.cluster_input_budget,
            )
            if self._answerer is None and llm_answerer is not None:
                self._answerer = llm_answerer
        return self._summarizer

    @property
    def answerer(self) -> Answerer:
        if self._answerer is None:
            _, llm_answerer = self._llm_backends()
            self._answerer = llm_answerer or ExtractiveAnswerer(
                self.embedder, ranker=ranker_for(self.settings.ranking)
            )
        return self._answerer

    @property
    def backend_name(self) -> str:
        """Which backends answer and summarise, e.g. 'extractive' or 'openai:gpt-4o-mini @ host'."""
        summarizer, answerer = self.summarizer.name, self.answerer.name
        return summarizer if summarizer == answerer else f"summaries: {summarizer}; answers: {answerer}"

    def warm(self) -> None:
        """Load the model and UMAP's numba code now, off any hot path (compiled once per machine, then cached)."""
        from .tree.cluster import warm_up

        _ = self.embedder
        warm_up()

    def close(self) -> None:
        self.spaces.close()

    # -- building -----------------------------------------------------------------------------

    def _lock(self, kb: str) -> asyncio.Lock:
        return self._locks.setdefault(kb, asyncio.Lock())

    def _writer_gate(self, kb: str) -> WriterGate:
        """The cross-process turn to recompute this knowledge base's top layer and commit (writers.py)."""
        return WriterGate(self.settings.data_dir / "locks", kb, self.settings.writer_wait)

    def _version_of(self, kb_id: int | None) -> int:
        """The knowledge base's version now (0 for one not created yet), to detect other writers."""
        return 0 if kb_id is None else self.store.kb_version(kb_id)

    def queue_length(self, kb: str) -> int:
        """Builds of this knowledge base running or waiting in this process."""
        return self._waiting.get(kb, 0)

    def worker_limits(self) -> WorkerLimits:
        """The bounds on reading one upload: the worker process's and the loader's (all from Settings)."""
        return parse_limits(self.settings)

    def build_budget(self, name: str) -> BuildBudget:
        """The deadline and memory ceiling of one upload's build, from Settings; the deadline runs from now.
        Summaries from an LLM take round trips to it, so such builds get RAPTOR_LLM_BUILD_TIMEOUT."""
        s = self.settings
        seconds = s.llm_build_timeout if s.llm_configured else s.build_timeout
        return BuildBudget(name, seconds=seconds, memory_mb=s.build_memory_mb)

    def _check_limits(self, kb_id: int | None, name: str, size: int) -> None:
        s = self.settings
        if size > s.max_file_bytes:
            raise LimitError(
                f"{name} is {_human_size(size)}, over the limit of {_human_size(s.max_file_bytes)}."
            )
        if kb_id is not None and len(self.store.documents(kb_id)) >= s.max_documents:
            raise LimitError(
                f"This knowledge base already holds {s.max_documents} documents, the most allowed."
            )

    @_in_space
    async def ingest(
        self,
        kb: str,
        filename: str,
        data: bytes,
        *,
        added_by: str = "",
        progress: ProgressCallback | None = None,
    ) -> IngestResult:
        """Add a document: build its subtree, refresh the cross-document layer, store all at once.

        Identical bytes already in the knowledge base are a no-op ("duplicate"). On any error
        nothing is stored. Builds of one knowledge base run one at a time, in arrival order.
        """
        name = safe_filename(filename)
        # The size now; the document count only after the duplicate check (same bytes are a no-op).
        self._check_limits(None, name, len(data))
        sha = hashlib.sha256(data).hexdigest()
        clock = StageClock()

        def report(event: Progress) -> None:
            clock(event)
            if progress:
                progress(event)

        self._waiting[kb] += 1
        try:
            async with self._lock(kb), self._writer_gate(kb) as gate:
                result = await self._ingest_locked(kb, name, data, sha, added_by, report, gate)
        finally:
            self._waiting[kb] -= 1
        if clock.marks:
            result.stage_seconds = clock.seconds(time.perf_counter())
        return result

    async def _ingest_locked(
        self,
        kb: str,
        name: str,
        data: bytes,
        sha: str,
        added_by: str,
        progress: ProgressCallback | None,
        gate: WriterGate,
    ) -> IngestResult:
        started = time.perf_counter()
        started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        kb_id = self.store.kb_id(kb)
        if kb_id is not None:
            existing = self.store.document_by_sha(kb_id, sha)
            if existing is not None:
                return IngestResult("duplicate", existing)
        self._check_limits(kb_id, name, len(data))
        budget = self.build_budget(name)
        try:
            with budget.active():
                tree, chunks, fmt = await budget.bound(self._build_tree(name, data, kb_id, progress))
            # Other processes' writers of this knowledge base wait from here to the commit (writers.py); the
            # wait is RAPTOR_WRITER_WAIT's, not the build's deadline, and the cross-document layer is cheap.
            await gate.enter()
            kb_id = self.store.kb_id(kb)
            stored = self.store.document_by_sha(kb_id, sha) if kb_id is not None else None
            if stored is not None:  # another process stored the same bytes meanwhile
                return IngestResult("duplicate", stored)
            seen_version = self._version_of(kb_id)
            kb_layer = await self._kb_layer(kb_id, tree, progress)
        except (IngestError, LimitError):
            raise  # the upload itself was refused: leave the store byte-for-byte as it was
        except RaptorError as exc:
            self._record_failure(kb_id, name, started, started_at, exc)
            raise
        except Exception as exc:
            log.exception("building %s failed", name)
            self._record_failure(kb_id, name, started, started_at, exc)
            raise RaptorError(f"Building the tree for {name} failed: {type(exc).__name__}.") from exc
        notes = [tree.stop_reason] + [n for layer in tree.layers for n in layer.notes]
        if kb_layer:
            notes += kb_layer.notes
        prompt_tokens = tree.prompt_tokens + (kb_layer.prompt_tokens if kb_layer else 0)
        completion_tokens = tree.completion_tokens + (kb_layer.completion_tokens if kb_layer else 0)
        document = {
            "name": name,
            "sha256": sha,
            "size": len(data),
            "format": fmt,
            "added_by": added_by,
            "chunks": len(chunks),
            "layers": tree.height,
            "tokens": sum(c.tokens for c in chunks),
        }
        build = {
            "document": name,
            "action": "ingest",
            "started_at": started_at,
            "seconds": time.perf_counter() - started,
            "embedder": self.embedder.name,
            "summarizer": self.summarizer.name,
            "layers": [layer.to_dict() for layer in tree.layers],
            "notes": notes,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
        }
        kb_nodes = kb_layer.nodes if kb_layer else []
        if progress:
            progress(Progress("store", 0, len(tree.nodes)))
        for attempt in range(MAX_COMMIT_ATTEMPTS):
            try:
                kb_id, doc_id = await asyncio.to_thread(
                    self.store.commit_document,
                    kb,
                    document,
                    tree.nodes,
                    functools.partial(_resolve_placeholders, kb_nodes),
                    build,
                    seen_version,
                )
                break
            except StaleTreeError:
                # Another process wrote this knowledge base after its tops were read: the
                # cross-document layer would drop its document, so redo that (cheap) layer.
                log.info(
                    "%s changed during the build of %s (attempt %d); redoing its top layer", kb, name, attempt
                )
                kb_id = self.store.kb_id(kb)
                existing = self.store.document_by_sha(kb_id, sha) if kb_id is not None else None
                if existing is not None:
                    return IngestResult("duplicate", existing)
                seen_version = self._version_of(kb_id)
                kb_layer = await self._kb_layer(kb_id, tree, progress)
                kb_nodes = kb_layer.nodes if kb_layer else []
        else:
            raise RaptorError(f"{name} was not stored: the knowledge base kept changing under it; try again.")
        gate.leave()
        if progress:
            progress(Progress("index", 0, len(tree.nodes)))
        await asyncio.to_thread(self.indexes.get, kb_id)
        info = next(d for d in self.store.documents(kb_id) if d.id == doc_id)
        seconds = time.perf_counter() - started
        if progress:
            progress(Progress("done", len(tree.nodes), len(tree.nodes), layer=tree.height - 1))
        log.info(
            "ingested %s into %s: %d chunks, %d layers in %.1fs", name, kb, len(chunks), tree.height, seconds
        )
        return IngestResult(
            "added",
            info,
            len(chunks),
            tree.height,
            len(tree.nodes),
            seconds,
            notes,
            prompt_tokens,
            completion_tokens,
        )

    async def _build_tree(
        self, name: str, data: bytes, kb_id: int | None, progress: ProgressCallback | None
    ) -> tuple[BuiltTree, list, str]:
        """The document's own tree, built on the Dask cluster when one is attached, else here."""
        held = self.store.kb_tokens(kb_id) if kb_id is not None else 0
        if self.cluster is not None:
            built = await self.cluster.build(name, data, self.settings, held, progress, current_budget())
        else:
            built = await build_document(
                name,
                data,
                settings=self.settings,
                held=held,
                embedder=self.embedder,
                summarizer=self.summarizer,
                progress=progress,
            )
        self.last_parse = built.parse
        return built.tree, built.chunks, built.format

    async def _kb_layer(
        self,
        kb_id: int | None,
        tree: BuiltTree | None,
        progress: ProgressCallback | None,
        exclude_doc: int | None = None,
    ) -> Summarized | None:
        """The cross-document layer over every document's tops (the new tree's included)."""
        tops = self.store.document_tops(kb_id, exclude_doc=exclude_doc) if kb_id is not None else []
        if tree is not None:
            top_layer = tree.height - 1
            tops += [_placeholder_top(n) for n in tree.nodes if n.layer == top_layer]
        first_key = len(tree.nodes) if tree is not None else 0
        return await build_kb_layer(
            tops,
            first_key=first_key,
            embedder=self.embedder,
            summarizer=self.summarizer,
            settings=self.settings,
            progress=progress,
        )

    def _record_failure(
        self, kb_id: int | None, name: str, started: float, started_at: str, exc: BaseException
    ) -> None:
        if kb_id is None:
            return  # the knowledge base does not exist yet; a failed first build leaves no trace
        try:
            self.store.record_failed_build(
                kb_id,
                {
                    "document": name,
                    "action": "ingest",
                    "started_at": started_at,
                    "seconds": time.perf_counter() - started,
                    "embedder": self.settings.embed_model,
                    "summarizer": getattr(self._summarizer, "name", ""),
                    "error": str(exc),
                },
            )
        except Exception:
            log.warning("could not record the failed build of %s", name, exc_info=True)

    @_in_space
    async def forget(self, kb: str, document: str) -> DocumentInfo:
        """Remove a document's nodes, then rebuild the cross-document layer and update the index."""
        kb_id = self.store.require_kb(kb)
        self._waiting[kb] += 1
        try:
            async with self._lock(kb), self._writer_gate(kb) as gate:
                await gate.enter()
                doc = self.store.find_document(kb_id, document)
                started = time.perf_counter()
                seen_version = self._version_of(kb_id)
                kb_layer = await self._kb_layer(kb_id, None, None, exclude_doc=doc.id)
                build = {
                    "document": doc.name,
                    "action": "forget",
                    "seconds": time.perf_counter() - started,
                    "embedder": self.embedder.name,
                    "summarizer": self.summarizer.name,
                    "notes": kb_layer.notes if kb_layer else [],
                    "prompt_tokens": kb_layer.prompt_tokens if kb_layer else 0,
                    "completion_tokens": kb_layer.completion_tokens if kb_layer else 0,
                }
                try:
                    await asyncio.to_thread(
                        self.store.commit_forget,
                        kb_id,
                        doc.id,
                        kb_layer.nodes if kb_layer else [],
                        build,
                        seen_version,
                    )
                except StaleTreeError:
                    raise RaptorError(
                        f"{doc.name} was not removed: another process changed this knowledge base; try again."
                    ) from None
                await asyncio.to_thread(self.indexes.get, kb_id)
                return doc
        finally:
            self._waiting[kb] -= 1

    @_in_space
    async def clear(self, kb: str) -> int:
        """Remove every document of a knowledge base; returns how many there were."""
        kb_id = self.store.kb_id(kb)
        if kb_id is None:
            return 0
        async with self._lock(kb):
            count = len(self.store.documents(kb_id))
            await asyncio.to_thread(self.delete_kb, kb)
            return count

    @_in_space
    def delete_kb(self, kb: str) -> bool:
        """Drop a knowledge base and its index entirely (the bot: channel deleted, server left)."""
        kb_id = self.store.kb_id(kb)
        if kb_id is None:
            return False
        self.store.delete_kb(kb_id)
        self.indexes.drop(kb_id)
        return True

    # -- reading ------------------------------------------------------------------------------

    def knowledge_bases(self, space: str | None = None) -> list[str]:
        """Every knowledge base, the root space's and every other space's, sorted; or one space's."""
        if space is not None:
            return self._space_kb_names(space)
        names = self.spaces.root.store.kb_names()
        for name in self.spaces.names():
            names += self._space_kb_names(name)
        return sorted(names)

    def _space_kb_names(self, name: str) -> list[str]:
        """A space's knowledge bases; none if it has no store (never made, or deleted meanwhile)."""
        try:
            with self.spaces.pinned(name, create=False) as space:
                return space.store.kb_names()
        except NotFoundError:
            return []

    @_in_space
    def documents(self, kb: str) -> list[DocumentInfo]:
        kb_id = self.store.kb_id(kb)
        return [] if kb_id is None else self.store.documents(kb_id)

    @_in_space
    def tree_info(self, kb: str) -> TreeInfo:
        kb_id = self.store.kb_id(kb)
        if kb_id is None:
            return TreeInfo(kb, 0, [])
        layers = [LayerInfo(*row) for row in self.store.layer_stats(kb_id)]
        return TreeInfo(kb, len(self.store.documents(kb_id)), layers)

    @_in_space
    def tree_picture(
        self,
        kb: str,
        *,
        highlight: Iterable[int] = (),
        cited: Iterable[int] = (),
        caption: str = "",
        name: str | None = None,
    ) -> TreePicture:
        """A PNG of the whole tree, with `highlight` (an answer's context) and `cited` nodes marked.

        Synchronous (reading the store and drawing take up to a few seconds at 20k leaves): the bot
        and other async callers run it in a thread. Ids no longer in the tree are reported in
        `missing` (a document added or removed since re-makes the cross-document layer). `caption`
        (e.g. the question) goes under the title, which names the tree `name` (default: `kb`).
        """
        kb_id = self.store.kb_id(kb)
        if kb_id is None or not self.store.has_nodes(kb_id):
            raise EmptyKnowledgeBaseError(f"The knowledge base {kb!r} has no documents yet.")
        plan = plan_picture(self.store.tree_shape(kb_id), name or kb, highlight=highlight, cited=cited)
        return TreePicture(
            png=render_png(plan, caption),
            nodes=plan.nodes,
            highlighted=plan.highlighted,
            cited=sorted(plan.cited),
            missing=plan.missing,
            binned=plan.binned,
        )

    @_in_space
    def builds(self, kb: str, limit: int = 20) -> list[dict[str, Any]]:
        kb_id = self.store.kb_id(kb)
        return [] if kb_id is None else self.store.builds(kb_id, limit)

    @_in_space
    def usage(self, kb: str) -> dict[str, int]:
        kb_id = self.store.kb_id(kb)
        return {} if kb_id is None else self.store.usage(kb_id)

    @_in_space
    def retrieve(
        self,
        kb: str,
        query: str,
        *,
        mode: str = "collapsed",
        budget: int | None = None,
        layers: list[int] | None = None,
        documents: list[str] | None = None,
    ) -> RetrievedContext:
        """Context for a query (synchronous: embedding and search; run it in a thread from async code)."""
        if mode not in MODES:
            raise RaptorError(f"Unknown mode {mode!r}; use one of {', '.join(MODES)}.")
        budget = self.settings.budget if budget is None else budget
        if budget <= 0:
            raise RaptorError("The token budget must be a positive number.")
        if self.settings.ranking not in RANKINGS:
            raise RaptorError(f"RAPTOR_RANKING must be one of {', '.join(RANKINGS)}, not {self.settings.ranking!r}.")
        kb_id = self.store.kb_id(kb)
        if kb_id is None or not self.store.has_nodes(kb_id):
            raise EmptyKnowledgeBaseError(f"The knowledge base {kb!r} has no documents yet.")
        vector = self.embedder.embed([query])[0]
        if mode == "collapsed":
            context = collapsed_tree(
                self.store,
                self.indexes.get(kb_id),
                kb_id,
                query,
                vector,
                budget=budget,
                ef=self.settings.hnsw_ef,
                layers=layers,
                documents=documents,
                count_tokens_batch=self.embedder.count_tokens_batch,
                ranking=self.settings.ranking,
            )
        else:
            context = tree_traversal(
                self.store,
                kb_id,
                query,
                vector,
                budget=budget,
                top_k=self.settings.top_k,
                layers=layers,
                documents=documents,
            )
        self._name_sources(context)
        return context

    def _name_sources(self, context: RetrievedContext) -> None:
        """Cross-document summaries belong to no one document: record the documents they draw on."""
        for node in context.nodes:
            if node.document is None:
                node.drawn_from = tuple(self.store.documents_under(node.node_id))

    @_in_space
    async def ask(
        self,
        kb: str,
        question: str,
        *,
        mode: str = "collapsed",
        budget: int | None = None,
        history: list[Turn] | None = None,
        layers: list[int] | None = None,
        documents: list[str] | None = None,
        asked_by: str = "",
        on_text: TextCallback | None = None,
    ) -> Answer:
        """Answer from the last complete tree, with citations; `history` makes it a follow-up.

        With `on_text`, an answerer that can stream (an LLM) calls it with the text shown so far while
        it writes (see `streaming.ShownText`); the returned Answer is the same as without it.

        Every step that can take time runs off the caller's event loop, and past `settings.question_timeout` seconds the
        question is given up with a one-sentence QuestionTimeoutError."""
        deadline = asyncio.timeout(self.settings.question_timeout)
        try:
            async with deadline:
                return await self._ask(
                    kb, question, mode, budget, history, layers, documents, asked_by, on_text
                )
        except TimeoutError:
            if not deadline.expired():
                raise
            log.warning("a question in %s ran past %.0f s and was given up", kb, self.settings.question_timeout)
            raise QuestionTimeoutError(
                f"Answering took longer than {self.settings.question_timeout:g} seconds, so it was stopped; "
                "try again, or ask a shorter question."
            ) from None

    async def _ask(
        self,
        kb: str,
        question: str,
        mode: str,
        budget: int | None,
        history: list[Turn] | None,
        layers: list[int] | None,
        documents: list[str] | None,
        asked_by: str,
        on_text: TextCallback | None,
    ) -> Answer:
        question = " ".join(question.split())
        if not question:
            raise RaptorError("The question is empty.")
        if len(question) > MAX_QUESTION_CHARS:
            raise RaptorError(f"The question is longer than {MAX_QUESTION_CHARS} characters.")
        budget = self.settings.budget if budget is None else budget
        act = small_talk_act(question)
        if act is Act.SOURCES and history:
            return await self._sources_answer(
                kb, question, history, mode, budget, layers, documents, asked_by
            )
        if act is not None:
            return await asyncio.to_thread(self._small_talk_answer, kb, question, act, mode, budget)
        asked, history = await asyncio.to_thread(_conversation, question, history or [])
        answerer = self.answerer
        query = await answerer.condense(asked, history) if history else asked
        context = await asyncio.to_thread(
            self.retrieve, kb, query, mode=mode, budget=budget, layers=layers, documents=documents
        )
        # The standalone question, not the bare follow-up, is what the answer must address; document
        # text reaches the answerer with its own bracketed numbers neutralised.
        draft = await self._draft(answerer, query, context.nodes, history, on_text)
        text, citations = map_citations(draft.text, context.nodes)
        cite_pages(citations, context.nodes, draft.pages)
        answer = Answer(
            question=question,
            query=query,
            text=text,
            citations=citations,
            context=context,
            backend=answerer.name,
            prompt_tokens=draft.prompt_tokens,
            completion_tokens=draft.completion_tokens,
            note=draft.note,
        )
        await asyncio.to_thread(self._record_question, kb, answer, asked_by)
        return answer

    @staticmethod
    async def _draft(
        answerer: Answerer,
        query: str,
        nodes: list[ContextNode],
        history: list[Turn],
        on_text: TextCallback | None,
    ) -> AnswerDraft:
        """The answerer's draft, streamed through `on_text` when asked for and the answerer can."""
        stream = getattr(answerer, "answer_stream", None)
        if on_text is None or stream is None:
            return await answerer.answer(query, neutralise_context(nodes), history)
        from .streaming import ShownText  # with the LLM backend, which is imported only when configured

        shown = ShownText(nodes)
        return await stream(query, neutralise_context(nodes), history, shown.feeding(on_text))

    def _small_talk_answer(self, kb: str, question: str, act: Act, mode: str, budget: int) -> Answer:
        """The reply to a message that is not a question ('thanks!', 'hello') or that asks which documents
        there are: nothing searched or cited. A knowledge base with nothing in it says so, as for a question.
        Synchronous (SQLite): run it in a thread."""
        kb_id = self.store.kb_id(kb)
        if kb_id is None or not self.store.has_nodes(kb_id):
            raise EmptyKnowledgeBaseError(f"The knowledge base {kb!r} has no documents yet.")
        if act is Act.DOCUMENTS:
            reply = documents_reply([document.name for document in self.store.documents(kb_id)])
        else:
            reply = REPLIES[act]
        context = RetrievedContext(nodes=[], tokens_used=0, budget=budget, mode=mode, query=question)
        return Answer(question, question, reply, [], context, backend=self.answerer.name)

    async def _sources_answer(
        self,
        kb: str,
        question: str,
        history: list[Turn],
        mode: str,
        budget: int,
        layers: list[int] | None,
        documents: list[str] | None,
        asked_by: str,
    ) -> Answer:
        """'Where does it say that?': the last real question is answered again as it was (same tree, same
        conversation before it, so the same context and quotes), and its citations are spelled out."""
        real = await asyncio.to_thread(without_small_talk, history)
        last = max((i for i, turn in enumerate(real) if turn.role == "user"), default=None)
        if last is None:
            return await asyncio.to_thread(self._small_talk_answer, kb, question, Act.SOURCES, mode, budget)
        previous = await self.ask(
            kb,
            real[last].content,
            mode=mode,
            budget=budget,
            history=real[:last],
            layers=layers,
            documents=documents,
            asked_by=asked_by,
        )
        return replace(previous, question=question, text=sources_reply(previous.text, previous.citations))

    def _record_question(self, kb: str, answer: Answer, asked_by: str) -> None:
        kb_id = self.store.kb_id(kb)
        if kb_id is None:
            return
        self.store.record_question(
            kb_id,
            {
                "asked_by": asked_by,
                "mode": answer.context.mode,
                "backend": answer.backend,
                "prompt_tokens": answer.prompt_tokens,
                "completion_tokens": answer.completion_tokens,
                "context_tokens": answer.context.tokens_used,
                "nodes": len(answer.context.nodes),
            },
        )

    # -- health -------------------------------------------------------------------------------

    def doctor(self, repair: bool = True) -> DoctorReport:
        """Check SQLite and every index of every space; rebuild what is derived (indices) when asked."""
        report = self._doctor_space(repair)
        for name in self.spaces.names():
            with self.spaces.pinned(name) as space, self._working_in(space):
                found = self._doctor_space(repair)
            report.problems += [f"space {name}: {problem}" for problem in found.problems]
            report.repaired += [f"space {name}: {problem}" for problem in found.repaired]
        return report

    def _doctor_space(self, repair: bool) -> DoctorReport:
        problems = list(self.store.integrity_problems())
        repaired: list[str] = []
        text_index = self.store.text_index_problems()
        problems += text_index
        if repair:  # derived from the nodes: always rebuilt, so a silently stale index is fixed too
            self.store.rebuild_text_index()
            if text_index and not self.store.text_index_problems():
                repaired += text_index
        for kb in self.store.kb_names():
            kb_id = self.store.kb_id(kb)
            if kb_id is None:
                continue
            found = self.indexes.check(kb_id)
            problems += found
            if found and repair:
                self.indexes.rebuild(kb_id)
                if not self.indexes.check(kb_id):
                    repaired += found
        return DoctorReport(problems, repaired)
