"""Are questions bounded in time, and does the bot's loop keep running while one is answered?

Asks adversarial questions (pronouns, question-mark floods, names, long words) of 100, 1,000 and
2,000 characters through the bot's question path (`bot.answering.ask_engine` -> `Engine.ask`: small-talk
scan, follow-up rewrite, retrieval, extractive answer) with no history, after six turns of the same
kind (answers of ordinary length), and after six turns whose answers are 30 KB each (what the engine
API accepts). Each question's time is printed, and the worst event-loop stall while the questions ran,
measured as `loop_lag.py` does: a coroutine sleeps 10 ms at a time and records how late it wakes.
Two shapes at each length: a mix of the pieces below, and a pronoun follow-up drowned in question
marks. Finally "where does it say that?" is asked after each history (it answers the last question
again). The last column times the no-LLM follow-up rewrite alone.
Targets: under 0.3 s a question, worst stall under 50 ms.

Run: `python -m raptor_tools.benchmarks.question_time [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import string
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_ROOT = Path(__file__).resolve().parents[2]  # the checkout, for `python -m` from anywhere
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from raptor_engine.config import Settings  # noqa: E402
from raptor_engine.types import Turn  # noqa: E402
from raptor_tools import samples  # noqa: E402
from raptor_tools.benchmarks.loop_lag import LagSampler  # noqa: E402

LENGTHS = (100, 1000, 2000)
TARGET_S = 0.3
TARGET_LAG_MS = 50.0
LONG_ANSWER_CHARS = 30_000
# The pieces an adversarial follow-up is made of: pronouns and demonstratives, question-mark floods,
# names (with titles and joiners), long words, and the phrasings the rewrite handles.
PIECES = (
    "and when did she leave?",
    "he ? she ? him ? her ? his ?",
    "? ? ? ? ? ? ? ? ? ? ?",
    "what about Margaret Hale?",
    "why?",
    "Captain Reuben Hale of Halbeck and Dr. Ambrose Kittow",
    "was it there then?",
    "tell me more about her and his",
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "they them their it that those",
)


def adversarial_question(chars: int) -> str:
    """Pieces in turn until `chars` characters, cut there."""
    parts: list[str] = []
    i = 0
    while sum(len(p) + 1 for p in parts) < chars:
        parts.append(PIECES[i % len(PIECES)])
        i += 1
    return " ".join(parts)[:chars]


def flood_question(chars: int) -> str:
    """A pronoun follow-up drowned in question marks: 'and when did she leave? ? ? ...' (each pronoun's
    neighbours lie far away across the marks)."""
    return ("and when did she leave" + " ?" * chars)[:chars]


def long_answer(chars: int) -> str:
    """An extractive-looking answer of `chars` characters: quotes full of names and places."""
    quote = (
        "\u201cIn 1887 Ambrose Kittow of Halbeck met Captain Reuben Hale at Skerrow Point, and "
        "Walter Dunstan of Trewin rowed to the Margaret Ellen of Bideford.\u201d [1]"
    )
    lines = ["From the documents:"]
    while sum(len(line) + 1 for line in lines) < chars:
        lines.append(f"- {quote}")
    return "\n".join(lines)[:chars]


def histories() -> dict[str, list[Turn]]:
    """No history; six bot-sized turns (1,000-character questions, ordinary answers); six turns with
    30 KB answers."""
    six: list[Turn] = []
    six_long: list[Turn] = []
    for _ in range(6):
        six += [Turn("user", flood_question(1000)), Turn("assistant", long_answer(1500))]
        six_long += [Turn("user", flood_question(1000)), Turn("assistant", long_answer(LONG_ANSWER_CHARS))]
    return {"0 turns": [], "6 turns": six, "6 turns, 30 KB answers": six_long}


async def measure(repeat: int) -> list[dict[str, object]]:
    from bot.answering import ask_engine
    from raptor_engine.engine import Engine

    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(data_dir=Path(scratch))
        engine = Engine(settings)
        await asyncio.to_thread(engine.warm)
        await engine.ingest("bench", "lighthouse_keepers.md", samples.sample().read_bytes(), added_by="bench")
        services = SimpleNamespace(engine=engine, settings=settings)
        await ask_engine(services, "bench", "Who kept the light?", "collapsed", [], "bench")  # warm caches
        for label, history in histories().items():
            cases = [(f"{n:,} chars, mixed", adversarial_question(n)) for n in LENGTHS]
            cases += [(f"{n:,} chars, ? flood", flood_question(n)) for n in LENGTHS]
            if history:
                cases.append(("'where does it say that?'", "where does it say that?"))
            for name, question in cases:
                sampler = LagSampler()
                sampling = asyncio.create_task(sampler.run())
                await asyncio.sleep(0.05)
                times = []
                for _ in range(repeat):
                    started = time.perf_counter()
                    answer = await ask_engine(services, "bench", question, "collapsed", history, "bench")
                    times.append(time.perf_counter() - started)
                    assert answer is not None and answer.text
                sampler.stop()
                await sampling
                rows.append(
                    {
                        "history": label,
                        "question": name,
                        "median_s": statistics.median(times),
                        "worst_s": max(times),
                        "worst_lag_ms": max(sampler.lags) * 1000,
                        "rewrite_s": rewrite_seconds(question, history),
                    }
                )
                print_row(rows[-1])
        engine.close()
    return rows


def rewrite_seconds(question: str, history: list[Turn]) -> float:
    """The no-LLM follow-up rewrite alone (what once ran on the loop), timed once."""
    from raptor_engine.query.followup import standalone_question

    started = time.perf_counter()
    standalone_question(question, history)
    return time.perf_counter() - started


def distinct_names(chars: int) -> str:
    """An answer quoting `chars` characters of distinct made-up names ('... met Qwerty and met Asdfgh')."""
    rng = random.Random(3)
    parts: list[str] = []
    length = 0
    while length < chars:
        parts.append("met " + "".join(rng.choice(string.ascii_lowercase) for _ in range(6)).capitalize())
        length += len(parts[-1]) + 5
    return "\u201cThe keeper " + " and ".join(parts)[:chars] + ".\u201d [1]"


def rewrite_scaling() -> None:
    """The rewrite alone on the inputs that were superlinear, and its passes on inputs past the cap."""
    from raptor_engine.query import followup
    from raptor_engine.query.followup import Rewrite, _resolve, names_in, standalone_question

    def timed(fn, *args) -> float:  # type: ignore[no-untyped-def]
        # names are remembered per text; forget them so each run pays (older code had no such cache)
        getattr(getattr(followup, "_scan_names", None), "cache_clear", lambda: None)()
        started = time.perf_counter()
        fn(*args)
        return time.perf_counter() - started

    flood = ("? " * 500)[:999]
    print(
        f"999 chars of '? ' after six such turns: {timed(standalone_question, flood, [Turn('user', flood)] * 6):.3f} s"
    )
    question = "and when did she leave? " + "he ? " * 150
    for chars in (2000, 4000, 8000):
        history = [Turn("user", "Who met Margaret Hale?"), Turn("assistant", distinct_names(chars))] * 6
        print(
            f"a follow-up after six answers of {chars:,} chars of names: {timed(standalone_question, question, history):.3f} s"
        )
    for chars in (10_000, 100_000, 1_000_000):
        names = timed(names_in, distinct_names(chars))
        pronouns = timed(
            _resolve,
            "and when did she leave" + " ?" * (chars // 2),
            Rewrite("When did Margaret Hale leave?"),
            "",
        )
        print(f"{chars:>9,} chars: names_in {names:.3f} s; a pronoun across a '?' flood {pronouns:.3f} s")


def print_row(row: dict[str, object]) -> None:
    print(
        f"| {row['history']:<24} | {row['question']:<26} | {row['median_s']:8.3f} | {row['worst_s']:7.3f} "
        f"| {row['worst_lag_ms']:8.1f} | {row['rewrite_s']:9.3f} |",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="times each question is asked")
    parser.add_argument("--rewrite-scaling", action="store_true", help="time the rewrite alone instead")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    if args.rewrite_scaling:
        rewrite_scaling()
        return 0
    print(
        "| history                  | question                   | median s | worst s | stall ms | rewrite s |"
    )
    print(
        "|--------------------------|----------------------------|---------:|--------:|---------:|----------:|"
    )
    rows = asyncio.run(measure(args.repeat))
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    slowest = max(float(r["worst_s"]) for r in rows)  # type: ignore[arg-type]
    stall = max(float(r["worst_lag_ms"]) for r in rows)  # type: ignore[arg-type]
    print(
        f"slowest question {slowest:.3f} s (target < {TARGET_S} s); worst stall {stall:.1f} ms "
        f"(target < {TARGET_LAG_MS:.0f} ms)"
    )
    print("PASS" if slowest < TARGET_S and stall < TARGET_LAG_MS else "OVER TARGET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
