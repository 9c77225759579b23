"""Clustering one layer of nodes as in RAPTOR (Sarthi et al. 2024): global UMAP + GMM, then local.

The algorithm follows the paper's reference code: reduce the embeddings with a global UMAP
(n_neighbors ~ sqrt(N)), fit Gaussian mixtures with the component count chosen by BIC, give every
node to each component whose posterior exceeds `threshold` (soft membership), then repeat inside
each global cluster with a local UMAP (n_neighbors 10). A cluster whose children would exceed the
summariser's input budget is clustered again on its own members.

Differences from the reference code, each for robustness or speed:
- nobody is orphaned: a node always belongs to its most likely component, even if no posterior
  passes the threshold;
- the BIC scan covers 1..min(max_clusters, N // 2) components and stops early once BIC has risen for
  `BIC_RISES` consecutive counts or `BIC_PATIENCE` consecutive counts have not lowered the lowest BIC
  so far (BIC over component counts falls to one low region, and every extra fit costs more than the last);
- re-clustering has a progress guard: when it cannot split an over-budget cluster into smaller
  ones, the cluster is cut into contiguous runs (by position) that fit the budget, so it ends;
- duplicate embeddings (repeated chunks) are clustered once and share their clusters; with fewer
  than 4 distinct embeddings the nodes are grouped by embedding (method "distinct");
- tiny or degenerate layers (N <= 3, identical embeddings, a failed or non-finite fit) fall back to
  one cluster or to contiguous groups, and say so in `Clustering.method` and `Clustering.notes`;
- a small cluster's UMAP (under `_SMALL_LAYOUT_NODES` points) starts from a dense eigendecomposition,
  which gives the same start every call, and runs `_SMALL_LAYOUT_EPOCHS` layout epochs;
- the local clusterings of one layer are independent, so they run on `cluster_threads()` threads (each
  with its own inputs and notes, collected in order: the same clusters as one thread), and UMAP's layout
  epochs release the GIL (`_nogil_layout_epoch`) so that two of them can run at once.
- UMAP's neighbour lists on precomputed distances come from a partition of each row rather than a
  full sort (`stable_knn_indices`: the same lists, ties included), and duplicate rows are found by a
  dictionary of their rounded bytes rather than by sorting the rows.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import math
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..config import default_cache_dir
from ..ingest.budget import checkpoint
from ..types import Clustering
from . import mixture_kernels
from .deferred import Spec, deferred_modules
from .mixture import Mixture, fit_mixture

log = logging.getLogger(__name__)

MIN_NODES_TO_CLUSTER = 4  # UMAP needs N > n_components + 1 and a useful neighbourhood
LOCAL_NEIGHBORS = 10  # the reference code's local UMAP n_neighbors
BIC_RISES = 3  # stop the BIC scan after this many consecutive rises
# ... or after this many consecutive counts without a new lowest BIC (a noisy BIC that falls a little between
# rises kept the first rule scanning): the same counts on every scan of the 100k bench text and of the
# evaluation sets' trees, with 5% fewer fits, the largest among them (docs/PERFORMANCE.md, issue 31).
BIC_PATIENCE = 4
MAX_RECLUSTER_DEPTH = 12  # a second guard on top of "strictly smaller": contiguous beyond this
_IDENTICAL_TOLERANCE = 1e-5  # embeddings closer than this per component count as identical
# umap-learn runs 200 epochs for large data (500 for small); a layer's layout from its spectral start
# settles well before that, and 100 kept retrieval quality (docs/PERFORMANCE.md, issue 31).
_UMAP_EPOCHS = 100
# A local cluster's UMAP (tens of nodes) starts from its spectral layout, which already separates what the
# mixture will find; its layout epochs were most of its cost. 50 epochs below this many distinct nodes
# kept retrieval quality (docs/PERFORMANCE.md, "Profile of a 100k-token ingest").
_SMALL_LAYOUT_NODES = 200
_SMALL_LAYOUT_EPOCHS = 50
_UMAP_SMALL_DATA = 4096  # umap-learn computes exact all-pairs distances below this many points
# From this many distinct points a global clustering's BIC scan fits the next count on the job's second thread:
# its arrays are then large enough that numpy spends most of a fit without the GIL.
_PARALLEL_SCAN_ROWS = 400


def contiguous_groups(
    token_counts: Sequence[int], budget: int, max_groups: int | None = None
) -> list[list[int]]:
    """Cut positions 0..N-1 into runs whose summed tokens fit `budget` (a lone oversized node forms its own run).

    Neighbouring chunks of a document are usually about the same thing, so contiguous runs are
    the sensible grouping when clustering cannot help. With `max_groups`, runs are merged (by
    balanced token mass) until at most that many remain; the budget may then be exceeded.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for position, tokens in enumerate(token_counts):
        if current and used + tokens > budget:
            groups.append(current)
            current, used = [], 0
        current.append(position)
        used += tokens
    if current:
        groups.append(current)
    if max_groups is not None and max_groups >= 1 and len(groups) > max_groups:
        groups = _balanced_runs(token_counts, max_groups)
    return groups


def _balanced_runs(token_counts: Sequence[int], count: int) -> list[list[int]]:
    """`count` contiguous runs of roughly equal token mass (used when fewer groups matter more than the budget)."""
    total = float(sum(token_counts)) or 1.0
    groups: list[list[int]] = [[] for _ in range(count)]
    cumulative = 0.0
    for position, tokens in enumerate(token_counts):
        # Place each node by the midpoint of its token mass so runs stay contiguous and balanced.
        slot = min(count - 1, int((cumulative + tokens / 2) / total * count))
        groups[slot].append(position)
        cumulative += tokens
    return [g for g in groups if g]


_compile_cache_dir: Path | None = None
_umap_module: list[ModuleType] = []
_umap_lock = threading.RLock()  # re-entered when umap's import touches a deferred module


def use_compile_cache(folder: Path | None) -> None:
    """Keep UMAP's compiled numba code in `folder`, so a new process loads it instead of compiling (~9 s).

    Takes effect when umap is first imported through `import_umap` in this process. NUMBA_CACHE_DIR,
    when set, wins (numba's own setting); with neither, the default cache directory is used.
    """
    global _compile_cache_dir
    _compile_cache_dir = folder


def _compile_cache_folder() -> Path:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    return _compile_cache_dir or default_cache_dir() / "numba"


mixture_kernels.use_cache_folder(_compile_cache_folder)  # the mixture fits' loops are cached beside UMAP's code


def import_umap() -> ModuleType:
    """umap, with every numba function of umap cached on disk, and without pynndescent until it is used.

    umap-learn marks only some of its functions `cache=True`. Those given a type signature compile
    as they are defined, on every import (~0.3 s of CPU each process), and the layout optimiser and
    the fuzzy graph's kernels are compiled again by each process's first fit. So numba's decorators
    add `cache=True` while umap is imported (`_decorators_cache`), and `enable_caching` then reaches
    any function still uncached; all of it lives in `use_compile_cache`'s folder. Functions that
    cannot be cached (closures) just keep compiling in memory. pynndescent, which umap imports but our
    fits do not use, is a stand-in until touched (`_UNUSED_BY_OUR_FITS`), then imported the same way.
    """
    with _umap_lock:
        if not _umap_module:
            import numba  # imported late: numba and umap are slow to import

            with deferred_modules(_UNUSED_BY_OUR_FITS, _import_cached):
                umap = _import_cached("umap")
            folder = _compile_cache_folder()
            umap.umap_.spectral_layout = _steady_spectral_layout(umap.umap_.spectral_layout)
            umap.umap_.fast_knn_indices = stable_knn_indices
            umap.layouts._nb_optimize_layout_euclidean_single_epoch = _nogil_layout_epoch(numba, umap, folder)
            _umap_module.append(umap)
        return _umap_module[0]


# What umap imports from pynndescent, its own neighbour search: the engine gives UMAP its neighbours
# (precomputed distances below `_UMAP_SMALL_DATA` points, hnswlib's above), so our fits use none of it;
# a large layer's fit only asks whether pynndescent knows the metric, which loads it then (deferred.py).
_UNUSED_BY_OUR_FITS: Spec = {
    "pynndescent": {"NNDescent": "class"},
    "pynndescent.distances": {"named_distances": "mapping"},
    "pynndescent.sparse": {"sparse_named_distances": "mapping"},
}


def _import_cached(name: str) -> ModuleType:
    """Import `name` (umap, or a deferred module umap uses after all) with its numba functions cached on
    disk in `use_compile_cache`'s folder: the decorators cache as they compile, then the rest is reached."""
    import importlib

    import numba

    with _umap_lock:
        if name in sys.modules:
            return sys.modules[name]
        folder = _compile_cache_folder()
        with _decorators_cache(numba, folder):
            module = importlib.import_module(name)
        _enable_numba_caching(numba, (name.split(".")[0],), folder)
        return module


@contextlib.contextmanager
def _decorators_cache(numba: ModuleType, folder: Path) -> Iterator[None]:
    """While in effect, `numba.njit` and `numba.jit` cache what they compile in `folder`."""
    originals = numba.njit, numba.jit
    previous = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = str(folder)  # read as each function's cache is created
    numba.njit, numba.jit = _caching(numba.njit), _caching(numba.jit)
    try:
        yield
    finally:
        numba.njit, numba.jit = originals
        numba.config.CACHE_DIR = previous


def _caching(decorator: Callable[..., Any]) -> Callable[..., Any]:
    """`decorator` with `cache=True` unless the caller said otherwise; uncached where caching is refused."""

    @functools.wraps(decorator)
    def with_cache(*args: Any, **kwargs: Any) -> Any:
        if "cache" in kwargs:
            return decorator(*args, **kwargs)
        try:
            return decorator(*args, cache=True, **kwargs)
        except Exception as exc:  # e.g. a function numba cannot locate a cache file for
            log.debug("numba cannot cache a function of umap: %s", exc)
            return decorator(*args, **kwargs)

    return with_cache


def _nogil_layout_epoch(numba: ModuleType, umap: ModuleType, folder: Path) -> Any:
    """umap's one-thread layout epoch (`optimize_layout_euclidean` with a random_state), compiled with
    `nogil=True`: the same code and flags otherwise, so the same layout, but two local clusterings'
    layouts can run on two cores at once.

    numba's cache index does not tell `nogil` apart from umap's own compilation of the same function,
    so this one is cached in a folder of its own.
    """
    kernel = numba.njit(umap.layouts._optimize_layout_euclidean_single_epoch, fastmath=True, parallel=False, nogil=True)
    previous = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = str(folder / "nogil")  # read as the cache is created, below
    try:
        kernel.enable_caching()
    except Exception as exc:  # e.g. an unwritable folder: it compiles in memory
        log.debug("numba cannot cache the nogil layout epoch: %s", exc)
    finally:
        numba.config.CACHE_DIR = previous
    return kernel


def may_cluster(leaves: int, stop_nodes: int) -> bool:
    """Whether a document of `leaves` chunks gets a summary layer by clustering (build.py's stop rule)."""
    return leaves > stop_nodes and leaves >= MIN_NODES_TO_CLUSTER


def _enable_numba_caching(numba: ModuleType, packages: tuple[str, ...], folder: Path) -> int:
    """Turn on the on-disk cache of the uncached numba functions of `packages`; returns how many."""
    from numba.core.dispatcher import Dispatcher

    previous = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = str(folder)  # read when each cache is created, below; restored after
    enabled = 0
    try:
        for name, module in list(sys.modules.items()):
            if module is None or name.split(".")[0] not in packages:
                continue
            for value in list(vars(module).values()):
                if isinstance(value, Dispatcher) and type(value._cache).__name__ == "NullCache":
                    try:
                        value.enable_caching()
                        enabled += 1
                    except Exception as exc:  # e.g. a function defined in a closure: it compiles in memory
                        log.debug("numba cannot cache %s.%s: %s", name, value.py_func.__name__, exc)
    finally:
        numba.config.CACHE_DIR = previous
    log.debug("numba on-disk cache enabled for %d functions in %s", enabled, folder)
    return enabled


def warm_up() -> None:
    """Fit a tiny UMAP and a tiny mixture once: loads (or, the first time on a machine, compiles and
    caches) their numba code."""
    rng = np.random.default_rng(0)
    data = rng.normal(size=(40, 16)).astype(np.float32)
    with _quiet():
        _umap_reduce(data, n_neighbors=5, n_components=2, seed=0)
        _warm_mixture_code()
    _mark_compiled()


def _warm_mixture_code() -> None:
    """Load (or compile and cache) the mixture fits' numba loops (`mixture_kernels`): ~20 s to compile."""
    fit_mixture(np.random.default_rng(0).normal(size=(20, 2)), 2, seed=0)


def compile_once() -> None:
    """`warm_up`, unless this machine's compile cache already holds UMAP's code for the installed umap,
    numba and Python. A one-shot command then leaves umap's import (~1.5 CPU s) to the first layer
    that clusters, which a document of a few chunks never has; a machine's first run still compiles
    here (~10 s or more), before any build deadline starts."""
    if umap_compiled():
        log.debug("UMAP's compiled code is cached (%s): umap is imported when a layer first clusters", _marker())
        return
    warm_up()


def umap_compiled() -> bool:
    """Whether a `warm_up` finished with the compile cache in use now and the same umap, numba and Python."""
    try:
        return _marker().is_file()
    except (OSError, ValueError, ImportError):  # no umap or numba installed: the import will say so
        return False


def _mark_compiled() -> None:
    try:
        marker = _marker()
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except (OSError, ValueError, ImportError) as exc:  # an unwritable cache: every command warms up as before
        log.debug("cannot record that UMAP's code is compiled: %s", exc)


# The source files whose numba code `warm_up` compiles (numba's cache index checks their stamps).
_COMPILED_SOURCES = (
    ("umap", ("umap_.py", "layouts.py", "utils.py")),
    ("numba", ("__init__.py",)),
    ("raptor_engine.tree", ("mixture_kernels.py",)),
)


def _marker() -> Path:
    """The file `warm_up` leaves in the compile cache. Its name holds what numba's own cache index checks
    (each source file's size and modification time) for umap's, numba's and the mixture loops' code, and
    Python's version, so a reinstalled or upgraded package asks for a new warm-up."""
    import hashlib
    import importlib.util

    stamps = [sys.version]
    for package, files in _COMPILED_SOURCES:
        spec = importlib.util.find_spec(package)  # finds the package without importing it
        if spec is None or spec.origin is None:
            raise ImportError(f"{package} is not installed")
        for name in files:
            stat = (Path(spec.origin).parent / name).stat()
            stamps.append(f"{package}/{name}:{stat.st_size}:{stat.st_mtime_ns}")
    digest = hashlib.sha256("\n".join(stamps).encode()).hexdigest()[:16]
    return _compile_cache_folder() / f"warmed-{digest}"


def cluster_threads() -> int:
    """Threads for a layer's local clusterings: two where the process may use two cores, else one."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(2, cores))


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Ignore warnings for one clustering: spectral-init and small-graph warnings from UMAP and numpy's
    warnings on a degenerate mixture fit are expected (its BIC or error decides).

    Entered once, by the thread that clusters, around the whole job: `warnings.catch_warnings` changes
    process-wide state and is not safe to enter from the local clusterings' threads at once.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def cluster_nodes(
    embeddings: np.ndarray,
    token_counts: Sequence[int],
    *,
    max_cluster_tokens: int = 3500,
    threshold: float = 0.1,
    dim: int = 10,
    max_clusters: int = 50,
    seed: int = 224,
) -> Clustering:
    """Group a layer's nodes for summarising: RAPTOR clustering, then every cluster fits the token budget.

    Returns clusters as sorted lists of positions, ordered by smallest member; every position is in
    at least one cluster. Same input, same output.
    """
    embeddings = np.asarray(embeddings, dtype=np.float64)
    count = len(token_counts)
    if embeddings.ndim != 2 or embeddings.shape[0] != count:
        raise ValueError(f"expected {count} embeddings, got shape {embeddings.shape}")
    if count == 0:
        return Clustering(clusters=[], method="single", notes=["no nodes to cluster"])
    if not np.all(np.isfinite(embeddings)):
        raise ValueError("embeddings contain NaN or infinite values")

    threads = cluster_threads()
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(ThreadPoolExecutor(threads, thread_name_prefix="cluster")) if threads > 1 else None
        stack.enter_context(_single_threaded_blas())
        stack.enter_context(_quiet())
        job = _ClusterJob(
            embeddings=embeddings,
            token_counts=[int(t) for t in token_counts],
            budget=max_cluster_tokens,
            threshold=threshold,
            dim=dim,
            max_clusters=max_clusters,
            seed=seed,
            pool=pool,
        )
        clusters = job.cluster(list(range(count)), depth=0)
    clusters = _canonical(clusters)
    method = job.top_method
    if method == "single" and len(clusters) > 1:
        # No mixture at the top: the groups came from exact-duplicate embeddings or from contiguous cuts.
        method = "contiguous" if job.cut_contiguously else "distinct"
    log.debug("clustered %d nodes into %d clusters (%s)", count, len(clusters), method)
    return Clustering(clusters=clusters, method=method, notes=job.notes)


class _ClusterJob:
    """One cluster_nodes call: the inputs, plus the notes and method gathered while recursing."""

    def __init__(
        self,
        *,
        embeddings: np.ndarray,
        token_counts: list[int],
        budget: int,
        threshold: float,
        dim: int,
        max_clusters: int,
        seed: int,
        pool: Executor | None = None,
    ):
        self.embeddings = embeddings
        self.token_counts = token_counts
        self.budget = budget
        self.threshold = threshold
        self.dim = dim
        self.max_clusters = max_clusters
        self.seed = seed
        self.pool = pool  # runs the local clusterings of one layer side by side; None: one after another
        self.notes: list[str] = []
        self.top_method = "single"
        self.cut_contiguously = False

    def tokens(self, positions: Sequence[int]) -> int:
        return sum(self.token_counts[p] for p in positions)

    def cluster(self, positions: list[int], depth: int) -> list[list[int]]:
        """Cluster `positions` (global indices), then re-cluster any group over the budget."""
        groups = self.raptor_groups(positions, depth)
        result: list[list[int]] = []
        for group in groups:
            if len(group) == 1 or self.tokens(group) <= self.budget:
                result.append(group)
            elif len(group) < len(positions) and depth < MAX_RECLUSTER_DEPTH:
                result.extend(self.cluster(group, depth + 1))
            else:
                if depth == 0 and len(group) == len(positions):
                    self.top_method = "contiguous"  # nothing of the clustering survives at the top
                result.extend(self.contiguous(group, "clustering could not split it"))
        return result

    def contiguous(self, positions: list[int], why: str) -> list[list[int]]:
        ordered = sorted(positions)
        runs = contiguous_groups([self.token_counts[p] for p in ordered], self.budget)
        self.cut_contiguously = True
        self.notes.append(
            f"{len(ordered)} nodes ({self.tokens(ordered)} tokens) over the {self.budget}-token budget "
            f"and {why}: cut into {len(runs)} contiguous groups"
        )
        return [[ordered[i] for i in run] for run in runs]

    def raptor_groups(self, positions: list[int], depth: int) -> list[list[int]]:
        """Global then local clustering of `positions`; one group when clustering is not possible."""
        size = len(positions)
        if size < MIN_NODES_TO_CLUSTER:
            if depth == 0:
                self.notes.append(f"{size} node{'s' if size > 1 else ''}: one cluster, too few to cluster")
            return [positions]
        data = self.embeddings[positions]
        if _all_identical(data):
            self.notes.append(f"{size} nodes with identical embeddings: one cluster, nothing to separate")
            return [positions]
        try:
            global_groups, mixed = self.reduce_and_mix(data, local=False)
        except _ClusteringFailed as failure:
            self.notes.append(f"{size} nodes: clustering failed ({failure}); one cluster")
            return [positions]
        if depth == 0 and mixed:
            self.top_method = "gmm"
        groups: list[list[int]] = []
        for local_groups, notes in self.each_local(data, global_groups):
            self.notes.extend(notes)
            groups.extend([positions[i] for i in local] for local in local_groups)
        return groups

    def each_local(
        self, data: np.ndarray, global_groups: list[list[int]]
    ) -> Iterator[tuple[list[list[int]], list[str]]]:
        """Each global cluster's local groups and notes, in the global clusters' order, computed on the
        job's threads when it has them (each call gets a copy of this thread's context: the build budget).
        The threads take the largest clusters first, so that no large one is left to run alone at the end."""
        if self.pool is None or len(global_groups) < 2:
            yield from (self.local_groups(data, members) for members in global_groups)
            return
        futures: dict[int, Future[tuple[list[list[int]], list[str]]]] = {}
        for i in sorted(range(len(global_groups)), key=lambda i: -len(global_groups[i])):  # stable: ties in order
            futures[i] = self.pool.submit(contextvars.copy_context().run, self.local_groups, data, global_groups[i])
        futures = dict(sorted(futures.items()))
        try:
            yield from (future.result() for future in futures.values())
        finally:
            for future in futures.values():  # a failure (or the budget's stop) leaves no work running behind it
                future.cancel()

    def local_groups(self, data: np.ndarray, members: list[int]) -> tuple[list[list[int]], list[str]]:
        """Split one global cluster (indices into `data`) with a local UMAP + GMM, as in the paper; its notes
        come back with it, so that threads running side by side keep the notes' order."""
        notes: list[str] = []
        if len(members) <= self.dim + 1:  # the reference code keeps such small clusters whole
            return [members], notes
        local = data[members]
        if _all_identical(local):
            return [members], notes
        try:
            groups, _ = self.reduce_and_mix(local, local=True, notes=notes)
        except _ClusteringFailed as failure:
            log.info("local clustering of %d nodes failed (%s); kept whole", len(members), failure)
            return [members], notes
        return [[members[i] for i in group] for group in groups], notes

    def reduce_and_mix(
        self, data: np.ndarray, *, local: bool, notes: list[str] | None = None
    ) -> tuple[list[list[int]], bool]:
        """UMAP, then a BIC-chosen Gaussian mixture with soft membership; indices into `data`, and whether the mixture ran.

        Duplicate embeddings (repeated chunks) are clustered once and share their groups: UMAP
        scatters exact duplicates arbitrarily, which would split them for no reason. Notes go to
        `notes` (default: the job's).
        """
        checkpoint()  # one per UMAP + mixture fit (budget.py)
        unique, inverse = _unique_rows(data)
        distinct = len(unique)
        if distinct < MIN_NODES_TO_CLUSTER:
            (self.notes if notes is None else notes).append(
                f"{len(data)} nodes with only {distinct} distinct embeddings: grouped by embedding"
            )
            return [np.flatnonzero(inverse == k).tolist() for k in range(distinct)], False
        # Global: n_neighbors ~ sqrt(N) as in the reference code; local: its fixed 10.
        n_neighbors = min(LOCAL_NEIGHBORS, distinct - 1) if local else max(2, int(math.sqrt(distinct)))
        n_components = min(self.dim, distinct - 2)
        reduced = _umap_reduce(unique, n_neighbors=n_neighbors, n_components=n_components, seed=self.seed)
        if not np.all(np.isfinite(reduced)) or float(np.ptp(reduced, axis=0).max()) < _IDENTICAL_TOLERANCE:
            raise _ClusteringFailed("UMAP gave a degenerate projection")
        limit = max(1, min(self.max_clusters, distinct // 2))
        # A local clustering runs on the pool already; a global one may use it for the scan's fits.
        pool = None if local or len(unique) < _PARALLEL_SCAN_ROWS else self.pool
        groups = _soft_gmm_groups(reduced, limit, self.threshold, self.seed, pool)
        if distinct == len(data):
            return groups, True
        return [np.flatnonzero(np.isin(inverse, group)).tolist() for group in groups], True


class _ClusteringFailed(Exception):
    """UMAP or the mixture fit produced nothing usable; the caller falls back."""


def _single_threaded_blas():
    """BLAS threads only add overhead to the many tiny (dim x dim) solves of the mixture fits."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _all_identical(data: np.ndarray) -> bool:
    return float(np.ptp(data, axis=0).max()) < _IDENTICAL_TOLERANCE


def _unique_rows(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows (up to float noise) in first-seen order, and each row's index among them.

    Rows are told apart by the bytes of their rounded values in a dictionary: one pass, where
    `np.unique(axis=0)` sorted the rows as records (~0.1 s a layer of 1,100 nodes)."""
    keys = np.ascontiguousarray(np.round(data / _IDENTICAL_TOLERANCE).astype(np.int64))
    index_of: dict[bytes, int] = {}
    first: list[int] = []
    inverse = np.empty(len(keys), dtype=np.intp)
    for row, key in enumerate(keys):
        found = index_of.setdefault(key.tobytes(), len(first))
        if found == len(first):
            first.append(row)
        inverse[row] = found
    return data[first], inverse


def _umap_reduce(data: np.ndarray, *, n_neighbors: int, n_components: int, seed: int) -> np.ndarray:
    umap = import_umap()
    # Below UMAP's small-data size it computes all pairwise distances anyway, but through a Python
    # callable; handing it the same cosine distances computed by numpy is several times faster.
    # Above it, UMAP would build its neighbour graph with pynndescent, whose many numba functions
    # compile in every process; hnswlib (compiled C++) gives the same neighbour lists at once.
    precompute = len(data) < _UMAP_SMALL_DATA
    reducer = umap.UMAP(
        n_neighbors=n_neighbors,
        n_components=n_components,
        metric="precomputed" if precompute else "cosine",
        n_epochs=layout_epochs(len(data)),
        random_state=seed,
        n_jobs=1,  # random_state forces one thread anyway; saying so silences the warning
        precomputed_knn=(None, None, None) if precompute else _hnsw_knn(data, n_neighbors, seed),
    )
    try:  # warnings: the caller's `_quiet`
        inputs = _cosine_distances(data) if precompute else data
        return np.asarray(reducer.fit_transform(inputs), dtype=np.float64)
    except (ValueError, TypeError, np.linalg.LinAlgError) as exc:
        raise _ClusteringFailed(f"UMAP: {exc}") from exc


def _steady_spectral_layout(original: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """umap's spectral start, computed densely (`dense_spectral_layout`) for a small graph.

    umap finds the eigenvectors with ARPACK, whose restarts draw from a seed ARPACK keeps between
    calls: on a tiny graph with close eigenvalues the same input gave a different start, and so
    different clusters, from call to call in one process. A small graph's dense eigendecomposition
    costs about as little and gives the same vectors every time.
    """

    @functools.wraps(original)
    def layout(data: Any, graph: Any, dim: int, random_state: Any, **kwargs: Any) -> np.ndarray:
        if graph.shape[0] >= _SMALL_LAYOUT_NODES:
            return original(data, graph, dim, random_state, **kwargs)
        return dense_spectral_layout(graph, dim)

    return layout


def dense_spectral_layout(graph: Any, dim: int) -> np.ndarray:
    """The eigenvectors of the graph's normalised Laplacian for its 2nd to (dim+1)th smallest eigenvalues
    (umap's spectral start), by LAPACK's dense solver."""
    adjacency = np.asarray(graph.toarray() if hasattr(graph, "toarray") else graph, dtype=np.float64)
    adjacency = (adjacency + adjacency.T) / 2
    scale = 1.0 / np.sqrt(np.maximum(adjacency.sum(axis=0), 1e-12))
    laplacian = np.eye(len(adjacency)) - scale[:, None] * adjacency * scale[None, :]
    values, vectors = np.linalg.eigh(laplacian)
    return vectors[:, np.argsort(values, kind="stable")[1 : dim + 1]]


def layout_epochs(count: int) -> int:
    """UMAP's layout epochs for `count` distinct points: fewer for a small cluster, whose layout converges
    from its spectral start in few steps and whose per-epoch cost dominated its fit."""
    return _SMALL_LAYOUT_EPOCHS if count < _SMALL_LAYOUT_NODES else _UMAP_EPOCHS


def _hnsw_knn(data: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's k nearest rows (itself first) by cosine distance, as UMAP's `precomputed_knn` wants."""
    import hnswlib

    vectors = np.ascontiguousarray(data, dtype=np.float32)
    index = hnswlib.Index(space="cosine", dim=vectors.shape[1])
    index.init_index(max_elements=len(vectors), ef_construction=200, M=16, random_seed=seed)
    index.add_items(vectors, num_threads=1)  # one thread: the same input gives the same graph
    index.set_ef(max(2 * k, 100))
    labels, distances = index.knn_query(vectors, k=k, num_threads=1)
    return labels.astype(np.int32), np.maximum(distances, 0.0).astype(np.float32)


def stable_knn_indices(distances: np.ndarray, neighbors: int) -> np.ndarray:
    """Each row's `neighbors` smallest entries' columns, nearest first, ties by column: the first
    `neighbors` of a stable argsort of each row, as umap's `fast_knn_indices` finds them.

    umap sorted every row of the (N, N) distances in full (a third of the leaf layer's UMAP fit at 1,100
    nodes); this partitions each row, then sorts only the entries up to each row's k-th smallest. A row
    whose k-th smallest value is shared by entries beyond the partition is sorted whole, so ties give
    the same columns as a stable sort."""
    rows, columns = distances.shape
    if neighbors >= columns:
        return np.argsort(distances, axis=1, kind="stable")[:, :neighbors].astype(np.int32)
    taken = np.sort(np.argpartition(distances, neighbors - 1, axis=1)[:, :neighbors], axis=1)  # by column
    values = np.take_along_axis(distances, taken, axis=1)
    order = np.argsort(values, axis=1, kind="stable")  # by distance, ties by column
    nearest = np.take_along_axis(taken, order, axis=1)
    kth = np.take_along_axis(values, order[:, -1:], axis=1)
    tied = np.flatnonzero(np.count_nonzero(distances <= kth, axis=1) > neighbors)
    for row in tied:
        nearest[row] = np.argsort(distances[row], kind="stable")[:neighbors]
    return nearest.astype(np.int32)


def _cosine_distances(data: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(data, axis=1, keepdims=True)
    unit = data / np.where(norms > 0, norms, 1.0)
    distances = 1.0 - unit @ unit.T
    np.clip(distances, 0.0, 2.0, out=distances)
    np.fill_diagonal(distances, 0.0)
    return distances


def _soft_gmm_groups(
    reduced: np.ndarray, limit: int, threshold: float, seed: int, pool: Executor | None = None
) -> list[list[int]]:
    """Fit mixtures of 1..limit components, keep the lowest BIC, and return soft-membership groups."""
    model = _best_mixture_by_bic(reduced, limit, seed, pool)
    probabilities = model.predict_proba(reduced)
    if not np.all(np.isfinite(probabilities)):
        raise _ClusteringFailed("mixture posteriors are not finite")
    membership = probabilities > threshold
    membership[np.arange(len(reduced)), probabilities.argmax(axis=1)] = True  # nobody is orphaned
    groups = [np.flatnonzero(membership[:, k]).tolist() for k in range(membership.shape[1])]
    return [g for g in groups if g]


def _best_mixture_by_bic(reduced: np.ndarray, limit: int, seed: int, pool: Executor | None = None) -> Mixture:
    """The lowest-BIC mixture of 1..limit components, scanning up until BIC has risen `BIC_RISES` times in
    a row or `BIC_PATIENCE` counts in a row have not improved on the lowest. With a pool, the next count
    is fitted while this one is (numpy's large array steps release the GIL); the choice is the same, at
    the price of one fit past the stop."""
    best_model, best_bic, since_best, rises, previous = None, math.inf, 0, 0, math.inf
    with contextlib.closing(_mixture_fits(reduced, limit, seed, pool)) as fits:
        for components in range(1, limit + 1):
            checkpoint()
            try:  # numpy's warnings on a degenerate fit are ignored (`_quiet`): its BIC or error decides
                model, bic = next(fits)
            except (ValueError, np.linalg.LinAlgError, FloatingPointError) as exc:
                log.debug("GMM with %d components failed: %s", components, exc)
                break
            if not math.isfinite(bic):
                break
            if bic < best_bic:
                best_model, best_bic, since_best = model, bic, 0
            else:
                since_best += 1
            rises, previous = (rises + 1 if bic > previous else 0), bic
            if rises >= BIC_RISES or since_best >= BIC_PATIENCE:
                break
    if best_model is None:
        raise _ClusteringFailed("no Gaussian mixture could be fitted")
    return best_model


def _fit_with_bic(reduced: np.ndarray, components: int, seed: int) -> tuple[Mixture, float]:
    model = fit_mixture(reduced, components, seed=seed)
    return model, model.bic_of_fit(reduced)


def _mixture_fits(
    reduced: np.ndarray, limit: int, seed: int, pool: Executor | None
) -> Iterator[tuple[Mixture, float]]:
    """The fits of 1..limit components and their BIC, in order; with a pool, one count ahead."""
    if pool is None:
        for components in range(1, limit + 1):
            yield _fit_with_bic(reduced, components, seed)
        return
    ahead = pool.submit(_fit_with_bic, reduced, 1, seed)
    try:
        for components in range(1, limit + 1):
            current = ahead
            if components < limit:
                ahead = pool.submit(_fit_with_bic, reduced, components + 1, seed)
            yield current.result()
    finally:
        ahead.cancel()  # the scan stopped: the count beyond it is not needed


def _canonical(clusters: list[list[int]]) -> list[list[int]]:
    """Sorted, de-duplicated clusters ordered by smallest member (then by the rest) for determinism."""
    unique = {tuple(sorted(set(c))) for c in clusters if c}
    return [list(c) for c in sorted(unique)]
