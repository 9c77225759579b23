"""Builds on a Dask cluster: the bot's process stays the store's only writer, workers compute trees.

A build (`docbuild.build_document`: parse in a child process, chunk, embed, cluster, summarise) runs as
one Dask task on a single-threaded process worker; the upload's bytes and the settings travel with the
task, the document's tree comes back, and the engine commits it. The pieces here:

- `BuildCluster`: the bot's side. An embedded `LocalCluster` (RAPTOR_BUILD_WORKERS process workers) or a
  `Client` of an existing scheduler (RAPTOR_DASK_SCHEDULER); submits builds, relays their progress and
  turns Dask's failures into one sentence.
- `EmbedderPreload`: a worker plugin that loads the embedding model (and UMAP's compiled code) once per
  worker, when the worker joins, not once per task.
- `build_on_worker`: the task. Progress goes back as Dask events on PROGRESS_TOPIC.
- `MemoryCache`: the LLM summary cache a remote build sees: the bot's cached summaries of the summary
  model go with the task, the new ones come back and the bot stores them (docs/SCALING.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import os
import pickle
import sys
import threading
import time
import uuid
from typing import Any

from distributed import WorkerPlugin

from .config import Settings
from .errors import RaptorError
from .ingest.budget import BuildBudget
from .storage.llm_cache import CachedSummary, SummaryCache
from .tree.docbuild import DocumentTree, build_document
from .tree.embed import Embedder
from .types import Progress, ProgressCallback, Summarizer

log = logging.getLogger(__name__)

PROGRESS_TOPIC = "raptor-build-progress"
PROGRESS_FIELDS = tuple(f.name for f in dataclasses.fields(Progress))
CONNECT_TIMEOUT_S = 5.0
# A build worker is single-threaded all through (Dask runs one task at a time on it; onnxruntime, numba
# and BLAS get one thread each), so N workers use N cores: left to their defaults each would spread over
# every core, and two workers on two cores ran 1.13x one instead of nearly 2x (docs/SCALING.md).
WORKER_THREADS = 1
# A result comes back as pickles of this many nodes or chunks each (see `pack_result`).
SLICE_ITEMS = 64
# Read when numba (UMAP) and BLAS load in the worker process; Dask's nanny already sets the BLAS ones.
WORKER_ENV = {
    "NUMBA_NUM_THREADS": str(WORKER_THREADS),
    "OMP_NUM_THREADS": str(WORKER_THREADS),
    "OPENBLAS_NUM_THREADS": str(WORKER_THREADS),
    "MKL_NUM_THREADS": str(WORKER_THREADS),
}
_embedders: dict[tuple[str, str], Embedder] = {}  # one per worker process, by (model, backend)
_embedders_lock = threading.Lock()


class ClusterUnreachableError(RaptorError):
    """The Dask scheduler named by RAPTOR_DASK_SCHEDULER (or --scheduler) does not answer."""


# ------------------------------------------------------------------------------------------ worker side


def worker_embedder(settings: Settings) -> Embedder:
    """This worker process's embedder (loaded once; the plugin loads it when the worker starts).

    The cache directory is the worker machine's own (its RAPTOR_CACHE_DIR or ~/.cache/raptor), not the
    bot's path, which need not exist there."""
    key = (settings.embed_model, settings.embed_backend)
    with _embedders_lock:
        if key not in _embedders:
            from .tree.cluster import use_compile_cache

            cache_dir = Settings.from_env().cache_dir
            use_compile_cache(cache_dir / "numba")
            _embedders[key] = Embedder(
                settings.embed_model,
                batch_size=settings.embed_batch_size,
                batch_tokens=settings.embed_batch_tokens,
                backend=settings.embed_backend,
                cache_dir=cache_dir,
                threads=WORKER_THREADS,
                gpu_batch_tokens=settings.embed_gpu_batch_tokens,
                tokenize_threads=settings.embed_tokenize_threads,
            )
        return _embedders[key]


def lower_priority(nice: int) -> None:
    """Run every thread of this worker process at niceness `nice` (Linux keeps it per thread, and
    onnxruntime's threads exist before any task): on the bot's machine the bot's own threads, which
    answer questions, then win the CPU over builds. Threads and the parse child started later inherit it."""
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    for tid in threads:
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
        except OSError:  # a thread that ended meanwhile
            pass


class EmbedderPreload(WorkerPlugin):
    """Dask worker plugin: load the model and UMAP's numba code when a worker joins, off its event loop."""

    name = "raptor-embedder-preload"

    def __init__(self, settings: Settings):
        self.settings = settings

    async def setup(self, worker: Any) -> None:
        from .tree.cluster import warm_up

        started = time.perf_counter()
        await asyncio.to_thread(worker_embedder, self.settings)
        await asyncio.to_thread(warm_up)
        lower_priority(self.settings.build_worker_nice)
        log.info("worker %s: embedding model loaded in %.1f s", worker.address, time.perf_counter() - started)

    def teardown(self, worker: Any) -> None:
        """Nothing to release: the process ends with the worker."""


class MemoryCache:
    """The summary cache as a remote build sees it: the bot's entries for the model, plus what it adds."""

    def __init__(self, entries: dict[str, CachedSummary]):
        self.entries = dict(entries)
        self.added: dict[str, CachedSummary] = {}

    def get(self, key: str) -> CachedSummary | None:
        return self.entries.get(key)

    def put(self, key: str, model: str, text: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.entries[key] = self.added[key] = CachedSummary(text, prompt_tokens, completion_tokens)


def worker_summarizer(settings: Settings, embedder: Embedder, cache: MemoryCache) -> Summarizer:
    """The same summariser the engine would use (the LLM's when configured, else extractive)."""
    if settings.llm_configured:
        from .llm import OpenAISummarizer

        summarizer = OpenAISummarizer(settings, count_tokens=embedder.count_tokens)
        summarizer.cache = cache  # type: ignore[assignment]
        return summarizer
    from .tree.summarize import ExtractiveSummarizer

    return ExtractiveSummarizer(
        embedder.count_tokens,
        count_tokens_batch=embedder.count_tokens_batch,
        input_budget=settings.cluster_input_budget,
    )


def build_on_worker(
    build_id: str,
    name: str,
    data: bytes,
    settings: Settings,
    held: int,
    cached: dict[str, CachedSummary],
    budget: BuildBudget | None = None,
) -> list[bytes]:
    """The Dask task: the document's tree and the summaries it added to the cache (`pack_result`). `budget` (the engine's
    deadline and memory ceiling, pickled with its wall-clock deadline) is checked here as in-process."""
    from distributed import get_worker

    worker = get_worker()
    lower_priority(settings.build_worker_nice)

    def report(event: Progress) -> None:
        worker.log_event(PROGRESS_TOPIC, {"id": build_id, **dataclasses.asdict(event)})

    embedder = worker_embedder(settings)
    cache = MemoryCache(cached)
    if budget is not None:
        budget.restart()  # its time runs from here, not from the upload: it may have waited for a worker
    with budget.active() if budget is not None else contextlib.nullcontext():
        built = asyncio.run(_build(name, data, settings, held, embedder, cache, report))
    return pack_result(built, cache.added)


def pack_result(built: DocumentTree, added: dict[str, CachedSummary]) -> list[bytes]:
    """The build's result as small pickles: its frame, then its nodes and chunks SLICE_ITEMS at a time.

    Dask unpickles a result on the receiving event loop, and one `pickle.loads` never lets go of the
    GIL: a 100k-token tree (1,250 nodes, 1,050 chunks) held the bot's loop for 50-200 ms in one piece.
    Bytes cost Dask nothing to receive; `unpack_result` then loads the pieces in a thread, and the loop
    runs between any two of them."""
    nodes, chunks = built.tree.nodes, built.chunks
    frame = dataclasses.replace(built, tree=dataclasses.replace(built.tree, nodes=[]), chunks=[])
    parts = [pickle.dumps((frame, added, len(nodes)), protocol=pickle.HIGHEST_PROTOCOL)]
    items: list[Any] = [*nodes, *chunks]
    for start in range(0, len(items), SLICE_ITEMS):
        parts.append(pickle.dumps(items[start : start + SLICE_ITEMS], protocol=pickle.HIGHEST_PROTOCOL))
    return parts


def unpack_result(parts: list[bytes]) -> tuple[DocumentTree, dict[str, CachedSummary]]:
    """`pack_result` undone (in a thread: the pieces together take tens of milliseconds)."""
    frame, added, node_count = pickle.loads(parts[0])
    items: list[Any] = []
    for part in parts[1:]:
        items.extend(pickle.loads(part))
    tree = dataclasses.replace(frame.tree, nodes=items[:node_count])
    return dataclasses.replace(frame, tree=tree, chunks=items[node_count:]), added


async def _build(
    name: str,
    data: bytes,
    settings: Settings,
    held: int,
    embedder: Embedder,
    cache: MemoryCache,
    report: ProgressCallback,
) -> DocumentTree:
    """The build itself, in the task's own event loop (so the budget's context reaches its threads)."""
    return await build_document(
        name,
        data,
        settings=settings,
        held=held,
        embedder=embedder,
        summarizer=worker_summarizer(settings, embedder, cache),
        progress=report,
    )


# ------------------------------------------------------------------------------------------ bot side


def _cancel(future: Any) -> None:
    """Cancel a task from the event loop (an asynchronous client's cancel is a coroutine to schedule)."""
    result = future.cancel()
    if inspect.isawaitable(result):
        asyncio.ensure_future(result)


def task_settings(settings: Settings) -> Settings:
    """What travels with a task: everything a build reads, never the Discord token."""
    return dataclasses.replace(settings, discord_token="")


class BuildCluster:
    """The bot's handle on the Dask cluster its builds run on (asynchronous: use from the event loop)."""

    def __init__(self, settings: Settings, address: str = ""):
        self.settings = settings
        self.address = address
        self.client: Any = None
        self.local: Any = None  # the embedded LocalCluster, when this process started one
        self._progress: dict[str, ProgressCallback] = {}
        self._futures: dict[str, Any] = {}
        self._waiting: dict[str, BuildBudget] = {}  # budgets of builds not started on a worker yet
        self._stopped: dict[str, BaseException] = {}  # a progress callback's exception, by build
        self._connecting = asyncio.Lock()

    @property
    def where(self) -> str:
        return self.address or "an embedded LocalCluster"

    @classmethod
    async def start(cls, settings: Settings, address: str | None = None) -> BuildCluster:
        """Connect to `address` (or RAPTOR_DASK_SCHEDULER), else start the embedded LocalCluster.

        An unreachable scheduler is not fatal: the bot keeps answering questions, each upload gets a
        sentence, and the next upload tries to connect again."""
        cluster = cls(settings, address if address is not None else settings.dask_scheduler)
        try:
            await cluster.connect()
        except ClusterUnreachableError as error:
            log.error("%s", error)
        return cluster

    async def connect(self) -> Any:
        """The client, connecting (or starting the LocalCluster) on first use."""
        async with self._connecting:
            if self.client is not None:
                return self.client
            from distributed import Client

            if not self.address:
                self.local = await self._start_local()
            target = self.local if self.local is not None else self.address
            try:
                client = await Client(target, asynchronous=True, timeout=CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError) as error:
                log.warning("cannot reach the Dask scheduler at %s: %s", self.address, error)
                raise ClusterUnreachableError(
                    f"The build workers (Dask scheduler {self.address}) cannot be reached; the file was not "
                    "added, try again later."
                ) from None
            await client.register_plugin(EmbedderPreload(task_settings(self.settings)))
            client.subscribe_topic(PROGRESS_TOPIC, self._on_progress)
            self.client = client
            log.info("builds run on %s (dashboard %s)", self.where, client.dashboard_link)
            return client

    async def _start_local(self) -> Any:
        from distributed import LocalCluster

        workers = max(1, self.settings.build_workers)
        return await LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            asynchronous=True,
            dashboard_address=None,
            memory_limit=f"{self.settings.build_worker_memory_mb}MB",
            env=WORKER_ENV,
        )

    def _on_progress(self, event: tuple[float, dict[str, Any]]) -> None:
        _, msg = event  # Dask adds the worker's address to the message
        build_id = msg.get("id", "")
        waited = self._waiting.pop(build_id, None)
        if waited is not None:  # its first progress: the worker began it, and its deadline with it
            waited.restart()
        callback = self._progress.get(build_id)
        if callback is None:
            return
        try:
            callback(Progress(**{f: msg[f] for f in PROGRESS_FIELDS if f in msg}))
        except RaptorError as error:  # the engine stops the build (a deadline, a limit): cancel the task
            self._stopped[build_id] = error
            future = self._futures.get(build_id)
            if future is not None:
                _cancel(future)
        except Exception:  # a broken progress display must never break a build (as build._notify)
            log.warning("progress callback failed", exc_info=True)

    def _cached_summaries(self, settings: Settings) -> dict[str, CachedSummary]:
        if not settings.llm_configured:
            return {}
        return SummaryCache(settings.db_path).for_model(settings.llm_summary_model)

    def _store_summaries(self, settings: Settings, added: dict[str, CachedSummary]) -> None:
        cache = SummaryCache(settings.db_path)
        for key, summary in added.items():
            cache.put(
                key,
                settings.llm_summary_model,
                summary.text,
                summary.prompt_tokens,
                summary.completion_tokens,
            )

    async def build(
        self,
        name: str,
        data: bytes,
        settings: Settings,
        held: int,
        progress: ProgressCallback | None,
        budget: BuildBudget | None = None,
    ) -> DocumentTree:
        """Build one document on a worker; RaptorError (one sentence) when the cluster cannot."""
        from distributed import KilledWorker
        from distributed.client import FutureCancelledError

        client = await self.connect()
        build_id = uuid.uuid4().hex
        if progress is not None:
            self._progress[build_id] = progress
        if budget is not None:  # its clock stops until a worker begins the build (budget.py)
            budget.hold()
            self._waiting[build_id] = budget
        cached = await asyncio.to_thread(self._cached_summaries, settings)
        future = client.submit(
            build_on_worker, build_id, name, data, task_settings(settings), held, cached, budget,
            key=f"raptor-build-{build_id}", pure=False,
        )  # fmt: skip
        self._futures[build_id] = future
        try:
            built, added = await asyncio.to_thread(unpack_result, await future)
        except KilledWorker:
            log.error("the build of %s killed every worker it ran on", name)
            raise RaptorError(
                f"Building {name} stopped the build worker each time it was tried (it may need more memory "
                "than a worker has), so it was given up."
            ) from None
        except (OSError, FutureCancelledError) as error:
            if build_id in self._stopped:
                raise self._stopped[build_id] from None
            log.warning("lost the Dask cluster while building %s: %s", name, error)
            raise ClusterUnreachableError(
                f"The build workers were lost while building {name}; nothing was stored, try again later."
            ) from None
        finally:
            self._progress.pop(build_id, None)
            self._waiting.pop(build_id, None)
            self._futures.pop(build_id, None)
            self._stopped.pop(build_id, None)
            if not future.done():
                _cancel(future)
        if added:
            await asyncio.to_thread(self._store_summaries, settings, added)
        return built

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
            self.client = None
        if self.local is not None:
            await self.local.close()
            self.local = None


# ------------------------------------------------------------------------------------------ raptor worker


def worker_command(address: str, settings: Settings, name: str | None = None) -> list[str]:
    """`dask worker` with the project's shape: one single-threaded process worker, with a nanny whose
    memory limit backs up the parse child's (the model is loaded by the plugin the bot registers)."""
    command = [
        sys.executable, "-m", "distributed.cli.dask_worker", address,
        "--nworkers", "1", "--nthreads", "1",
        "--memory-limit", f"{settings.build_worker_memory_mb}MB",
        "--no-dashboard",
    ]  # fmt: skip
    if name:
        command += ["--name", name]
    return command


def exec_worker(address: str, settings: Settings, name: str | None = None) -> None:
    """Replace this process with the Dask worker (so signals reach it directly)."""
    command = worker_command(address, settings, name)
    log.info("starting: %s", " ".join(command))
    os.environ.update(WORKER_ENV)  # inherited by the nanny's worker process
    os.execv(command[0], command)
