"""What a /kb sync of one new message costs with message rebuilds on a Dask worker and in the bot's process.

Two engines hold the same channel history (`--messages` messages of one day, so the day's last part holds
tens of them); each round adds one new message to both, in alternating order: one engine builds in its
own threads (no cluster: the CLI's path), the other on the embedded LocalCluster of one worker, as the bot
does. Printed per path: the median and worst seconds of `Engine.add_messages` and the worst event-loop lag
meanwhile (a coroutine sleeping 10 ms at a time). Then the same for one import batch of `--batch` new
messages (bot/messages.py's IMPORT_BATCH is 500), to show where the round trip stops mattering.

Run: `python -m raptor_tools.benchmarks.message_sync [--messages 120] [--rounds 5] [--batch 500] [--nice 10]`.
Timings depend on the machine and its load: compare the two paths of one run only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_ROOT = Path(__file__).resolve().parents[2]  # the checkout, for `python -m` from anywhere
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from raptor_engine.config import Settings  # noqa: E402
from raptor_engine.engine import Engine  # noqa: E402
from raptor_engine.ingest.messages import ChatMessage, MessagePlace  # noqa: E402
from raptor_engine.workers import BuildCluster, version_resource  # noqa: E402

CHANNEL = MessagePlace(400, "general")
START = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
TOPICS = [
    "the lighthouse lamp needs new wicks before the winter storms",
    "the harbour ferry leaves at seven from the north pier",
    "the bakery on Mill Street sells rye bread on Thursdays",
    "the choir rehearses hymns in the chapel every Tuesday evening",
    "the allotment committee wants compost bins beside the shed",
    "the school library lends telescopes for the meteor shower",
]
SAMPLE_S = 0.010


def chat(index: int, day: int = 0) -> ChatMessage:
    """Message `index` of day `day`: a sentence or two on a rotating topic, a minute after the one before."""
    moment = START + timedelta(days=day, minutes=index)
    message_id = 1_000_000 * (day + 1) + index
    text = f"Message {index}: {TOPICS[index % len(TOPICS)]}, and someone asks who will see to it this week."
    return ChatMessage(
        message_id, CHANNEL.channel_id, 100 + index % 4, f"member{index % 4}",
        moment.isoformat(timespec="seconds").replace("+00:00", "Z"),
        f"https://discord.com/channels/300/400/{message_id}", text,
    )  # fmt: skip


async def timed(step: Awaitable[Any]) -> tuple[float, float]:
    """Seconds `step` took, and the worst lateness of a 10 ms sleep on this loop meanwhile."""
    worst = 0.0
    done = False

    async def sample() -> None:
        nonlocal worst
        while not done:
            asked = time.perf_counter()
            await asyncio.sleep(SAMPLE_S)
            worst = max(worst, time.perf_counter() - asked - SAMPLE_S)

    sampler = asyncio.ensure_future(sample())
    started = time.perf_counter()
    try:
        await step
    finally:
        seconds = time.perf_counter() - started
        done = True
        await sampler
    return seconds, worst


def line(label: str, runs: list[tuple[float, float]]) -> str:
    seconds, lags = [s for s, _ in runs], [1000 * lag for _, lag in runs]
    return (
        f"  {label:<22} median {statistics.median(seconds):6.2f} s  worst {max(seconds):6.2f} s  "
        f"loop lag: median of each run's worst {statistics.median(lags):4.0f} ms, worst {max(lags):4.0f} ms"
    )


async def round_trip(cluster: BuildCluster, rounds: int) -> float:
    """The median seconds of an empty task's round trip to a build worker (what any rebuild pays on top)."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await cluster.client.submit(len, [], pure=False, resources={version_resource(): 1})
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def run(messages: int, rounds: int, batch: int, nice: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        here = Engine(Settings(data_dir=Path(scratch) / "here", build_workers=1))
        there_settings = Settings(data_dir=Path(scratch) / "there", build_workers=1, build_worker_nice=nice)
        there = Engine(there_settings, embedder=here.embedder)
        here.warm()
        there.cluster = await BuildCluster.start(there.settings)
        await there.cluster.client.wait_for_workers(1)
        engines = {"in the bot's process": here, "on a Dask worker": there}
        try:
            history = [chat(i) for i in range(messages)]
            for engine in engines.values():
                await engine.add_messages("kb", CHANNEL, history)
            parts = [d.name for d in here.documents("kb")]
            print(f"{messages} messages held in {len(parts)} document(s); one new message a round, {rounds} rounds")
            runs: dict[str, list[tuple[float, float]]] = {label: [] for label in engines}
            for r in range(rounds):
                order = list(engines) if r % 2 == 0 else list(reversed(engines))
                for label in order:
                    runs[label].append(await timed(engines[label].add_messages("kb", CHANNEL, [chat(messages + r)])))
            for label, results in runs.items():
                print(line(label, results))
            print(f"  an empty task's round trip to the worker: median {1000 * await round_trip(there.cluster, rounds):.0f} ms")
            print(f"one import batch of {batch} new messages (a new day)")
            for label, engine in engines.items():
                new = [chat(i, day=1) for i in range(batch)]
                print(line(label, [await timed(engine.add_messages("kb", CHANNEL, new))]))
        finally:
            await there.cluster.close()
            for engine in engines.values():
                engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=120, help="messages held before the rounds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=500, help="new messages of the import batch")
    parser.add_argument(
        "--nice", type=int, default=Settings().build_worker_nice, help="the worker's niceness (RAPTOR_BUILD_WORKER_NICE)"
    )
    args = parser.parse_args()
    asyncio.run(run(args.messages, args.rounds, args.batch, args.nice))


if __name__ == "__main__":
    main()
