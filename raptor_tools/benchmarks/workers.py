"""Builds on Dask workers (`raptor bench --workers`): what moving builds off the bot's process buys.

- the bot's worst event-loop lag during a ~100k-token build, in-process vs on one worker (loop_lag.py);
- throughput of 8 uploads of ~25k tokens (8 channels, all submitted at once) with 1 and with 2
  single-threaded process workers, and the question latency (p50 / p99) of an already-built knowledge base
  asked every 0.2 s meanwhile;
- the time from a 3k-token upload to its first answer, in-process vs through the cluster.

Model loading and UMAP's compilation are outside every timing (the engine is warmed, workers load the
model when they join). The machine's load average is printed beside every figure.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from raptor_engine.config import Settings
from raptor_tools import samples
from raptor_tools.benchmarks.llm_concurrency import topic_document


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


async def _ask_meanwhile(engine: Any, stop: asyncio.Event, latencies: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await engine.ask("small", "Who kept the light in 1887?")
        latencies.append(time.perf_counter() - started)
        try:
            await asyncio.wait_for(stop.wait(), 0.2)
        except TimeoutError:
            pass


async def _engine(scratch: str, workers: int, **settings: Any) -> Any:
    from raptor_engine.engine import Engine

    engine = Engine(Settings(data_dir=Path(scratch), build_workers=workers, **settings))
    await asyncio.to_thread(engine.warm)
    if workers:
        from raptor_engine.workers import BuildCluster

        engine.cluster = await BuildCluster.start(engine.settings)
    return engine


async def _close(engine: Any) -> None:
    if engine.cluster is not None:
        await engine.cluster.close()
    engine.close()


async def throughput(workers: int, uploads: int, tokens: int, **settings: Any) -> dict[str, Any]:
    """`uploads` documents of ~`tokens` into as many knowledge bases at once; questions asked meanwhile."""
    with tempfile.TemporaryDirectory() as scratch:
        engine = await _engine(scratch, workers, **settings)
        await engine.ingest("small", "lighthouse_keepers.md", samples.sample().read_bytes())
        data = topic_document(tokens).encode()
        stop, latencies = asyncio.Event(), []
        asking = asyncio.create_task(_ask_meanwhile(engine, stop, latencies))
        load_before = load_average()
        started = time.perf_counter()
        results = await asyncio.gather(*(engine.ingest(f"kb{i}", "doc.md", data) for i in range(uploads)))
        seconds = time.perf_counter() - started
        stop.set()
        await asyncio.wait_for(asking, 60)
        await _close(engine)
    return {
        "workers": workers,
        "uploads": uploads,
        "tokens_each": results[0].document.tokens,
        "seconds": seconds,
        "uploads_per_minute": uploads * 60 / seconds,
        "questions": len(latencies),
        "question_p50_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "question_p99_ms": percentile(latencies, 0.99) * 1000,
        "load_average": (load_before, load_average()),
    }


async def first_answer(workers: int, tokens: int) -> dict[str, Any]:
    """Seconds from handing a ~`tokens` upload to the engine to its first answer."""
    with tempfile.TemporaryDirectory() as scratch:
        engine = await _engine(scratch, workers)
        data = topic_document(tokens, seed=11).encode()
        started = time.perf_counter()
        await engine.ingest("kb", "doc.md", data)
        await engine.ask("kb", "What is this document about?")
        seconds = time.perf_counter() - started
        await _close(engine)
    return {"workers": workers, "seconds": seconds, "load_average": load_average()}


def measure(
    *, lag_tokens: int = 100_000, uploads: int = 8, upload_tokens: int = 25_000, small_tokens: int = 3_000,
    say: Any = print,
) -> dict[str, Any]:  # fmt: skip
    from raptor_tools.benchmarks.loop_lag import measure as loop_lag

    report: dict[str, Any] = {"lag": [], "throughput": [], "first_answer": []}
    for workers in (0, 1):
        figures = asyncio.run(loop_lag(lag_tokens, workers=workers))
        figures["load_average"] = load_average()
        report["lag"].append(figures)
        say(
            f"{lag_tokens:,}-token build {'in-process' if not workers else 'on 1 worker'}: worst event-loop lag "
            f"{figures['worst_ms']:.1f} ms, p99 {figures['p99_ms']:.1f} ms, {figures['ingest_seconds']:.1f} s "
            f"(load {figures['load_average']:.1f})"
        )
    for workers in (1, 2):
        figures = asyncio.run(throughput(workers, uploads, upload_tokens))
        report["throughput"].append(figures)
        say(
            f"{uploads} x {figures['tokens_each']:,} tokens on {workers} worker(s): {figures['seconds']:.1f} s "
            f"({figures['uploads_per_minute']:.2f}/min); questions meanwhile p50 {figures['question_p50_ms']:.0f} ms, "
            f"p99 {figures['question_p99_ms']:.0f} ms over {figures['questions']} (load {figures['load_average'][0]:.1f}"
            f" -> {figures['load_average'][1]:.1f})"
        )
    one, two = report["throughput"]
    report["speedup_2_workers"] = one["seconds"] / two["seconds"]
    say(f"2 workers vs 1: {report['speedup_2_workers']:.2f}x")
    for workers in (0, 1):
        figures = asyncio.run(first_answer(workers, small_tokens))
        report["first_answer"].append(figures)
        say(
            f"{small_tokens:,}-token upload to first answer {'in-process' if not workers else 'on 1 worker'}: "
            f"{figures['seconds']:.2f} s (load {figures['load_average']:.1f})"
        )
    return report
