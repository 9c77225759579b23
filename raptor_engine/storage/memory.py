"""The memory budget shared by open spaces and loaded indices (`RAPTOR_INDEX_MEMORY_MB`).

Its own module so that both `spaces` (open SQLite files) and `index` (loaded hnswlib indices) can
count against it without importing each other.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the C library has none (musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> None:
    """Hand the memory of evicted indices back to the operating system.

    glibc keeps freed blocks of the heap for reuse rather than unmapping them; after thousands of
    loads and evictions of indices of different sizes the process held the budget plus ~40%
    (`raptor bench --many-kbs`). `malloc_trim` returns every free page; it costs well under a
    millisecond, against the milliseconds of the load that caused the eviction.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class MemoryBudget:
    """Entries with a size in bytes, least recently used first; admitting one past the budget evicts
    the oldest entries that are not pinned (their `evict` callback closes or drops them).

    `limit_bytes` 0 means no budget: nothing is evicted (the comparison run of the benchmark).
    Callbacks run outside the budget's lock, so an eviction never waits on a load elsewhere.
    """

    def __init__(self, limit_bytes: int):
        self.limit = limit_bytes
        self._entries: OrderedDict[Hashable, tuple[int, Callable[[], None], Callable[[], bool]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()
        self.used = 0
        self.peak = 0
        self.evictions = 0
        self.admitted = 0  # entries opened or loaded (not re-sized): the benchmark's cold questions

    def admit(
        self,
        key: Hashable,
        size: int,
        evict: Callable[[], None],
        pinned: Callable[[], bool] = lambda: False,
    ) -> None:
        """Record (or re-size) `key` as the most recently used entry, then evict down to the budget."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.used -= old[0]
            else:
                self.admitted += 1
            self._entries[key] = (size, evict, pinned)
            self.used += size
            self.peak = max(self.peak, self.used)
            victims = self._victims(keep=key)
        for evict_one in victims:
            evict_one()
        if victims:
            release_freed_memory()

    def _victims(self, keep: Hashable) -> list[Callable[[], None]]:
        if not self.limit or self.used <= self.limit:
            return []
        victims = []
        for key in list(self._entries):
            if self.used <= self.limit:
                break
            size, evict, pinned = self._entries[key]
            if key == keep or pinned():
                continue
            del self._entries[key]
            self.used -= size
            self.evictions += 1
            victims.append(evict)
        return victims

    def touch(self, key: Hashable) -> None:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)

    def forget(self, key: Hashable) -> None:
        """Stop counting `key` (it was closed or deleted by its owner)."""
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is not None:
                self.used -= entry[0]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries
