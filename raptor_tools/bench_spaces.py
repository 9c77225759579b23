"""`raptor bench --many-kbs`: many knowledge bases in many spaces (servers), memory under a budget.

Knowledge bases are written straight into their spaces' stores (random unit vectors and short texts:
seconds, not builds), each with its saved index, as the bot leaves them. Then questions go to them
with a Zipf popularity (a few servers busy, most idle), each in a fresh child process: once with the
memory budget and once with none. Each child prints its peak RSS, the fixed base it started from
(the engine open, before any question) and the question latencies, cold loads included.

Questions are embedded by a stand-in (a seeded random unit vector per question) so that the figures
are those of the stores, the indices and retrieval, not of the model (one MiniLM embedding is ~5 ms
more per question on a laptop core).
"""

from __future__ import annotations

import hashlib
import json
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384  # all-MiniLM-L6-v2's
WORDS = "harbour lantern signal keeper tide mill oats sluice winter flood ferry granite quarry".split()


@dataclass
class ManyKbsPlan:
    """The run's size: `kbs` knowledge bases in `guilds` spaces of `min_nodes`-`max_nodes` leaves each."""

    kbs: int = 2000
    guilds: int = 500
    min_nodes: int = 200
    max_nodes: int = 2000
    questions: int = 5000
    memory_mb: int = 512
    zipf: float = 1.1
    seed: int = 7

    def kb_names(self) -> list[str]:
        return [f"guild-{1000 + i % self.guilds}-channel-{i}" for i in range(self.kbs)]


class StandInEmbedder:
    """Seeded random unit vectors for texts and whitespace token counts: no model in the measurement."""

    name = "stand-in"

    def embed(self, texts: list[str], progress: Any = None, *, token_counts: Any = None) -> np.ndarray:
        return np.vstack([_unit(_seed_of(t)) for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def known_words(self, words: list[str]) -> list[bool]:
        return [True] * len(words)  # no vocabulary: every word as typed


def _seed_of(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def _unit(seed: int, rows: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((rows or 1, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors if rows else vectors[0]


def _engine(data_dir: Path, memory_mb: int) -> Any:
    from raptor_engine import Engine, Settings

    settings = Settings(data_dir=data_dir, index_memory_mb=memory_mb, llm_api_key="", llm_base_url="")
    return Engine(settings, embedder=StandInEmbedder())


def write_kbs(plan: ManyKbsPlan, data_dir: Path) -> dict[str, Any]:
    """Write every knowledge base straight into its space's store, and save its index."""
    from raptor_engine.ingest.sentences import sentence_spans
    from raptor_engine.storage.records import NewNode
    from raptor_engine.tree.model_check import SAMPLE_LEAVES

    counter = StandInEmbedder().count_tokens_batch
    rng = np.random.default_rng(plan.seed)
    engine = _engine(data_dir, plan.memory_mb)
    started, nodes_written = time.perf_counter(), 0
    try:
        for number, kb in enumerate(plan.kb_names()):
            size = int(rng.integers(plan.min_nodes, plan.max_nodes + 1))
            with engine.in_space(kb):
                if engine.store.kb_id(kb) is not None:
                    continue  # written by an earlier run into the same --data-dir
            vectors = _unit(plan.seed * 1_000_003 + number, size)
            texts = [" ".join(rng.choice(WORDS, 12)) + f" (kb {number} leaf {i})." for i in range(size)]
            # the first leaves hold the stand-in's own vectors of their text, as a store it built would:
            # the engine's model check (model_check.py) re-embeds them before a knowledge base is searched
            vectors[:SAMPLE_LEAVES] = StandInEmbedder().embed(texts[:SAMPLE_LEAVES])
            # Each leaf's sentences are stored with it, as a build stores them (retrieval reads them).
            spans = sentence_spans(texts, counter)
            nodes = [
                NewNode(i, 0, "leaf", text, 15, vectors[i], start=0, end=len(text), sentences=spans[i])
                for i, text in enumerate(texts)
            ]
            document = {
                "name": "notes.txt",
                "sha256": hashlib.sha256(kb.encode()).hexdigest(),
                "size": size,
                "format": "txt",
                "chunks": size,
                "layers": 1,
                "tokens": 15 * size,
            }
            with engine.in_space(kb):
                kb_id, _ = engine.store.commit_document(
                    kb, document, nodes, lambda ids: [], {"action": "bench"}
                )
                engine.indexes.get(kb_id)  # saved to disk, as a build leaves it
            nodes_written += size
    finally:
        engine.close()
    return {"kbs": plan.kbs, "nodes": nodes_written, "seconds": time.perf_counter() - started}


def zipf_choices(plan: ManyKbsPlan) -> list[str]:
    """`plan.questions` knowledge base names, popularity ~ 1/rank^s over a random ranking."""
    rng = np.random.default_rng(plan.seed + 1)
    names = plan.kb_names()
    ranking = rng.permutation(len(names))
    weights = 1.0 / np.arange(1, len(names) + 1) ** plan.zipf
    picks = rng.choice(len(names), size=plan.questions, p=weights / weights.sum())
    return [names[ranking[p]] for p in picks]


def _rss_bytes() -> int:
    """This process's resident memory now (Linux's /proc; elsewhere its peak so far, an upper bound)."""
    import os

    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return _peak_rss_bytes()


def _peak_rss_bytes() -> int:
    """This process's peak resident memory: Linux's VmHWM, else ru_maxrss (bytes on macOS, KiB elsewhere).

    VmHWM first because ru_maxrss survives exec: a child started by a parent holding 700 MB reports
    at least 700 MB there, whatever it used itself.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


def ask_questions(plan: ManyKbsPlan, data_dir: Path, memory_mb: int) -> dict[str, Any]:
    """In this (fresh) process: open the engine, then answer the questions; latencies and memory."""
    choices = zipf_choices(plan)
    engine = _engine(data_dir, memory_mb)
    base = _rss_bytes()
    budget = engine.spaces.budget
    latencies, cold = [], []
    try:
        for number, kb in enumerate(choices):
            question = f"question {number} about {WORDS[number % len(WORDS)]}"
            opened_before = budget.admitted
            started = time.perf_counter()
            engine.retrieve(kb, question)
            elapsed = (time.perf_counter() - started) * 1000
            latencies.append(elapsed)
            if budget.admitted > opened_before:  # its store or its index was (re)opened from disk
                cold.append(elapsed)
        peak = _peak_rss_bytes()
        return {
            "memory_mb": memory_mb,
            "questions": len(choices),
            "distinct_kbs": len(set(choices)),
            "base_rss_mb": base / 2**20,
            "peak_rss_mb": peak / 2**20,
            "peak_counted_mb": budget.peak / 2**20,
            "evictions": budget.evictions,
            "cold_questions": len(cold),
            "p50_ms": float(np.percentile(latencies, 50)),
            "p99_ms": float(np.percentile(latencies, 99)),
            "cold_p50_ms": float(np.percentile(cold, 50)) if cold else 0.0,
            "cold_p99_ms": float(np.percentile(cold, 99)) if cold else 0.0,
        }
    finally:
        engine.close()


def questions_in_child(plan: ManyKbsPlan, data_dir: Path, memory_mb: int) -> dict[str, Any]:
    """`ask_questions` in a fresh interpreter, so its peak RSS is its own."""
    args = [
        sys.executable,
        "-m",
        "raptor_tools.bench_spaces",
        json.dumps(plan.__dict__),
        str(data_dir),
        str(memory_mb),
    ]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the question run failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def many_kbs(plan: ManyKbsPlan, data_dir: Path, log: Any = print) -> dict[str, Any]:
    """The whole benchmark: write, then the questions with the budget and with none."""
    log(
        f"writing {plan.kbs:,} knowledge bases in {plan.guilds:,} spaces ({plan.min_nodes}-{plan.max_nodes} nodes)"
    )
    written = write_kbs(plan, data_dir)
    log(
        f"wrote {written['nodes']:,} nodes in {written['seconds']:.0f} s; asking {plan.questions:,} questions"
    )
    budgeted = questions_in_child(plan, data_dir, plan.memory_mb)
    log("again with no memory budget")
    unbounded = questions_in_child(plan, data_dir, 0)
    disk = sum(p.stat().st_size for p in data_dir.rglob("*") if p.is_file())
    return {"plan": plan.__dict__, "written": written, "disk_mb": disk / 2**20, "runs": [budgeted, unbounded]}


def render_many_kbs(report: dict[str, Any]) -> str:
    """The table: per run, the fixed base, the peak, and how far the peak is under budget + base."""
    plan, written = report["plan"], report["written"]
    lines = [
        f"{plan['kbs']:,} knowledge bases in {plan['guilds']:,} spaces, {written['nodes']:,} nodes "
        f"({report['disk_mb']:,.0f} MB on disk); {plan['questions']:,} questions, Zipf s={plan['zipf']}",
        "budget      base RSS   peak RSS   budget+base  margin   counted  evictions  cold  p50 ms  p99 ms  cold p99",
    ]
    for run in report["runs"]:
        label = f"{run['memory_mb']} MB" if run["memory_mb"] else "none"
        allowed = f"{run['memory_mb'] + run['base_rss_mb']:7.0f} MB" if run["memory_mb"] else "      -   "
        margin = (
            f"{run['memory_mb'] + run['base_rss_mb'] - run['peak_rss_mb']:+5.0f} MB"
            if run["memory_mb"]
            else "     -  "
        )
        lines.append(
            f"{label:<10}  {run['base_rss_mb']:7.0f} MB {run['peak_rss_mb']:7.0f} MB   {allowed} {margin} "
            f"{run['peak_counted_mb']:6.0f} MB {run['evictions']:9,} {run['cold_questions']:5,} "
            f"{run['p50_ms']:7.1f} {run['p99_ms']:7.1f} {run['cold_p99_ms']:8.1f}"
        )
    return "\n".join(lines)


def _main(argv: list[str]) -> None:
    """Child entry: `python -m raptor_tools.bench_spaces PLAN_JSON DATA_DIR MEMORY_MB`."""
    plan = ManyKbsPlan(**json.loads(argv[0]))
    print(json.dumps(ask_questions(plan, Path(argv[1]), int(argv[2]))), flush=True)


if __name__ == "__main__":
    _main(sys.argv[1:])


def run_many_kbs_command(
    kbs: int,
    guilds: int,
    nodes: str,
    questions: int,
    memory_mb: int | None,
    scratch: Path | None,
    out: Path | None,
) -> None:
    """`raptor bench --many-kbs`: parse the sizes, run in `scratch` (or a temporary folder), print the table."""
    import os
    import tempfile

    import click

    from raptor_engine.config import Settings

    from . import say as print_safe

    low, _, high = nodes.partition("-")
    if not (low.isdigit() and (high or low).isdigit()) or int(low) < 1 or int(high or low) < int(low):
        raise click.BadParameter("--nodes is a range of node counts such as 200-2000.")
    budget = memory_mb or Settings.from_env().index_memory_mb
    plan = ManyKbsPlan(kbs, min(guilds, kbs), int(low), int(high or low), questions, budget)
    say = lambda message: click.echo(f"· {message}", err=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="raptor-many-kbs-") as temporary:
        data_dir = scratch or Path(temporary) / "data"
        report = many_kbs(plan, data_dir, say)
    report["load_average"] = os.getloadavg()
    print_safe(render_many_kbs(report))
    click.echo(f"load average {report['load_average'][0]:.2f} (1 min) while it ran")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
