"""Several processes writing one data directory: every upload lands.

Each commit checks the knowledge base's version (store.py); a process whose build read the tops of an
older version must redo the cross-document layer. With ten `raptor ingest` processes at once, retries
kept losing to each other and refused legitimate files. So writes take turns across processes: an OS
file lock per knowledge base (filelock) under the data directory, held by an upload from before its
build (parse, chunk, embed, summaries) to its commit. Two large uploads into one knowledge base built
side by side on a small machine both passed the build deadline, so neither landed; taking turns, each
builds at full speed, and the wait for the turn is bounded by RAPTOR_WRITER_WAIT, not by the build's
deadline. Different knowledge bases still build side by side; within one process the engine's asyncio
lock already orders a knowledge base's writers.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import filelock

from ..errors import RaptorError

log = logging.getLogger(__name__)


class WriterGate:
    """`async with` scope in which `await enter()` waits (in a thread) for this knowledge base's file
    lock; `leave()` or the scope's end gives it back. Entering twice holds it once. `waiting`, when
    given, is called once if the lock is held elsewhere, before the wait (to say why nothing moves)."""

    def __init__(self, lock_dir: Path, kb: str, wait_s: float):
        lock_dir.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(kb.encode("utf-8")).hexdigest()[:24]
        # thread_local=False: acquired in a worker thread, released from the event loop's thread
        self._lock = filelock.FileLock(lock_dir / f"{name}.lock", thread_local=False)
        self._wait_s = wait_s
        self._held = False

    async def enter(self, waiting: Callable[[], None] | None = None, busy: str | None = None) -> None:
        """Take the turn; `busy` is the sentence to refuse with after the wait (an upload's, by default)."""
        if self._held:
            return
        try:
            if not self._try_now():
                if waiting is not None:
                    waiting()
                await asyncio.to_thread(self._lock.acquire, timeout=self._wait_s)
        except filelock.Timeout:
            raise RaptorError(
                busy
                or f"Nothing was stored: other uploads kept this knowledge base busy for {self._wait_s:g} "
                "seconds; try again."
            ) from None
        self._held = True

    def _try_now(self) -> bool:
        """Take the lock if it is free this instant (no thread, no wait)."""
        try:
            self._lock.acquire(timeout=0)
        except filelock.Timeout:
            return False
        self._held = True
        return True

    def leave(self) -> None:
        if self._held:
            self._lock.release()
            self._held = False

    async def __aenter__(self) -> WriterGate:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.leave()
