"""Questions per user per minute: a sliding-window limit (settings.questions_per_minute).

A cooldown between two questions stops bursts; this bounds the total a user may ask in any
60-second window, which is what an LLM bill cares about. The bot asks `retry_after(user)` before
each question; it lives here, not in bot/, so the CLI or any other face can share it.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Hashable

WINDOW_SECONDS = 60.0
MAX_TRACKED_USERS = 10_000


class QuestionLimiter:
    """At most `per_window` questions per user in any `window` seconds; `per_window <= 0` means no limit."""

    def __init__(
        self,
        per_window: int,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.per_window = per_window
        self.window = window
        self.clock = clock
        self._asked: dict[Hashable, deque[float]] = {}

    def retry_after(self, user: Hashable, count: int = 1) -> float:
        """0.0 when `user` may do `count` more now (they are counted); else seconds until they may (the
        whole window for more than the limit at once, which never fits)."""
        if self.per_window <= 0:
            return 0.0
        now = self.clock()
        times = self._recent(user, now)
        if count > self.per_window:
            return self.window
        if len(times) + count > self.per_window:
            return max(times[len(times) + count - self.per_window - 1] + self.window - now, 0.001)
        times.extend([now] * count)
        self._forget_idle(now)
        return 0.0

    def remaining(self, user: Hashable) -> int:
        """Questions `user` may still ask in the current window (without counting one)."""
        if self.per_window <= 0:
            return math.inf  # type: ignore[return-value]
        return self.per_window - len(self._recent(user, self.clock()))

    def _recent(self, user: Hashable, now: float) -> deque[float]:
        times = self._asked.setdefault(user, deque())
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def _forget_idle(self, now: float) -> None:
        """Drop users with nothing in the window, so memory stays bounded on a busy server."""
        if len(self._asked) <= MAX_TRACKED_USERS:
            return
        horizon = now - self.window
        self._asked = {u: t for u, t in self._asked.items() if t and t[-1] > horizon}

    def message(self, retry_after: float) -> str:
        """The one sentence a user sees when refused."""
        wait = max(1, math.ceil(retry_after))
        return (
            f"You have asked {self.per_window} questions in the last minute, the most allowed; "
            f"try again in {wait} s."
        )


FILE_WINDOW_SECONDS = 3600.0


class FileLimiter(QuestionLimiter):
    """Files one member may have added per hour (settings.files_per_hour), whichever way (a slash command,
    a message's menu, posting in a channel with auto-ingest): each file is a build, and builds share a few
    slots across every server, so one member posting small files without end held them from all others."""

    def __init__(self, per_window: int, clock: Callable[[], float] = time.monotonic):
        super().__init__(per_window, FILE_WINDOW_SECONDS, clock)

    def message(self, retry_after: float) -> str:
        wait = max(1, math.ceil(retry_after / 60))
        return (
            f"You have added {self.per_window} files in the last hour, the most one member may; "
            f"try again in {wait} min."
        )
