"""Builds on a Dask cluster: the bot's process stays the store's only writer, workers compute trees.

A build (`docbuild.build_document`: parse in a child process, chunk, embed, cluster, summarise) runs as
one Dask task on a single-threaded process worker; the upload's bytes and the settings travel with the
task, the document's tree comes back, and the engine commits it. The pieces here:

- `BuildCluster`: the bot's side. An embedded `LocalCluster` (RAPTOR_BUILD_WORKERS process workers) or a
  `Client` of an existing scheduler (RAPTOR_DASK_SCHEDULER); submits builds, relays their progress and
  turns Dask's failures into one sentence.
- `EmbedderPreload`: a worker plugin that loads the embedding model (and UMAP's compiled code) once per
  worker, when the worker joins, not once per task.
- `build_on_worker`: the task of an upload. Progress goes back as Dask events on PROGRESS_TOPIC.
- `build_trees_on_worker`: the task of a message rebuild (`Engine.add_messages` / `remove_messages`): the
  message documents' chunks (chunked by the engine, which counted their tokens to plan them) and the
  stored vectors of the leaves they keep go with it, their trees come back.
- `MemoryCache`: the LLM summary cache a remote build sees: the bot's cached summaries of the summary
  model go with the task, the new ones come back and the bot stores them (docs/SCALING.md).

Who can reach the cluster (docs/SCALING.md, "Who can reach the build cluster"): the embedded cluster speaks
Dask's mutual TLS with a key pair made in memory for it, listens on 127.0.0.1 only, serves no HTTP unless
RAPTOR_DASK_DASHBOARD_PORT asks, and its workers inherit none of the bot's secrets. An existing scheduler is
reached with the RAPTOR_DASK_TLS_* certificates (`cluster_security`), or over plain tcp:// on loopback (or
with RAPTOR_DASK_INSECURE=1). Workers declare the project's version as a Dask resource and builds ask for
it, so a worker of another version never runs one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import inspect
import ipaddress
import logging
import os
import pickle
import shutil
import socket
import ssl
import stat
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from distributed import WorkerPlugin

from . import __version__
from .config import (
    ENV_VARS,
    SECRET_VARS,
    Settings,
    _dotenv_writers,
    _private_group,
    default_cache_dir,
)
from .errors import RaptorError
from .ingest.budget import BuildBudget
from .ingest.messages import ReusingEmbedder
from .storage.files import keep_cache_private, others_may_replace
from .storage.llm_cache import CachedSummary, SummaryCache
from .tree.build import BuiltTree
from .tree.docbuild import DocumentTree, build_document, build_trees
from .tree.embed import Embedder
from .tree.results import BadResultError, check_document_result, check_trees_result
from .types import Chunk, Progress, ProgressCallback, Summarizer

log = logging.getLogger(__name__)

PROGRESS_TOPIC = "raptor-build-progress"
PROGRESS_FIELDS = tuple(f.name for f in dataclasses.fields(Progress))
# The stage of the event a task sends when a worker begins it (an upload's first stage, 'load', says so too):
# the engine's copy of the budget restarts on it, and no progress callback is told.
BEGUN = "begun"
# What a build that could not run leaves undone, in its sentences: an upload's, a message rebuild's.
FILE_NOT_ADDED = "the file was not added"
MESSAGES_NOT_STORED = "the messages were not stored"
CONNECT_TIMEOUT_S = 5.0
WATCH_S = 1.0  # how often a build waiting on the cluster asks the scheduler how things stand
CLOSE_TIMEOUT_S = 10.0  # the most closing the client waits for a scheduler that does not answer
WORKER_STOP_S = 30.0  # the most closing the embedded cluster waits for each worker process to stop and be reaped
# A worker of this project declares its version as a Dask resource, and builds require it.
VERSION_RESOURCE_PREFIX = "raptor-"
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


class ClusterSettingsError(ClusterUnreachableError):
    """The scheduler's address and the TLS settings do not go together; the sentence says what to set."""


class NoWorkerError(ClusterUnreachableError):
    """A build cannot go on: no worker (of this version) to run it, or its worker stopped answering."""


# ------------------------------------------------------------------------------------------ who may connect


def version_resource(version: str = __version__) -> str:
    """The Dask resource a worker of `version` declares and a build of this version requires."""
    return f"{VERSION_RESOURCE_PREFIX}{version}"


def address_host(address: str) -> str:
    """The host part of a Dask address (tcp://h:p, tls://[::1]:p, h:p)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    _, location = parse_address(address if "://" in address else f"tcp://{address}")
    host, _ = parse_host_port(location)
    return host


def is_loopback(address: str) -> bool:
    """Whether every address the scheduler's host names is this machine's loopback."""
    host = address_host(address)
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def check_address(address: str) -> None:
    """ClusterSettingsError, one sentence, for what Dask cannot reach a scheduler at (no port, a port
    that is no number, a scheme other than tcp:// and tls://)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address if "://" in address else f"tcp://{address}")
        _, port = parse_host_port(location)
    except ValueError:
        scheme, port = "", None
    if scheme not in ("tcp", "tls") or not port:
        raise ClusterSettingsError(
            f"{address!r} is not a Dask scheduler address; write it as tls://HOST:PORT or tcp://HOST:PORT."
        )


def tls_paths(settings: Settings) -> dict[str, str]:
    """The RAPTOR_DASK_TLS_* settings that are set, by variable."""
    values = {
        ENV_VARS["dask_tls_ca_file"]: settings.dask_tls_ca_file,
        ENV_VARS["dask_tls_cert"]: settings.dask_tls_cert,
        ENV_VARS["dask_tls_key"]: settings.dask_tls_key,
    }
    return {name: value for name, value in values.items() if value}


def _check_tls_file_owners(given: dict[str, str]) -> None:
    """The TLS files are the cluster's whole trust: whoever holds the key joins the cluster and can run code on
    the scheduler, the workers and, through what a worker sends back, this process; whoever may change the CA
    file chooses whom this process trusts. ClusterSettingsError, one sentence, for a file (or a folder on its
    way) another user could change, or a key of another user's that others may read; a key of this user's that
    others may read is made 0600 first, with a line in the log (`cp` and config tools write 0644 copies)."""
    for name, value in given.items():
        path = Path(os.path.realpath(value))
        status = path.stat()
        why = _dotenv_writers(status) or next(filter(None, map(others_may_replace, path.parents)), None)
        if why:
            raise ClusterSettingsError(
                f"The TLS file {name}={value} is not used: {why}, and it decides whom the cluster trusts; make it "
                "and its folders writable by this user only."
            )
    key = Path(os.path.realpath(given[ENV_VARS["dask_tls_key"]]))
    status = key.stat()
    if not status.st_mode & 0o044 or (not status.st_mode & 0o004 and _private_group(status.st_gid)):
        return
    if status.st_uid != os.geteuid():
        raise ClusterSettingsError(
            f"The TLS key {ENV_VARS['dask_tls_key']}={given[ENV_VARS['dask_tls_key']]} is not used: other users of "
            f"this machine can read it (mode {stat.S_IMODE(status.st_mode):o}) and with it join the cluster; make "
            "it readable by its owner only (chmod 600)."
        )
    key.chmod(stat.S_IMODE(status.st_mode) & 0o600)
    log.warning(
        "the TLS key %s could be read by other users of this machine (mode %o), who could join the cluster with "
        "it; it is now readable by this user only (0600)",
        key, stat.S_IMODE(status.st_mode),
    )  # fmt: skip


def _check_tls_files(ca: str, cert: str, key: str) -> None:
    """ClusterSettingsError, one sentence, for TLS files Dask would fail on at its first connection (a file
    that is no PEM certificate, a key of another certificate, an encrypted key)."""
    try:
        context = ssl.create_default_context(cafile=ca)
        context.load_cert_chain(cert, key, password="")  # no prompt: an encrypted key is refused
    except (ssl.SSLError, ValueError) as error:
        reason = getattr(error, "reason", None) or str(error)
        raise ClusterSettingsError(
            f"The TLS files RAPTOR_DASK_TLS_CA_FILE={ca}, RAPTOR_DASK_TLS_CERT={cert} and RAPTOR_DASK_TLS_KEY={key} "
            f"cannot be used ({reason}); check that they are PEM files and the key is the certificate's."
        ) from None


def _check_certificate(ca: str, cert: str) -> None:
    """ClusterSettingsError, one sentence, for a certificate the cluster's peers would refuse at the
    handshake, where Dask says only that the scheduler 'cannot be reached' (this side) or fails with a
    traceback (`raptor worker`): one out of its dates, or one the CA file did not sign (self-signed, or
    another CA's). Its host name is not checked by Dask, nor here: the CA is the whole trust (docs/SCALING.md)."""
    from cryptography import x509

    try:
        chain = x509.load_pem_x509_certificates(Path(cert).read_bytes())
        authorities = x509.load_pem_x509_certificates(Path(ca).read_bytes())
    except (OSError, ValueError):
        return  # `_check_tls_files` has said what is wrong with files that do not load
    leaf, now = chain[0], datetime.datetime.now(datetime.UTC)
    named = f"The TLS certificate {ENV_VARS['dask_tls_cert']}={cert}"
    if leaf.not_valid_after_utc < now:
        raise ClusterSettingsError(
            f"{named} expired on {leaf.not_valid_after_utc:%Y-%m-%d %H:%M} UTC, so the cluster refuses it; make a "
            "new one with the cluster's CA (docs/SCALING.md)."
        )
    if leaf.not_valid_before_utc > now:
        raise ClusterSettingsError(
            f"{named} is valid only from {leaf.not_valid_before_utc:%Y-%m-%d %H:%M} UTC, so the cluster refuses it "
            "until then; check this machine's clock or make a new one."
        )
    if not _issued_by(chain, authorities):
        raise ClusterSettingsError(
            f"{named} is not signed by {ENV_VARS['dask_tls_ca_file']}={ca} (it is self-signed, or another CA's), "
            "so the cluster refuses it; sign it with the cluster's CA (docs/SCALING.md)."
        )


def _issued_by(chain: list[Any], authorities: list[Any]) -> bool:
    """Whether the chain's first certificate leads, through the others, to one the CA file holds."""
    current = chain[0]
    for _ in range(len(chain)):
        if any(_signed(current, authority) for authority in authorities):
            return True
        parent = next((c for c in chain[1:] if c is not current and _signed(current, c)), None)
        if parent is None:
            return False
        current = parent
    return False


def _signed(certificate: Any, issuer: Any) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        certificate.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def tls_refusal(error: BaseException, address: str, outcome: str) -> str | None:
    """The sentence for a TLS handshake the scheduler and this machine did not agree on, read from the
    error's chain (Dask says only 'TLS certificate does not match' or 'cannot be reached'), or None. This
    machine's own certificate was checked before (`_check_certificate`), so a refusal here is the other
    side's: its certificate, or its CA."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen and len(seen) < 16:
        seen.append(current)
        if isinstance(current, ssl.SSLCertVerificationError):
            return (
                f"The Dask scheduler {address} presents a certificate this machine does not trust "
                f"({current.verify_message}); {outcome}: give it one signed by the cluster's CA, within its dates."
            )
        current = current.__cause__ or current.__context__
    text = " ".join(f"{type(e).__name__} {e}" for e in seen).lower()
    # TLS 1.3 ends the handshake before the server checks the client's certificate: a refusal arrives as
    # an alert, or (Dask's listener) as the connection closed at once, EOF in the middle of TLS.
    if any(sign in text for sign in ("alert unknown ca", "alert bad certificate", "alert certificate", "ssleoferror")):
        return (
            f"The Dask scheduler {address} does not accept this machine's certificate (it trusts another CA than "
            f"{ENV_VARS['dask_tls_ca_file']}); {outcome}: use the cluster's one CA on every machine."
        )
    return None


def scheduler_tls_refusal(address: str, settings: Settings, wait_s: float = 2.0) -> str | None:
    """`tls_refusal`'s sentence for a tls:// scheduler that refuses this machine's certificate or presents
    one it does not trust, found by one handshake before `raptor worker` starts Dask (which would fail with
    a traceback); None when it is accepted, or the scheduler is not up (the worker waits for it, as Dask's
    does). TLS 1.3 ends the handshake before the server has checked this side: its refusal arrives as an
    alert or a close in the next `wait_s` seconds, where an accepting Dask waits for the first message."""
    if not address.startswith("tls://"):
        return None
    ca, cert, key = (settings.dask_tls_ca_file, settings.dask_tls_cert, settings.dask_tls_key)
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False  # as Dask: the CA is the trust
    context.load_cert_chain(cert, key)
    host, port = address_host(address), int(address.rsplit(":", 1)[1])
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as raw:
            with context.wrap_socket(raw) as tls:
                tls.settimeout(wait_s)
                if tls.recv(1) == b"":
                    raise ssl.SSLEOFError("the scheduler closed the connection at the TLS handshake")
    except TimeoutError:
        return None
    except ssl.SSLError as error:
        return tls_refusal(error, address, "the worker did not start")
    except OSError:
        return None  # not up yet, or not reachable: Dask's worker waits and says so
    return None


def cluster_security(settings: Settings, address: str) -> Any:
    """The `distributed.security.Security` to reach the scheduler at `address` with (None: plain tcp://),
    or ClusterSettingsError, one sentence, where the address and the settings do not go together: a
    tls:// scheduler needs the three RAPTOR_DASK_TLS_* files; a plain one off this machine would let anyone
    who reaches its port run code on the workers, so it needs RAPTOR_DASK_INSECURE=1."""
    from distributed.security import Security

    check_address(address)
    given = tls_paths(settings)
    names = (ENV_VARS["dask_tls_ca_file"], ENV_VARS["dask_tls_cert"], ENV_VARS["dask_tls_key"])
    if address.startswith("tls://"):
        missing = [name for name in names if name not in given]
        if missing:
            raise ClusterSettingsError(
                f"The Dask scheduler {address} uses TLS but {', '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not set; set them to this cluster's CA, certificate "
                "and key files (docs/SCALING.md)."
            )
        unreadable = [f"{name}={given[name]}" for name in names if not os.access(given[name], os.R_OK)]
        if unreadable:
            raise ClusterSettingsError(f"Cannot read the TLS file {', '.join(unreadable)}; check the path.")
        ca, cert, key = (given[name] for name in names)
        _check_tls_file_owners(given)
        _check_tls_files(ca, cert, key)
        _check_certificate(ca, cert)
        return Security(
            require_encryption=True, tls_ca_file=ca,
            tls_client_cert=cert, tls_client_key=key, tls_worker_cert=cert, tls_worker_key=key,
        )  # fmt: skip
    if given:
        raise ClusterSettingsError(
            f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} set but the Dask scheduler {address} is not "
            "a tls:// address; write it as tls://HOST:PORT."
        )
    if not settings.dask_insecure and not is_loopback(address):
        raise ClusterSettingsError(
            f"The Dask scheduler {address} is plain tcp:// on another machine, where anyone who reaches its port "
            "could run code on the workers and read the uploads; use tls:// with the RAPTOR_DASK_TLS_* settings, "
            "or set RAPTOR_DASK_INSECURE=1 on a network you trust."
        )
    return None


def withhold_secrets() -> None:
    """Take the bot's secrets out of this process's environment: its Settings hold them already, and a
    worker process spawned from here (the embedded cluster's, now or when a nanny restarts one) copies
    the environment. The LLM key a build needs travels with each task."""
    for name in SECRET_VARS:  # the bot's secrets: no worker process may inherit them
        os.environ.pop(name, None)


def dask_setup(worker: Any) -> None:
    """Dask preload of every build worker (the embedded cluster's and `raptor worker`'s): close the HTTP
    server Dask starts on each worker (its routes are emptied too), so a worker listens only for Dask's
    own (TLS, where configured) connections."""
    server = getattr(worker, "http_server", None)
    if server is not None:
        server.stop()


# ------------------------------------------------------------------------------------------ worker side


def worker_embedder(settings: Settings) -> Embedder:
    """This worker process's embedder (loaded once; the plugin loads it when the worker starts).

    The cache directory is the worker machine's own (its RAPTOR_CACHE_DIR or ~/.cache/raptor), not the
    bot's path, which need not exist there."""
    key = (settings.embed_model, settings.embed_backend)
    with _embedders_lock:
        if key not in _embedders:
            from .tree.cluster import use_compile_cache

            cache_dir = keep_cache_private(worker_cache_dir())
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


def worker_cache_dir() -> Path:
    """RAPTOR_CACHE_DIR of the worker's own environment, else the default; never a `.env` file, which
    would put the variables in it (a Discord token among them) into the worker's environment."""
    configured = os.environ.get(ENV_VARS["cache_dir"], "").strip()
    return Path(configured) if configured else default_cache_dir()


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
    embedder = worker_embedder(settings)
    cache = MemoryCache(cached)
    with on_worker(build_id, settings, budget) as report:
        built = asyncio.run(_build(name, data, settings, held, embedder, cache, report))
    return pack_result(built, cache.added)


def build_trees_on_worker(
    build_id: str,
    name: str,
    chunk_lists: list[list[Chunk]],
    known: dict[str, np.ndarray],
    settings: Settings,
    cached: dict[str, CachedSummary],
    budget: BuildBudget | None = None,
) -> list[bytes]:
    """The Dask task of a message rebuild: each chunk list's tree (`docbuild.build_trees`, as the engine
    builds them without a cluster) and the summaries it added to the cache (`pack_trees`). The leaves
    whose text has a vector in `known` (stored by the documents replaced) keep it, as in-process
    (`ReusingEmbedder`), so a new message costs one embedding, not its whole document's."""
    embedder = worker_embedder(settings)
    reusing = ReusingEmbedder(embedder, known) if known else embedder
    cache = MemoryCache(cached)
    with on_worker(build_id, settings, budget) as report:
        summarizer = worker_summarizer(settings, embedder, cache)
        trees = asyncio.run(_build_trees(chunk_lists, settings, reusing, summarizer, report))
    return pack_trees(trees, cache.added)


@contextlib.contextmanager
def on_worker(build_id: str, settings: Settings, budget: BuildBudget | None) -> Iterator[ProgressCallback]:
    """A task's run on this worker: below the bot's priority, its budget active (its time runs from here,
    not from the submission: it may have waited for a worker), begun and progress told to the engine."""
    from distributed import get_worker

    worker = get_worker()
    lower_priority(settings.build_worker_nice)

    def report(event: Progress) -> None:
        worker.log_event(PROGRESS_TOPIC, {"id": build_id, **dataclasses.asdict(event)})

    worker.log_event(PROGRESS_TOPIC, {"id": build_id, "stage": BEGUN})
    if budget is not None:
        budget.restart()
    with budget.active() if budget is not None else contextlib.nullcontext():
        yield report


def _pack(head: Any, items: list[Any]) -> list[bytes]:
    """`head`, then `items` SLICE_ITEMS at a time, as small pickles.

    Dask unpickles a result on the receiving event loop, and one `pickle.loads` never lets go of the
    GIL: a 100k-token tree (1,250 nodes, 1,050 chunks) held the bot's loop for 50-200 ms in one piece.
    Bytes cost Dask nothing to receive; `_unpack` then loads the pieces in a thread, and the loop runs
    between any two of them."""
    parts = [pickle.dumps(head, protocol=pickle.HIGHEST_PROTOCOL)]
    for start in range(0, len(items), SLICE_ITEMS):
        parts.append(pickle.dumps(items[start : start + SLICE_ITEMS], protocol=pickle.HIGHEST_PROTOCOL))
    return parts


def _unpack(parts: list[bytes]) -> tuple[Any, list[Any]]:
    """`_pack` undone (in a thread: the pieces together take tens of milliseconds)."""
    items: list[Any] = []
    for part in parts[1:]:
        items.extend(pickle.loads(part))
    return pickle.loads(parts[0]), items


def pack_result(built: DocumentTree, added: dict[str, CachedSummary]) -> list[bytes]:
    """An upload's build as small pickles (`_pack`): its frame, then its nodes and chunks."""
    nodes, chunks = built.tree.nodes, built.chunks
    frame = dataclasses.replace(built, tree=dataclasses.replace(built.tree, nodes=[]), chunks=[])
    return _pack((frame, added, len(nodes)), [*nodes, *chunks])


def unpack_result(parts: list[bytes]) -> tuple[DocumentTree, dict[str, CachedSummary]]:
    """`pack_result` undone."""
    (frame, added, node_count), items = _unpack(parts)
    tree = dataclasses.replace(frame.tree, nodes=items[:node_count])
    return dataclasses.replace(frame, tree=tree, chunks=items[node_count:]), added


def pack_trees(trees: list[BuiltTree], added: dict[str, CachedSummary]) -> list[bytes]:
    """A message rebuild's trees as small pickles (`_pack`): their frames, then all their nodes."""
    frames = [dataclasses.replace(tree, nodes=[]) for tree in trees]
    nodes = [node for tree in trees for node in tree.nodes]
    return _pack((frames, added, [len(tree.nodes) for tree in trees]), nodes)


def unpack_trees(parts: list[bytes]) -> tuple[list[BuiltTree], dict[str, CachedSummary]]:
    """`pack_trees` undone."""
    (frames, added, counts), nodes = _unpack(parts)
    trees, start = [], 0
    for frame, count in zip(frames, counts, strict=True):
        trees.append(dataclasses.replace(frame, nodes=nodes[start : start + count]))
        start += count
    return trees, added


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


async def _build_trees(
    chunk_lists: list[list[Chunk]],
    settings: Settings,
    embedder: Embedder | ReusingEmbedder,
    summarizer: Summarizer,
    report: ProgressCallback,
) -> list[BuiltTree]:
    """A message rebuild's trees, in the task's own event loop (as `_build`)."""
    return await build_trees(
        chunk_lists, embedder=embedder, summarizer=summarizer, settings=settings, progress=report  # type: ignore[arg-type]
    )


# ------------------------------------------------------------------------------------------ bot side


@dataclasses.dataclass(frozen=True)
class TaskKind:
    """What differs between an upload's build task and a message rebuild's: its key's prefix (after
    raptor-build-), what a build that cannot run leaves undone (the end of its sentences), and how its
    result is unpacked."""

    key: str
    outcome: str
    unpack: Any


UPLOAD = TaskKind("", FILE_NOT_ADDED, unpack_result)
MESSAGES = TaskKind("messages-", MESSAGES_NOT_STORED, unpack_trees)


def _unpacked(kind: TaskKind, parts: Any) -> tuple[Any, Any]:
    """`kind.unpack` of a worker's result; BadResultError for one that is not packed as this version packs
    (not a list of pickles of the frame and pieces `_pack` makes)."""
    if not isinstance(parts, list) or not parts or not all(isinstance(p, bytes) for p in parts):
        raise BadResultError("it is not a list of packed pieces")  # outside the try: it is a ValueError too
    try:
        return kind.unpack(parts)
    except (pickle.UnpicklingError, AttributeError, TypeError, ValueError, IndexError, EOFError) as error:
        raise BadResultError(f"it is not packed as this version packs a result: {type(error).__name__}") from None


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
        self._scratch: str | None = None  # its workers' scratch folder (`_start_local`)
        self._progress: dict[str, ProgressCallback] = {}
        self._futures: dict[str, Any] = {}
        self._budgets: dict[str, BuildBudget] = {}  # the engine's copy of each build's budget
        self._stopped: dict[str, BaseException] = {}  # a progress callback's exception, by build
        self._connecting = asyncio.Lock()

    @property
    def where(self) -> str:
        return self.address or "an embedded LocalCluster"

    @classmethod
    async def start(cls, settings: Settings, address: str | None = None) -> BuildCluster:
        """Connect to `address` (or RAPTOR_DASK_SCHEDULER), else start the embedded LocalCluster.

        An unreachable scheduler, or settings that cannot reach it, are not fatal: the bot keeps answering
        questions, each upload gets the sentence, and the next upload tries to connect again."""
        cluster = cls(settings, address if address is not None else settings.dask_scheduler)
        try:
            await cluster.connect()
        except ClusterUnreachableError as error:
            log.error("%s", error)
        return cluster

    async def connect(self, outcome: str = FILE_NOT_ADDED) -> Any:
        """The client, connecting (or starting the LocalCluster) on first use; `outcome` ends the sentence
        of a scheduler that cannot be reached (what was not done)."""
        async with self._connecting:
            if self.client is not None:
                return self.client
            from distributed import Client

            security = cluster_security(self.settings, self.address) if self.address else None
            if not self.address:
                self.local = await self._start_local()
                security = self.local.security
            target = self.local if self.local is not None else self.address
            client = None
            try:  # bounded here too: Client's own timeout does not end the wait on a port that is not Dask's
                client = Client(target, asynchronous=True, timeout=CONNECT_TIMEOUT_S, security=security)
                await asyncio.wait_for(client, 2 * CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError) as error:
                log.warning("cannot reach the Dask scheduler at %s: %s", self.address, error)
                if client is not None:
                    await self._close_client(client)
                refused = tls_refusal(error, self.address or "", outcome)
                if refused:
                    raise ClusterSettingsError(refused) from None
                raise self._unreachable(outcome) from None
            try:
                await asyncio.wait_for(
                    client.register_plugin(EmbedderPreload(task_settings(self.settings))),
                    max(self.settings.build_worker_wait, CONNECT_TIMEOUT_S),
                )
            except (OSError, TimeoutError) as error:  # it accepted the connection, then stopped answering
                log.warning("the Dask scheduler at %s stopped answering: %s", self.address, error)
                await self._close_client(client)
                raise self._unreachable(outcome) from None
            client.subscribe_topic(PROGRESS_TOPIC, self._on_progress)
            self.client = client
            log.info("builds run on %s (dashboard %s)", self.where, client.dashboard_link or "none")
            return client

    def _unreachable(self, outcome: str) -> ClusterUnreachableError:
        return ClusterUnreachableError(
            f"The build workers (Dask scheduler {self.address}) cannot be reached; {outcome}, try again later."
        )

    async def _start_local(self) -> Any:
        """The embedded cluster: mutual TLS with a key pair that exists only in this process's memory (the
        workers get it through the nanny's pipe), on 127.0.0.1, without HTTP unless the dashboard is asked
        for, and without the bot's secrets in the workers' environment."""
        import dask
        from distributed import LocalCluster
        from distributed.security import Security

        withhold_secrets()
        # Dask's default scratch space is /tmp/dask-scratch-space, shared by every user: one who makes it
        # first owns the folder the workers' own ones are in (and so can swap them for theirs, where the
        # workers spill what they hold). This folder is made by this process, mode 0700, removed at close.
        self._scratch = tempfile.mkdtemp(prefix="raptor-dask-")
        dashboard = self.settings.dask_dashboard_port
        http = {} if dashboard else {"distributed.scheduler.http.routes": []}
        with dask.config.set({**http, "distributed.worker.http.routes": []}):
            cluster = await LocalCluster(
                n_workers=max(1, self.settings.build_workers),
                threads_per_worker=1,
                processes=True,
                asynchronous=True,
                host="127.0.0.1",
                protocol="tls://",
                security=Security.temporary(),
                dashboard_address=f"127.0.0.1:{dashboard}" if dashboard else None,
                memory_limit=f"{self.settings.build_worker_memory_mb}MB",
                env=WORKER_ENV,
                resources={version_resource(): 1},
                preload=[__name__],
                local_directory=self._scratch,
            )
        if not dashboard:
            cluster.scheduler.http_server.stop()  # Dask starts one even without a dashboard
        return cluster

    def _on_progress(self, event: tuple[float, dict[str, Any]]) -> None:
        _, msg = event  # Dask adds the worker's address to the message
        build_id = msg.get("id", "")
        budget = self._budgets.get(build_id)
        if budget is not None and msg.get("stage") in (BEGUN, "load"):  # a worker began it (again,
            # after a lost worker), and its deadline with it; the worker stops itself at that deadline, and a
            # worker that stops answering is the watch's to tell, so this copy gives both that much longer
            budget.restart(grace=self.settings.build_worker_wait)
        callback = self._progress.get(build_id)
        if callback is None or msg.get("stage") == BEGUN:
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
        dim: int | None = None,
    ) -> DocumentTree:
        """Build one document on a worker; RaptorError (one sentence) when the cluster cannot, or when what
        the worker returned is not a tree of this version's (`tree/results.py`; `dim`: the bot's own
        embedder's vector size, else the first returned vector's)."""
        task = (build_on_worker, name, data, task_settings(settings), held)

        def check(built: Any, added: Any) -> None:
            check_document_result(built, added, dim, settings.node_max_chars)

        return await self._run(name, task, UPLOAD, settings, progress, budget, check)

    async def build_trees(
        self,
        name: str,
        chunk_lists: list[list[Chunk]],
        known: dict[str, np.ndarray],
        settings: Settings,
        progress: ProgressCallback | None,
        budget: BuildBudget | None = None,
        dim: int | None = None,
    ) -> list[BuiltTree]:
        """Build a message rebuild's trees on a worker (`build_trees_on_worker`; `name` is the first
        document's); RaptorError (one sentence) when the cluster cannot, or when what the worker returned
        is not one tree per document sent, leaves the chunks sent (`tree/results.py`)."""
        task = (build_trees_on_worker, name, chunk_lists, known, task_settings(settings))

        def check(trees: Any, added: Any) -> None:
            check_trees_result(trees, added, chunk_lists, dim, settings.node_max_chars)

        return await self._run(name, task, MESSAGES, settings, progress, budget, check)

    async def _run(
        self,
        name: str,
        task: tuple[Any, ...],
        kind: TaskKind,
        settings: Settings,
        progress: ProgressCallback | None,
        budget: BuildBudget | None,
        check: Callable[[Any, Any], None],
    ) -> Any:
        """Run `task` (a task function and its arguments after the build id: the summary cache and the
        budget follow them) on a worker, relaying its progress and budget, and return its result
        unpacked and `check`ed (BadResultError: nothing of it is kept), after storing the summaries it
        added."""
        from distributed import KilledWorker
        from distributed.client import FutureCancelledError

        outcome = kind.outcome
        client = await self.connect(outcome)
        build_id = uuid.uuid4().hex
        if progress is not None:
            self._progress[build_id] = progress
        if budget is not None:  # its clock stops until a worker begins the build (budget.py)
            budget.hold()
            self._budgets[build_id] = budget
        cached = await asyncio.to_thread(self._cached_summaries, settings)
        function, *args = task
        future = client.submit(
            function, build_id, *args, cached, budget,
            key=f"raptor-build-{kind.key}{build_id}", pure=False, resources={version_resource(): 1},
        )  # fmt: skip
        self._futures[build_id] = future
        try:
            parts = await self._watched(client, future, outcome)
            built, added = await asyncio.to_thread(_unpacked, kind, parts)
            await asyncio.to_thread(check, built, added)
        except BadResultError as error:
            log.error("the build worker's result for %s was refused: %s", name, error)
            raise RaptorError(
                f"The build worker returned something that is not a tree this version builds for {name} "
                f"({error}), so {outcome}; check the workers' version and machines."
            ) from None
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
            self._budgets.pop(build_id, None)
            self._futures.pop(build_id, None)
            self._stopped.pop(build_id, None)
            if not future.done():
                _cancel(future)
        if added:
            await asyncio.to_thread(self._store_summaries, settings, added)
        return built

    async def _watched(self, client: Any, future: Any, outcome: str) -> Any:
        """The task's result; or, while it waits, the sentence that says why it cannot go on (`_watch`)."""
        result = asyncio.ensure_future(_result_of(future))
        watch = asyncio.ensure_future(self._watch(client, future.key, outcome))
        try:
            await asyncio.wait({result, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (result, watch):
                task.cancel()
        if not result.cancelled() and result.done():
            return result.result()
        return watch.result()  # raises: _watch never returns

    async def _watch(self, client: Any, key: str, outcome: str) -> NoReturn:
        """Raise, once the build cannot run, the sentence that says why: no worker of this version is
        connected (at once when the connected ones are of another version, after RAPTOR_BUILD_WORKER_WAIT
        when there are none), the worker running it stopped answering, or the scheduler does not answer,
        each for RAPTOR_BUILD_WORKER_WAIT. A build queued behind others on live workers waits on."""
        wait = self.settings.build_worker_wait
        answered = time.monotonic()
        alone_since: float | None = None  # when the scheduler last had a worker that could run it
        running_on, heard = "", time.monotonic()  # the worker running it, when its heartbeat last moved
        last_seen: float | None = None
        while True:
            try:
                identity, processing = await asyncio.wait_for(
                    asyncio.gather(client.scheduler.identity(), client.scheduler.processing()),
                    max(wait - (time.monotonic() - answered), WATCH_S),
                )
            except (OSError, TimeoutError) as error:
                if time.monotonic() - answered >= wait:
                    log.warning("the Dask scheduler at %s does not answer: %s", self.where, error)
                    raise ClusterUnreachableError(
                        f"The Dask scheduler at {self.where} stopped answering for {wait:g} s; {outcome}, "
                        "try again later."
                    ) from None
                await asyncio.sleep(WATCH_S)
                continue
            answered = now = time.monotonic()
            workers = identity.get("workers", {})
            if not any(version_resource() in (w.get("resources") or {}) for w in workers.values()):
                check_versions(workers, outcome)
                alone_since = alone_since or now
                if now - alone_since >= wait:
                    raise NoWorkerError(
                        f"No build worker has been connected to {self.where} for {wait:g} s; {outcome}, "
                        "try again later."
                    )
            else:
                alone_since = None
            worker = next((w for w, keys in processing.items() if key in keys), "")
            seen = (workers.get(worker) or {}).get("last_seen")
            if worker != running_on or seen != last_seen:
                running_on, last_seen, heard = worker, seen, now
            elif worker and now - heard >= wait:
                raise NoWorkerError(
                    f"The build worker running it ({worker}) stopped answering for {wait:g} s; {outcome}, "
                    "try again later."
                )
            await asyncio.sleep(WATCH_S)

    async def close(self) -> None:
        if self.client is not None:
            await self._close_client(self.client)
            self.client = None
        if self.local is not None:
            await close_local_cluster(self.local)
            self.local = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    @staticmethod
    async def _close_client(client: Any) -> None:
        """Close the client; a scheduler that does not answer holds it for CLOSE_TIMEOUT_S at most."""
        try:
            await asyncio.wait_for(client.close(), CLOSE_TIMEOUT_S)
        except (OSError, TimeoutError):
            log.warning("the Dask scheduler did not answer while the client closed")


async def close_local_cluster(cluster: Any) -> None:
    """Close an embedded LocalCluster, giving each worker WORKER_STOP_S to stop first. Dask's own close
    gives a worker process 5 s, and a process killed on a loaded machine can take longer than that to be
    reaped: the close then fails half-way with TimeoutError, its scheduler left open."""
    workers = list(cluster.workers.values())
    stopped = await asyncio.gather(*(worker.close(timeout=WORKER_STOP_S) for worker in workers), return_exceptions=True)
    for worker, outcome in zip(workers, stopped, strict=True):
        if isinstance(outcome, BaseException):
            log.warning("build worker %s did not stop cleanly: %r", getattr(worker, "address", worker), outcome)
    await cluster.close()


async def _result_of(future: Any) -> Any:
    return await future


def worker_versions(workers: dict[str, Any]) -> list[str]:
    """The project's versions the scheduler's workers declare (their raptor-VERSION resources)."""
    versions = {
        name[len(VERSION_RESOURCE_PREFIX) :]
        for info in workers.values()
        for name in (info.get("resources") or {})
        if name.startswith(VERSION_RESOURCE_PREFIX)
    }
    return sorted(versions)


def check_versions(workers: dict[str, Any], outcome: str = FILE_NOT_ADDED) -> None:
    """Refuse a build, before it runs, where the connected workers are all of another version."""
    theirs = [v for v in worker_versions(workers) if v != __version__]
    if theirs:
        raise NoWorkerError(
            f"The build workers run raptor {' and '.join(theirs)} but this is raptor {__version__}, so "
            f"{outcome}; install the same version on both."
        )


# ------------------------------------------------------------------------------------------ raptor worker


def listen_host(address: str) -> str:
    """The address of this machine's interface that reaches the scheduler at `address` (127.0.0.1 for a
    scheduler on loopback): a worker listens there only, not on every interface."""
    from distributed.utils import get_ip

    host = address_host(address)
    try:
        target = socket.getaddrinfo(host, None)[0][4][0]
    except (OSError, IndexError):
        target = host
    if ipaddress.ip_address(target.split("%")[0]).is_loopback:
        return target
    return get_ip(target)


def worker_command(
    address: str, settings: Settings, name: str | None = None, host: str | None = None, listen: str | None = None
) -> list[str]:
    """`dask worker` with the project's shape: one single-threaded process worker, with a nanny whose
    memory limit backs up the parse child's (the model is loaded by the plugin the bot registers); it
    declares the project's version, listens only on `listen`, or `host`, or the interface that reaches the
    scheduler, serves no HTTP, and speaks TLS with the RAPTOR_DASK_TLS_* files to a tls:// scheduler.
    ClusterSettingsError (one sentence) where the address and the settings do not go together."""
    import dask

    security = cluster_security(settings, address)
    # -P: `python -m` would put the folder `raptor worker` runs in first on the path of the worker and of the
    # process its nanny spawns (which inherits the flag), where another user's `distributed/` would run
    command = [
        sys.executable, "-P", "-m", "distributed.cli.dask_worker", address,
        "--nworkers", "1", "--nthreads", "1",
        "--memory-limit", f"{settings.build_worker_memory_mb}MB",
        "--resources", f"{version_resource()}=1",
        "--no-dashboard",
    ]  # fmt: skip
    # --preload replaces Dask's configured preloads (distributed.worker.preload): pass those on too
    for module in [*dask.config.get("distributed.worker.preload", []), __name__]:
        command += ["--preload", module]
    if listen:
        command += ["--listen-address", listen]
        http_host = address_host(listen)
    else:
        http_host = host or listen_host(address)
        command += ["--host", http_host]
    command += ["--dashboard-address", f"[{http_host}]:0" if ":" in http_host else f"{http_host}:0"]
    if security is not None:
        command += [
            "--tls-ca-file", security.tls_ca_file, "--tls-cert", security.tls_worker_cert,
            "--tls-key", security.tls_worker_key,
        ]  # fmt: skip
    if name:
        command += ["--name", name]
    command += ["--local-directory", str(private_scratch(keep_cache_private(settings.cache_dir) / "dask-scratch"))]
    return command


def private_scratch(folder: Path) -> Path:
    """`raptor worker`'s scratch folder (Dask's local directory: the worker's own folder, where it spills
    what it holds, pickled), made this user's alone (0700). Dask's default is /tmp/dask-scratch-space,
    shared by every user: one who makes it first owns the folder the worker's own is in, so can move that
    aside and put one of theirs in its place (tried with uid 65534), where the worker then writes the
    uploads it spills and reads back pickles. ClusterSettingsError, one sentence, for a folder of another
    user's, or a symbolic link (RAPTOR_CACHE_DIR set to a shared place)."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        status = folder.lstat()
        mine = status.st_uid == os.getuid() and stat.S_ISDIR(status.st_mode)
        if mine and status.st_mode & 0o077:
            folder.chmod(0o700)
    except OSError as error:
        raise ClusterSettingsError(f"Cannot make the build worker's scratch folder {folder}: {error.strerror}.") from None
    if not mine:
        raise ClusterSettingsError(
            f"The build worker's scratch folder {folder} belongs to another user or is a link, and the worker "
            "would keep uploads and read pickles there; set RAPTOR_CACHE_DIR to a folder of this user's."
        )
    return folder


def worker_environment() -> dict[str, str]:
    """`raptor worker`'s environment: this one without the bot's secrets (a `.env` may have put them
    there), with one thread per library and no HTTP routes on the worker."""
    env = {name: value for name, value in os.environ.items() if name not in SECRET_VARS}
    env.update(WORKER_ENV)
    env["DASK_DISTRIBUTED__WORKER__HTTP__ROUTES"] = "[]"
    return env


def exec_worker(
    address: str, settings: Settings, name: str | None = None, host: str | None = None, listen: str | None = None
) -> None:
    """Replace this process with the Dask worker (so signals reach it directly)."""
    command = worker_command(address, settings, name, host, listen)
    refused = scheduler_tls_refusal(address, settings)
    if refused:
        raise ClusterSettingsError(refused)
    log.info("starting: %s", " ".join(command))
    os.execve(command[0], command, worker_environment())
