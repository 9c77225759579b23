"""The bound on one upload's whole build, parse through summaries: a deadline and a memory ceiling.

A build runs in worker threads (the CLI and the bot) or on another process (a Dask worker), and neither
can be stopped from outside without leaving locks and half-made state behind. So the build stops
itself: `BuildBudget.active()` makes the budget the current one (a context variable, which
`asyncio.to_thread` and tasks carry into the threads and tasks they start), and the build's steps call
`checkpoint()` at fine grain: every 4,096 sentences split or texts counted while chunking, every
tokenizer slice of 64 texts, every embedding batch (about 1,000 tokens), every UMAP + mixture fit,
every summary. Past the deadline, or once the memory watchdog saw the process grow past the ceiling,
the next checkpoint raises `BuildLimitError`, whose message is the one sentence the user sees; nothing
has been stored by then (the store is written after the summaries). Every step between checkpoints is
linear in its input (issue 22), so none can run on for long. `bound()` also ends the awaiting side at
the deadline itself (an LLM request that hangs), while the thread it leaves stops at its next checkpoint.

The memory ceiling is on what the process grows by while the budget is active (its resident memory
then, less its resident memory when the build began): the model and the indices held before are not
the upload's doing. Builds running at once in one process share that measure.

A budget is picklable (name, limits and the wall-clock deadline), so a build sent to another process
keeps its limits; it activates it there with `active()`. A build queued on a Dask cluster behind
others has not started: the engine's side `hold()`s its clock when it submits the task, the worker
calls `restart()` when the task begins, and the engine's side restarts its copy when the build's
first stage is reported (each time a worker begins it) (`bound()` reads the deadline again every second). The deadline bounds
a build's work, not its wait for a worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import threading
import time
from collections.abc import Awaitable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..errors import LimitError

log = logging.getLogger(__name__)

T = TypeVar("T")

POLL_S = 1.0  # how often `bound()` reads the deadline again (a held or restarted clock moves it)
WATCH_INTERVAL_S = 0.05  # how often the memory watchdog reads the process's resident memory
CHECK_EVERY = 4096  # items of a long loop (sentences, texts) between two checkpoints

_ACTIVE: contextvars.ContextVar[BuildBudget | None] = contextvars.ContextVar("raptor_build_budget", default=None)


NOT_ADDED = " was not added: "  # between the file's name and the reason, in both sentences


class BuildLimitError(LimitError):
    """A build passed its deadline or its memory ceiling; nothing of it was stored."""

    @property
    def reason(self) -> str:
        """The sentence without the file's name in front ("building it took longer than..."), for a
        line that names the file already."""
        return str(self).partition(NOT_ADDED)[2] or str(self)


def current_rss_mb() -> float | None:
    """This process's resident memory now, in MB (None where the system does not say: no ceiling then)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil  # not a dependency; present with Dask
    except ImportError:
        return None
    return psutil.Process().memory_info().rss / (1024 * 1024)


class BuildBudget:
    """One build's deadline (`seconds` from creation; 0: none) and memory ceiling (`memory_mb`; 0: none)."""

    def __init__(self, name: str, *, seconds: float, memory_mb: int) -> None:
        self.name = name
        self.seconds = seconds
        self.memory_mb = memory_mb
        self.deadline = time.time() + seconds if seconds > 0 else None  # wall clock: valid in any process
        self.tripped: str | None = None  # the sentence, once a limit was passed
        self.peak_growth_mb = 0.0
        self._baseline_mb: float | None = None
        self._stop: threading.Event | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_baseline_mb=None, _stop=None)  # a watchdog belongs to the process that runs it
        return state

    # -- the sentences ------------------------------------------------------------------------

    def deadline_sentence(self) -> str:
        return (
            f"{self.name}{NOT_ADDED}building it took longer than the {self.seconds:g} s allowed for "
            "one upload; split it into smaller files."
        )

    def memory_sentence(self) -> str:
        return (
            f"{self.name}{NOT_ADDED}building it needed more than the {self.memory_mb:,} MB of memory "
            "allowed for one upload; split it into smaller files."
        )

    # -- checks -------------------------------------------------------------------------------

    def remaining(self) -> float:
        """Seconds left before the deadline (infinite without one)."""
        return float("inf") if self.deadline is None else self.deadline - time.time()

    def check(self) -> None:
        """Raise BuildLimitError once the deadline has passed or the memory ceiling was crossed."""
        if self.tripped is None and self.deadline is not None and time.time() > self.deadline:
            log.warning("%s: the build passed its %g s deadline", self.name, self.seconds)
            self.tripped = self.deadline_sentence()
        if self.tripped is not None:
            raise BuildLimitError(self.tripped)

    def expire(self) -> BuildLimitError:
        """The deadline's error, the budget tripped by it: a step whose own time limit this budget cut
        short (the parse child's) failed at the deadline, so the user gets the budget's sentence."""
        self.tripped = self.tripped or self.deadline_sentence()
        return BuildLimitError(self.tripped)

    def hold(self) -> None:
        """Stop the clock until `restart()`: the build has not begun (it waits for a worker)."""
        if self.seconds > 0 and self.tripped is None:
            self.deadline = None

    def restart(self, grace: float = 0.0) -> None:
        """Start the deadline again from now: the build begins only now (it waited for a worker). `grace`
        moves it later still: the engine's copy of a build running elsewhere, which checks the deadline
        itself and says so, gives it that long to, before saying it instead."""
        if self.seconds > 0 and self.tripped is None:
            self.deadline = time.time() + self.seconds + grace

    async def bound(self, step: Awaitable[T]) -> T:
        """Await `step`, but no later than the deadline, read again every POLL_S (`hold()` and
        `restart()` move it); past it, `step` is cancelled and the sentence raised."""
        try:
            self.check()
        except BuildLimitError:
            if asyncio.iscoroutine(step):
                step.close()  # never started: say so to the interpreter rather than warn
            raise
        if self.seconds <= 0:
            return await step
        task = asyncio.ensure_future(step)
        try:
            while not task.done() and self.remaining() > 0:
                await asyncio.wait({task}, timeout=min(self.remaining(), POLL_S))
        finally:
            expired = not task.done()
            if expired:  # past the deadline, or the caller was cancelled: stop the step either way
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if expired:
            self.tripped = self.tripped or self.deadline_sentence()
            raise BuildLimitError(self.tripped)
        return task.result()

    # -- activation and the memory watchdog ---------------------------------------------------------

    @contextmanager
    def active(self) -> Iterator[BuildBudget]:
        """Make this the budget `checkpoint()` checks (here and in the threads and tasks started inside),
        and watch the process's memory meanwhile."""
        token = _ACTIVE.set(self)
        watchdog = self._start_watchdog()
        try:
            yield self
        finally:
            if watchdog is not None and self._stop is not None:
                self._stop.set()
                watchdog.join()
            _ACTIVE.reset(token)

    def _start_watchdog(self) -> threading.Thread | None:
        if self.memory_mb <= 0:
            return None
        self._baseline_mb = current_rss_mb()
        if self._baseline_mb is None:
            log.warning("resident memory is unknown on this system: builds have no memory ceiling")
            return None
        self._stop = threading.Event()
        watchdog = threading.Thread(target=self._watch, args=(self._stop,), name="build-memory", daemon=True)
        watchdog.start()
        return watchdog

    def _watch(self, stop: threading.Event) -> None:
        while not stop.wait(WATCH_INTERVAL_S):
            if self.sample_memory():
                return

    def sample_memory(self) -> bool:
        """Read the process's memory once; True (and the budget tripped) when past the ceiling."""
        now = current_rss_mb()
        if now is None or self._baseline_mb is None:
            return False
        growth = now - self._baseline_mb
        self.peak_growth_mb = max(self.peak_growth_mb, growth)
        if growth > self.memory_mb and self.tripped is None:
            log.warning("%s: the build grew its process by %.0f MB, over %d MB", self.name, growth, self.memory_mb)
            self.tripped = self.memory_sentence()
        return self.tripped is not None


def current_budget() -> BuildBudget | None:
    """The budget of the build running in this context, if any."""
    return _ACTIVE.get()


def checkpoint() -> None:
    """Stop the current build here if it is past its deadline or memory ceiling (no-op outside a build)."""
    budget = _ACTIVE.get()
    if budget is not None:
        budget.check()


def checked(items: Iterable[T], every: int = CHECK_EVERY) -> Iterator[T]:
    """`items`, with a checkpoint before the first and then every `every` of them: for long loops."""
    for number, item in enumerate(items):
        if number % every == 0:
            checkpoint()
        yield item
