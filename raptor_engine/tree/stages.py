"""Where an ingest's time goes, by build stage, from the progress reports the engine already emits.

Every ingest records it (`IngestResult.stage_seconds`, shown by `raptor ingest --json`), so a
benchmark can read the stages of a real `raptor ingest` process, not only of an in-process run.
"""

from __future__ import annotations

import time
from typing import Any


class StageClock:
    """Where an ingest's time goes, from its progress reports: each interval between two reports
    is charged to the stage that opened it (the interval after "chunk" is the leaves' embedding)."""

    CHARGE = {"load": "load+chunk", "chunk": "embed"}

    def __init__(self) -> None:
        self.marks: list[tuple[float, str]] = []
        self._last: tuple[str, int] | None = None

    def __call__(self, event: Any) -> None:
        key = (event.stage, event.layer)
        if event.stage == "summarise" and event.done == event.total and event.total:
            key = ("other", event.layer)  # summarised and embedded; what follows is bookkeeping
        if key != self._last:
            self._last = key
            self.marks.append((time.perf_counter(), self.CHARGE.get(key[0], key[0])))

    def seconds(self, finished: float) -> dict[str, float]:
        totals: dict[str, float] = {}
        ends = [t for t, _ in self.marks[1:]] + [finished]
        for (started, stage), ended in zip(self.marks, ends, strict=True):
            totals[stage] = totals.get(stage, 0.0) + ended - started
        return {stage: round(value, 3) for stage, value in totals.items()}
