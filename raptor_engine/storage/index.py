"""One hnswlib index per knowledge base over all layers: the collapsed tree's search structure.

Derived data: each saved index records the knowledge base's version, and one that is missing,
stale or unreadable is rebuilt from SQLite. Labels are node ids (which never repeat). A node that left
SQLite is tombstoned with its vector zeroed, so no vector of removed text stays in the file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import random
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, KeysView, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import hnswlib
import numpy as np

from ..errors import RaptorError, storage_error
from .store import Store

if TYPE_CHECKING:
    from .memory import MemoryBudget

log = logging.getLogger(__name__)

M = 16
EF_CONSTRUCTION = 200
MAX_HNSW_M = 10_000  # the largest M a saved index may state: hnswlib's own cap
# What a loaded index holds beyond its vectors and level-0 links, measured (RSS) with hnswlib 0.8: a
# fixed 2.66 MiB per index (its 65,536 label-operation mutexes), and per element its label, lock and
# upper levels; plus each entry of the token-count table (an int64 id and an int32 count).
# A temporary index file untouched this long was left by a process that stopped mid-save (doctor removes it).
ABANDONED_WRITE_SECONDS = 3600
HNSW_INDEX_OVERHEAD = 2720 * 1024
HNSW_ELEMENT_OVERHEAD = 64
TOKEN_ENTRY_BYTES = 12
# `raptor doctor` compares this many of an index's vectors (at most) with SQLite's, each number within
# VECTOR_TOLERANCE (both are float32 unit vectors; hnswlib's normalising differs from numpy's by ~1e-7).
VECTOR_SAMPLE = 1024
VECTOR_TOLERANCE = 1e-5


# The start of an hnswlib (0.8) index file: offsetLevel0, max_elements, cur_element_count,
# size_data_per_element, label_offset, offsetData (size_t each), maxlevel (int), enterpoint_node (uint),
# maxM, maxM0, M (size_t), mult (double), ef_construction (size_t).
HNSW_HEADER = struct.Struct("<6QiI3QdQ")


def hnsw_file_problem(path: Path, dim: int, stored_dim: int, ids: int) -> str | None:
    """What makes a saved index unfit to load for vectors of `dim` numbers (its `.json` says), when the store's
    hold `stored_dim`; None when it fits. hnswlib takes the size a vector has from the caller, not from the file:
    a `.json` stating another size made it read, and on a removal write, past each element (a removal
    aborted the process: 'double free or corruption'). The index is derived, so any mismatch means rebuild."""
    if dim != stored_dim:
        return f"is for vectors of {dim} numbers, the store's hold {stored_dim}"
    size = path.stat().st_size
    if size < HNSW_HEADER.size:
        return "is shorter than its header"
    with path.open("rb") as handle:
        (offset0, most, count, per_element, label_at, data_at, _level, enter, max_m, max_m0, m, mult, _ef) = (
            HNSW_HEADER.unpack(handle.read(HNSW_HEADER.size))
        )
    shape = _graph_shape_problem(m, max_m, max_m0, mult)
    if shape:
        return shape
    links0 = max_m0 * 4 + 4  # hnswlib's size of an element's level-0 link list
    expected = {
        "its level-0 offset": (offset0, 0),
        "where its vectors start": (data_at, links0),
        "where its labels start": (label_at, links0 + dim * 4),
        "the size of an element": (per_element, links0 + dim * 4 + 8),
    }
    for what, (found, wanted) in expected.items():
        if found != wanted:
            return f"states {what} as {found}, not the {wanted} vectors of {dim} numbers take"
    if not ids <= count <= most or max_m > max_m0 or (count and enter >= count):
        return f"states {count} elements of at most {most} for {ids} nodes"
    if size < HNSW_HEADER.size + count * per_element + count * 4:
        return f"holds {size} bytes, fewer than its {count} elements take"
    return _links_problem(path, count, per_element, max_m, max_m0, _level, enter)


def _graph_shape_problem(m: int, max_m: int, max_m0: int, mult: float) -> str | None:
    """What in the graph's parameters is not what hnswlib's `init_index` makes of one M (maxM = M, maxM0 = 2M,
    mult = 1/ln M): hnswlib reads them back unchecked and adds the next node by them.
    Tried: M 0 killed the process adding a node (SIGSEGV); a mult of 1e300, -5 or NaN, or M 1000 over lists
    made for 16, made every add fail ('Not enough memory: addPoint failed to allocate linklist', 'Possible
    memory corruption'), so that knowledge base took no document and answered no question until rebuilt."""
    if not 2 <= m <= MAX_HNSW_M or max_m != m or max_m0 != 2 * m:
        return f"states M {m}, maxM {max_m} and maxM0 {max_m0}, which no index of one M has"
    if not math.isclose(mult, 1 / math.log(m), rel_tol=1e-9):
        return f"states a level factor {mult!r}, not the 1/ln {m} of an index of M {m}"
    return None


def _links_problem(path: Path, count: int, per_element: int, max_m: int, max_m0: int, top: int, enter: int) -> str | None:
    """What is wrong with the graph's links: hnswlib follows them unchecked, and a link list of a flipped byte
    (a neighbour past the last element, a count past the list) crashed the process searching it (SIGSEGV)."""
    if count == 0:
        return None
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    level0 = raw[HNSW_HEADER.size : HNSW_HEADER.size + count * per_element].reshape(count, per_element)
    links = level0[:, : (max_m0 + 1) * 4].copy().view(np.uint32)
    sizes = links[:, 0] & 0xFFFF
    if int(sizes.max()) > max_m0:
        return f"has a node with {int(sizes.max())} links where at most {max_m0} fit"
    used = np.arange(max_m0)[None, :] < sizes[:, None]
    if bool((links[:, 1:][used] >= count).any()):
        return "links a node to one it does not hold"
    levels = _upper_levels(raw, HNSW_HEADER.size + count * per_element, count, max_m)
    if isinstance(levels, str):
        return levels
    if top != levels[enter] or top != max(levels):
        return f"states {top} levels, its graph {max(levels)}"
    return None


_SIZE = struct.Struct("<I")


def _upper_levels(raw: np.ndarray, at: int, count: int, max_m: int) -> list[int] | str:
    """Each element's level, checking its upper link lists as hnswlib reads them (a size, then the lists).
    The sizes are walked with `struct` and the lists checked at once: a numpy slice per element cost three
    times hnswlib's own load (0.51 s of CPU for 100,000 nodes)."""
    per_level = (max_m + 1) * 4
    tail = raw[at:].tobytes()
    levels, blocks, pos = [], [], 0
    for _ in range(count):
        if pos + 4 > len(tail):
            return "ends inside its upper links"
        (size,) = _SIZE.unpack_from(tail, pos)
        pos += 4
        if size % per_level or pos + size > len(tail):
            return "has upper links that do not fit its file"
        if size:
            blocks.append((pos // 4, (pos + size) // 4))
        levels.append(size // per_level)
        pos += size
    if pos != len(tail):
        return "has bytes after its last element"
    if blocks:  # every size and list is whole uint32s from the tail's start, so it reads as one array
        words = np.frombuffer(tail, dtype=np.uint32)
        lists = np.concatenate([words[first:last] for first, last in blocks]).reshape(-1, max_m + 1)
        counts = lists[:, 0] & 0xFFFF
        if int(counts.max()) > max_m or bool((lists[:, 1:][np.arange(max_m)[None, :] < counts[:, None]] >= count).any()):
            return "links a node to one it does not hold"
    return levels


@contextlib.contextmanager
def writing(path: Path) -> Iterator[Path]:
    """A temporary path beside `path`, unique to this writer, renamed onto `path` when the block ends
    (removed if it raises). Its name starts with '.' and ends '.tmp': no reader mistakes it for an index."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _int_array(values: Iterable[int], dtype: type[np.integer]) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return values.astype(dtype, copy=False)
    return np.fromiter(values, dtype=dtype)


class NodeTokens(Mapping[int, int]):
    """Node id -> token count, as two sorted numpy arrays rather than a dict.

    An index keeps one of these for as long as it is loaded. A dict of 2,000 Python ints costs ~100
    bytes an entry scattered over the interpreter's small-object arenas, which stay mapped after the
    index is evicted when any other object shares them; two arrays are 12 bytes an entry in two
    blocks that go back to the allocator whole (see `memory.release_freed_memory`).
    """

    def __init__(self, ids: Iterable[int] = (), counts: Iterable[int] = ()):
        ids_array = _int_array(ids, np.int64)
        counts_array = _int_array(counts, np.int32)
        if len(counts_array) != len(ids_array):
            raise ValueError(f"{len(ids_array)} node ids but {len(counts_array)} token counts")
        order = np.argsort(ids_array, kind="stable")
        self._ids = ids_array[order]
        self._counts = counts_array[order]

    @classmethod
    def from_pairs(cls, pairs: Mapping[int, int]) -> NodeTokens:
        return cls(pairs.keys(), pairs.values())

    def _position(self, node_id: object) -> int:
        if not isinstance(node_id, (int, np.integer)) or not len(self._ids):
            return -1
        at = int(np.searchsorted(self._ids, node_id))
        return at if at < len(self._ids) and self._ids[at] == node_id else -1

    def __getitem__(self, node_id: int) -> int:
        at = self._position(node_id)
        if at < 0:
            raise KeyError(node_id)
        return int(self._counts[at])

    def __contains__(self, node_id: object) -> bool:
        return self._position(node_id) >= 0

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids.tolist())

    def __len__(self) -> int:
        return len(self._ids)

    def counts_of(self, node_ids: list[int]) -> dict[int, int]:
        """The counts of those of `node_ids` held here (one vectorised lookup for a search's hits)."""
        if not node_ids or not len(self._ids):
            return {}
        wanted = np.asarray(node_ids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._ids, wanted), len(self._ids) - 1)
        found = self._ids[at] == wanted
        return dict(zip(wanted[found].tolist(), self._counts[at[found]].tolist(), strict=True))

    def without(self, removed: Iterable[int]) -> NodeTokens:
        """A copy without the ids in `removed`."""
        keep = ~np.isin(self._ids, np.fromiter(removed, dtype=np.int64))
        return NodeTokens(self._ids[keep], self._counts[keep])

    def with_counts(self, added: Mapping[int, int]) -> NodeTokens:
        """A copy with `added` (id -> count) set, replacing counts of ids already held."""
        merged = dict(zip(self._ids.tolist(), self._counts.tolist(), strict=True))
        merged.update(added)
        return NodeTokens.from_pairs(merged)


class KBIndex:
    """An in-memory hnswlib index for one knowledge base, kept in step with SQLite.

    It also holds each node's token count: the collapsed tree decides which candidates can still fit
    from these, and reading them from SQLite took as long as the search itself at 100k nodes.
    """

    def __init__(self, index: hnswlib.Index | None, version: int, tokens: Mapping[int, int], dim: int):
        self.index = index
        self.version = version
        self.tokens = tokens if isinstance(tokens, NodeTokens) else NodeTokens.from_pairs(tokens)
        self.dim = dim

    @property
    def nbytes(self) -> int:
        """About what this index holds in memory: hnswlib's vectors and links, and the token counts."""
        if self.index is None:
            return len(self.tokens) * TOKEN_ENTRY_BYTES
        per_element = self.dim * 4 + (2 * M + 1) * 4 + HNSW_ELEMENT_OVERHEAD
        elements = self.index.get_max_elements() * per_element
        return HNSW_INDEX_OVERHEAD + elements + len(self.tokens) * TOKEN_ENTRY_BYTES

    @property
    def ids(self) -> KeysView[int]:
        return self.tokens.keys()

    def __len__(self) -> int:
        return len(self.tokens)

    def search(
        self, query: np.ndarray, k: int, ef: int, allowed: Callable[[int], bool] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, cosine similarity) of the k nearest nodes, best first. A query of another size than the
        index's vectors is refused (RaptorError): hnswlib reads and normalises `dim` numbers of whatever it is
        given, so a shorter query overruns its buffer and corrupts the process's memory (an imported store
        whose vectors were padded to 1,000 numbers aborted the first question, 'malloc(): invalid size')."""
        if self.index is None or not self.ids:
            return []
        if query.size != self.dim:
            raise RaptorError(
                f"This knowledge base's vectors have {self.dim} numbers but the embedding model makes {query.size}, "
                "so it cannot be searched; add its documents again, or set RAPTOR_EMBED_MODEL to the model that "
                "made them."
            )
        k = min(k, len(self.ids))
        self.index.set_ef(max(ef, k))
        try:
            labels, distances = self.index.knn_query(query.reshape(1, -1), k=k, filter=allowed)
        except RuntimeError:
            # hnswlib raises when a filter leaves fewer than k candidates; ask for what exists.
            if allowed is None:
                raise
            return self._filtered_exact_fallback(query, k, allowed)
        return [(int(label), 1.0 - float(dist)) for label, dist in zip(labels[0], distances[0], strict=True)]

    def _filtered_exact_fallback(
        self, query: np.ndarray, k: int, allowed: Callable[[int], bool]
    ) -> list[tuple[int, float]]:
        wanted = [i for i in self.ids if allowed(i)]
        if not wanted:
            return []
        vectors = np.asarray(self.index.get_items(wanted), dtype=np.float32)
        scores = vectors @ query.astype(np.float32)
        order = np.argsort(-scores)[:k]
        return [(int(wanted[i]), float(scores[i])) for i in order]


def _zero_and_delete(index: hnswlib.Index, node_ids: Iterable[int], dim: int) -> None:
    """Tombstone nodes that left SQLite, their vectors first overwritten with zeros: a tombstone keeps its
    vector in the saved file, and a vector of removed text (a deleted message) must not stay on disk."""
    labels = sorted(int(i) for i in node_ids)
    if not labels:
        return
    index.add_items(np.zeros((len(labels), dim), dtype=np.float32), labels, num_threads=1)
    for node_id in labels:
        index.mark_deleted(node_id)


def new_hnsw(ids: Iterable[int] | np.ndarray, matrix: np.ndarray) -> hnswlib.Index:
    """An index of `matrix`'s rows under `ids`, inserted in that order on one thread: the same ids and rows in
    the same order give the same graph (seeded), whoever builds it (`IndexManager.rebuild` or `adopt`)."""
    index = hnswlib.Index(space="cosine", dim=int(matrix.shape[1]))
    index.init_index(max_elements=len(matrix), ef_construction=EF_CONSTRUCTION, M=M, random_seed=1)
    index.add_items(matrix, np.asarray(list(ids), dtype=np.int64), num_threads=1)
    return index


def extend_hnsw(index: hnswlib.Index, ids: Iterable[int] | np.ndarray, matrix: np.ndarray) -> hnswlib.Index:
    """`index` (from `new_hnsw`) with `matrix`'s rows added under `ids`, in order on one thread: rows added in
    two steps give the graph `new_hnsw` of all of them in one gives (the same order, the same seeded levels)."""
    if len(matrix):
        index.resize_index(index.get_current_count() + len(matrix))
        index.add_items(matrix, np.asarray(list(ids), dtype=np.int64), num_threads=1)
    return index


class IndexManager:
    """Loads, saves, updates and rebuilds the per-knowledge-base indices under `index_dir`.

    When SQLite has moved on (a build, a removal, another process), the index is brought up to
    date by the difference of node ids, since stored nodes never change; an unreadable or
    mismatched file is rebuilt from SQLite.
    """

    def __init__(
        self, store: Store, index_dir: str | Path, *, budget: MemoryBudget | None = None, owner: str = ""
    ):
        self.store = store
        self.dir = Path(index_dir)
        self._cache: dict[int, KBIndex] = {}
        self._cache_lock = threading.Lock()  # held only to read or change `_cache`, never while loading
        self._kb_locks: dict[int, threading.RLock] = {}
        self.budget = budget
        self.owner = owner

    def _lock(self, kb_id: int) -> threading.RLock:
        """One lock per knowledge base: a load or rebuild makes no other knowledge base's question wait."""
        with self._cache_lock:
            return self._kb_locks.setdefault(kb_id, threading.RLock())

    def _remember(self, kb_id: int, built: KBIndex) -> None:
        """Cache `built` and count its bytes in the budget (which may evict older indices)."""
        with self._cache_lock:
            self._cache[kb_id] = built
        if self.budget is not None:
            self.budget.admit(("index", self.owner, kb_id), built.nbytes, lambda: self._evict(kb_id, built))

    def _evict(self, kb_id: int, built: KBIndex) -> None:
        with self._cache_lock:
            if self._cache.get(kb_id) is built:
                del self._cache[kb_id]

    def cached(self) -> int:
        """How many indices are in memory."""
        with self._cache_lock:
            return len(self._cache)

    def drop_all_cached(self) -> None:
        """Forget every loaded index (its space is being closed); files stay."""
        with self._cache_lock:
            ids = list(self._cache)
            self._cache.clear()
        if self.budget is not None:
            for kb_id in ids:
                self.budget.forget(("index", self.owner, kb_id))

    def abandoned_writes(self, *, remove: bool) -> list[str]:
        """Temporary files of `writing` that a killed process left (one each save it was in), removed when
        asked. Only those untouched for ABANDONED_WRITE_SECONDS: a live save renames its file in seconds."""
        found = []
        cutoff = time.time() - ABANDONED_WRITE_SECONDS
        for path in sorted(self.dir.glob(".*.tmp")) if self.dir.is_dir() else []:
            with contextlib.suppress(FileNotFoundError):  # another doctor, or the save itself, took it
                if path.stat().st_mtime > cutoff:
                    continue
                size = path.stat().st_size
                if remove:
                    path.unlink()
                found.append(f"an index file a stopped save left ({path.name}, {size:,} bytes)")
        return found

    def file_paths(self, kb_id: int) -> tuple[Path, Path]:
        """The saved index and its metadata."""
        return self._paths(kb_id)

    def _paths(self, kb_id: int) -> tuple[Path, Path]:
        return self.dir / f"kb-{kb_id}.hnsw", self.dir / f"kb-{kb_id}.json"

    def get(self, kb_id: int) -> KBIndex:
        """The index for a knowledge base at the store's current version."""
        with self._lock(kb_id):
            version = self.store.kb_version(kb_id)
            with self._cache_lock:
                current = self._cache.get(kb_id)
            if current is not None and current.index is not None and current.version == version:
                if self.budget is not None:
                    self.budget.touch(("index", self.owner, kb_id))
                return current
            if current is None or current.index is None:
                current = self._load(kb_id)
            if current is None:
                return self.rebuild(kb_id, unsaved_ok=True)
            if current.version != version:
                current = self._catch_up(kb_id, current, version)
            self._remember(kb_id, current)
            return current

    def _load(self, kb_id: int) -> KBIndex | None:
        bin_path, meta_path = self._paths(kb_id)
        if not bin_path.exists() or not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text())
            ids = [int(i) for i in meta["ids"]]
            dim = int(meta["dim"])
            problem = hnsw_file_problem(bin_path, dim, self.store.vector_size(kb_id), len(ids))
            if problem:
                log.warning("index of kb %s %s; rebuilding it from SQLite", kb_id, problem)
                return None
            index = hnswlib.Index(space="cosine", dim=dim)
            index.load_index(str(bin_path), max_elements=max(len(ids), 1))
            if not set(ids).issubset(index.get_ids_list()):
                log.warning("index of kb %s does not match its metadata; rebuilding", kb_id)
                return None
            if not meta.get("zeroed") and index.get_current_count() > len(ids):
                log.info("index of kb %s keeps vectors of removed nodes; rebuilding without them", kb_id)
                return None
            return KBIndex(index, int(meta["version"]), self._tokens_of(kb_id, ids, meta.get("tokens")), dim)
        except Exception:  # any unreadable file means: rebuild from SQLite
            log.warning("index of kb %s is unreadable; rebuilding", kb_id, exc_info=True)
            return None

    def _tokens_of(self, kb_id: int, ids: list[int], saved: object) -> NodeTokens:
        """The token counts saved beside the ids, or (a file from before they were saved) from SQLite."""
        if isinstance(saved, list) and len(saved) == len(ids):
            return NodeTokens(ids, (int(tokens) for tokens in saved))
        counts = self.store.token_counts(kb_id)
        return NodeTokens(ids, (counts.get(node_id, 0) for node_id in ids))

    def _catch_up(self, kb_id: int, current: KBIndex, version: int) -> KBIndex:
        """Add the nodes SQLite has and the index lacks; tombstone the ones SQLite no longer has."""
        stored = {int(i) for i in self.store.node_ids(kb_id)}
        added = sorted(stored - current.ids)
        removed = current.ids - stored
        index = current.index
        assert index is not None
        if len(removed) + len(added) > max(len(stored), 1) or len(stored) * 2 < index.get_current_count():
            return self.rebuild(kb_id, unsaved_ok=True)  # mostly new or mostly tombstones: start clean
        _zero_and_delete(index, removed, current.dim)
        if added:
            add_ids, matrix = self.store.embeddings(kb_id, ids=added)
            if matrix.shape[1] != current.dim:
                return self.rebuild(kb_id, unsaved_ok=True)
            need = index.get_current_count() + len(add_ids)
            if need > index.get_max_elements():
                index.resize_index(max(need, int(index.get_max_elements() * 1.5)))
            index.add_items(matrix, add_ids, num_threads=1)
        tokens = current.tokens.without(removed).with_counts(self.store.node_tokens(added))
        updated = KBIndex(index, version, tokens, current.dim)
        self._save(kb_id, updated, unsaved_ok=True)
        return updated

    def rebuild(self, kb_id: int, *, unsaved_ok: bool = False) -> KBIndex:
        """Build the index from SQLite, the source of truth, and save it (see `_save` for `unsaved_ok`)."""
        with self._lock(kb_id):
            version = self.store.kb_version(kb_id)
            ids, matrix = self.store.embeddings(kb_id)
            if len(ids) == 0:
                built = KBIndex(None, version, {}, 0)
            else:
                index = new_hnsw(ids, matrix)
                counts = self.store.token_counts(kb_id)
                built = KBIndex(
                    index,
                    version,
                    NodeTokens.from_pairs({int(i): counts.get(int(i), 0) for i in ids}),
                    int(matrix.shape[1]),
                )
            self._save(kb_id, built, unsaved_ok=unsaved_ok)
            self._remember(kb_id, built)
            return built

    def adopt(self, kb_id: int, ahead: hnswlib.Index, doc_id: int) -> KBIndex | None:
        """The index of a knowledge base whose first document was just stored, from `new_hnsw` of that
        document's nodes built while SQLite wrote them (under the ids the store was about to give them).

        Kept only if those are the ids the document's nodes got, first in the knowledge base; then the
        nodes stored after them (the cross-document layer's) are added as a catch-up would add them, so it
        is the index `rebuild` makes. Anything else (another writer took those ids first, the knowledge
        base held nodes already) gives None, and `get` builds it from SQLite as usual.
        """
        with self._lock(kb_id):
            version = self.store.kb_version(kb_id)
            with self._cache_lock:
                current = self._cache.get(kb_id)
            if current is not None and current.version == version:
                return current  # a question's `get` built it meanwhile
            labels = [int(i) for i in ahead.get_ids_list()]
            stored = sorted(int(i) for i in self.store.node_ids(kb_id))
            if sorted(labels) != self.store.document_node_ids(doc_id) or stored[: len(labels)] != sorted(labels):
                log.info("the index built beside the write of kb %s does not match its rows; rebuilding", kb_id)
                return None
            later = stored[len(labels) :]
            if later:
                add_ids, matrix = self.store.embeddings(kb_id, ids=later)
                extend_hnsw(ahead, add_ids, matrix)
            counts = self.store.token_counts(kb_id)
            built = KBIndex(ahead, version, NodeTokens.from_pairs({i: counts[i] for i in stored}), ahead.dim)
            self._save(kb_id, built, unsaved_ok=True)
            self._remember(kb_id, built)
            return built

    def _save(self, kb_id: int, built: KBIndex, *, unsaved_ok: bool = False) -> None:
        """Write the index, then its metadata, each atomically (a temporary file of this writer's own,
        then a rename): other processes (three `raptor doctor` at once, the bot) may save the same one.

        Where the files cannot be written (an indices folder of another user's, a full disk) the failure
        is a StorageError's one sentence; with `unsaved_ok` (a question or a write that only needs the
        index in memory) it is logged and the index serves from memory, since it is derived: a document
        committed to SQLite was stored, and a question can be answered."""
        try:
            self._write(kb_id, built)
        except OSError as exc:
            failure = storage_error(exc, str(self.dir))
            if failure is None:
                raise
            if not unsaved_ok:
                raise failure from exc
            log.warning("the index of knowledge base %s was not saved, so it serves from memory: %s", kb_id, failure)

    def _write(self, kb_id: int, built: KBIndex) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        bin_path, meta_path = self._paths(kb_id)
        if built.index is None:
            bin_path.unlink(missing_ok=True)
            meta_path.unlink(missing_ok=True)
            return
        ids = sorted(built.ids)
        meta = {
            "version": built.version,
            "dim": built.dim,
            "ids": ids,
            "tokens": [built.tokens[i] for i in ids],
            "zeroed": True,  # its removed nodes' vectors are zeros (`_zero_and_delete`)
        }
        with writing(bin_path) as tmp_bin:
            tmp_bin.open("wb").close()  # hnswlib says nothing when it cannot open a file: an OSError here does
            built.index.save_index(str(tmp_bin))
        with writing(meta_path) as tmp_meta:
            tmp_meta.write_text(json.dumps(meta))

    def drop(self, kb_id: int) -> None:
        with self._lock(kb_id):
            with self._cache_lock:
                self._cache.pop(kb_id, None)
            if self.budget is not None:
                self.budget.forget(("index", self.owner, kb_id))
            for path in self._paths(kb_id):
                path.unlink(missing_ok=True)

    def check(self, kb_id: int) -> list[str]:
        """Problems with the saved index of a knowledge base (empty when it holds exactly its nodes)."""
        expected = {int(i) for i in self.store.node_ids(kb_id)}
        if not expected:
            return []
        loaded = self._load(kb_id)
        if loaded is None:
            return [f"the index of knowledge base {kb_id} is missing or unreadable"]
        if loaded.version != self.store.kb_version(kb_id) or loaded.ids != expected:
            return [
                f"the index of knowledge base {kb_id} holds {len(loaded.ids)} nodes "
                f"(version {loaded.version}), the store {len(expected)} (version {self.store.kb_version(kb_id)})"
            ]
        differ, compared = self._vectors_differing(kb_id, loaded)
        if differ:
            return [
                f"the index of knowledge base {kb_id} holds vectors that are not the store's "
                f"({differ} of {compared} compared differ)"
            ]
        return []

    def _vectors_differing(self, kb_id: int, loaded: KBIndex) -> tuple[int, int]:
        """How many of a sample of the index's vectors differ from SQLite's (which the index is derived
        from), and how many were compared: the file check (`hnsw_file_problem`) reads links, not values,
        and an index whose vectors were changed loads and quietly ranks by them. Every vector of a small
        knowledge base, else VECTOR_SAMPLE drawn afresh each time (hnswlib's get_items costs ~40 us each)."""
        ids = sorted(loaded.ids)
        if loaded.index is None or not ids:
            return 0, 0
        if len(ids) > VECTOR_SAMPLE:
            ids = sorted(random.Random().sample(ids, VECTOR_SAMPLE))
        stored_ids, stored = self.store.embeddings(kb_id, ids=ids)
        held = np.asarray(loaded.index.get_items(stored_ids), dtype=np.float32)
        norms = np.linalg.norm(stored, axis=1, keepdims=True)
        expected = stored / np.where(norms > 0, norms, 1)  # the cosine index keeps unit vectors
        same = np.all(np.abs(held - expected) <= VECTOR_TOLERANCE, axis=1)
        return int((~same).sum()), len(stored_ids)
