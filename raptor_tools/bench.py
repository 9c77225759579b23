"""`raptor bench`: what the engine costs on this machine, in figures (no timed tests anywhere).

0. Cold start (`bench_cold`): a fresh `raptor ingest` process against a fresh process that only
   loads torch fp32 and embeds the same chunks (targets: 0.8x at 100k tokens, 1.5x at 3k), with
   the warm ingest and each stage's seconds beside them.
1. Ingest of a ~100k-token document against batch-embedding its chunks alone (target: ratio <= 1.5).
2. Retrieval latency (`engine.retrieve`: embed the question, search, fill the budget) on knowledge
   bases of 1k, 10k and 100k nodes (target: median <= 10 ms at 100k, issue 12).
3. hnswlib recall@k against exact search at the configured ef, on those knowledge bases.
4. Peak memory (RSS high-water mark) of an ingest, measured in a child process (target < 2 GB).
5. Ingest time against document length (the paper claims linear growth).
6. The event loop's worst lag while an ingest runs on it (the bot shares its loop with builds).
7. Optionally (`--llm`), the LLM-concurrency benchmark of `raptor_tools/benchmarks/llm_concurrency.py`.

Each ingest runs in a fresh child process, so its peak memory is its own and no cache from an
earlier size helps a later one. Text: QuALITY, SQuALITY and QASPER articles from
`../shared/evaldata` when that folder exists (or `RAPTOR_EVALDATA`), continued when they run out by
copies of the sample document shipped as package data (`raptor_tools/samples/`) with names and
numbers varied per copy, so an installed wheel benchmarks the same way as a checkout.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np

from raptor_engine.config import Settings

from . import say as print_safe
from .bench_ingest import (
    REAL_SETS,
    allow_long_documents,
    bench_text,
    evaldata_dir,
    ingest_in_child,
)
from .samples import sample

DEFAULT_SIZES = (10_000, 25_000, 50_000, 100_000, 200_000)
DEFAULT_KB_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (10_000, 25_000)
QUICK_KB_SIZES = (1_000, 10_000)
COLD_SIZES = (3_000, 100_000)
QUICK_COLD_SIZES = (3_000,)
RATIO_SIZE = 100_000


# ---- retrieval on large synthetic knowledge bases -------------------------------------------


def base_material(
    embedder: Any, count: int, *, source: str = "auto"
) -> tuple[list[str], list[int], np.ndarray]:
    """`count` real chunk texts with their token counts and embeddings: the seed of synthetic nodes."""
    from raptor_engine.ingest.chunk import chunk_document
    from raptor_engine.ingest.load import load_document

    text = bench_text(count * 100, embedder.count_tokens_batch, source=source)
    doc = load_document("base.txt", text.encode("utf-8"))
    chunks = chunk_document(
        doc,
        embedder.count_tokens,
        max_tokens=100,
        hard_limit=embedder.max_tokens,
        count_tokens_batch=embedder.count_tokens_batch,
    )[:count]
    texts = [c.text for c in chunks]
    return texts, [c.tokens for c in chunks], embedder.embed(texts)


def synthetic_vectors(
    base: np.ndarray, count: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Vectors near real embeddings: a real one plus half of another plus noise, normalised.

    Returns (vectors, the base row each was made from) so nodes can carry that row's text.
    """
    first = rng.integers(0, len(base), count)
    second = rng.integers(0, len(base), count)
    noise = rng.normal(scale=0.03, size=(count, base.shape[1]))
    vectors = base[first] + 0.5 * base[second] + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32), first


_SENTENCE_END = re.compile(r"([.!?])(\s|$)")


def numbered_text(text: str, number: int) -> str:
    """The text with ` (n<number>)` before each sentence's closing mark, and at its end if it has none there.

    The synthetic nodes reuse 1,000 real texts; numbered, no two nodes share a sentence, as in a real
    knowledge base. Unnumbered, the collapsed tree's fill skipped ~155 of every question's 200
    candidates as copies of each other, which measured something no real knowledge base does.
    """
    marked = _SENTENCE_END.sub(lambda m: f" (n{number}){m.group(1)}{m.group(2)}", text)
    return marked if _SENTENCE_END.search(marked.rstrip()[-1:] + " ") else f"{marked} (n{number})"


def build_synthetic_kb(
    engine: Any, name: str, size: int, material: tuple[list[str], list[int], np.ndarray], seed: int = 11
) -> tuple[int, float]:
    """Store `size` leaf nodes (each with a distinct text, counted and split as a build would) through
    the store's normal commit, then build the index; (kb_id, seconds of the index build)."""
    from raptor_engine.ingest.sentences import sentence_spans
    from raptor_engine.storage.records import NewNode
    from raptor_engine.tree.model_check import SAMPLE_LEAVES

    texts, _, base = material
    vectors, rows = synthetic_vectors(base, size, np.random.default_rng(seed))
    numbered = [numbered_text(texts[row], i) for i, row in enumerate(rows.tolist())]
    # the first leaves hold the model's own vectors of their text, as a build would have stored them: the
    # engine's model check (model_check.py) re-embeds them before the knowledge base is searched
    vectors[:SAMPLE_LEAVES] = engine.embedder.embed(numbered[:SAMPLE_LEAVES])
    counter = engine.embedder.count_tokens_batch
    tokens = counter(numbered)
    sentences = sentence_spans(numbered, counter)
    nodes = [
        NewNode(i, 0, "leaf", text, tokens[i], vectors[i], start=0, end=len(text), sentences=sentences[i])
        for i, text in enumerate(numbered)
    ]
    document = {
        "name": f"{name}.txt",
        "sha256": f"{size:064d}",
        "size": size,
        "format": "txt",
        "chunks": size,
        "layers": 1,
        "tokens": int(sum(n.tokens for n in nodes)),
    }
    kb_id, _ = engine.store.commit_document(name, document, nodes, lambda ids: [], {"action": "bench"})
    started = time.perf_counter()
    engine.indexes.get(kb_id)
    return kb_id, time.perf_counter() - started


def bench_queries(count: int) -> list[str]:
    """Real questions from the evaluation sets when present, else questions about the sample."""
    root = evaldata_dir()
    questions: list[str] = []
    if root:
        for name in REAL_SETS:
            path = root / name / "questions.jsonl"
            if path.is_file():
                with path.open(encoding="utf-8") as handle:
                    questions += [json.loads(line)["question"] for line in handle if line.strip()]
    if len(questions) < count:
        sentences = re.split(r"(?<=[.!?])\s+", sample().read_text(encoding="utf-8"))
        questions += [
            f"What does the history say about this: {s.strip()[:120]}" for s in sentences if s.strip()
        ]
    rng = random.Random(5)
    rng.shuffle(questions)
    return list(dict.fromkeys(questions))[:count]


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (share in 0..1)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(np.ceil(share * len(ordered))) - 1))]


def recall_against_exact(
    engine: Any, kb_id: int, queries: np.ndarray, k: int, ef: int | None = None
) -> float:
    """Share of the exact top-k (brute force over all stored vectors) that hnswlib returns at `ef`
    (the configured one by default)."""
    ids, matrix = engine.store.embeddings(kb_id)
    index = engine.indexes.get(kb_id)
    found = 0
    for query in queries:
        exact = set(ids[np.argsort(-(matrix @ query), kind="stable")[:k]].tolist())
        approx = {node_id for node_id, _ in index.search(query, k=k, ef=ef or engine.settings.hnsw_ef)}
        found += len(exact & approx)
    return found / (k * len(queries))


def search_and_fill_ms(
    engine: Any, kb_id: int, questions: list[str], queries: np.ndarray, ef: int
) -> list[float]:
    """Milliseconds of retrieval after the question is embedded: the collapsed tree as `Engine.retrieve`
    runs it (hnswlib search, rows read a batch at a time, new-text-only budget fill) at this ef."""
    from raptor_engine.query.retrieve import collapsed_tree

    index = engine.indexes.get(kb_id)
    times = []
    for question, query in zip(questions, queries, strict=True):
        started = time.perf_counter()
        collapsed_tree(
            engine.store,
            index,
            kb_id,
            question,
            query,
            budget=engine.settings.budget,
            ef=ef,
            count_tokens_batch=engine.embedder.count_tokens_batch,
        )
        times.append((time.perf_counter() - started) * 1000)
    return times


def ef_sweep(
    engine: Any, kb_id: int, questions: list[str], queries: np.ndarray, efs: tuple[int, ...], size: int
) -> list[dict[str, Any]]:
    """Recall and search cost at several ef values: what the configured ef buys and what more would cost."""
    from raptor_engine.query.retrieve import CANDIDATES

    rows = []
    for ef in efs:
        times = search_and_fill_ms(engine, kb_id, questions, queries, ef)
        row: dict[str, Any] = {"ef": ef, "search_median_ms": round(statistics.median(times), 2)}
        for k in (10, 50, CANDIDATES):
            row[f"recall_at_{k}"] = round(recall_against_exact(engine, kb_id, queries, min(k, size), ef), 4)
        rows.append(row)
    return rows


def measure_retrieval(
    sizes: tuple[int, ...],
    *,
    queries: int = 200,
    embedder: Any = None,
    source: str = "auto",
    base_count: int = 1000,
    efs: tuple[int, ...] = (),
    log: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    """Latency of `engine.retrieve` and hnswlib recall on knowledge bases of each size (and at other
    ef values when `efs` is given)."""
    from raptor_engine.engine import Engine
    from raptor_engine.query.retrieve import CANDIDATES

    results = []
    with tempfile.TemporaryDirectory(prefix="raptor-bench-kb-") as scratch:
        settings = Settings.from_env(data_dir=Path(scratch), llm_api_key="", llm_base_url="")
        engine = Engine(settings, embedder=embedder)
        try:
            emb = engine.embedder
            base_count = min(base_count, max(sizes))
            log(f"embedding {base_count} real chunks as the seed of synthetic nodes")
            material = base_material(emb, base_count, source=source)
            questions = bench_queries(queries)
            query_vectors = emb.embed(questions)
            for size in sizes:
                log(f"building a knowledge base of {size:,} nodes")
                kb_id, index_seconds = build_synthetic_kb(engine, f"kb{size}", size, material)
                for question in questions[:5]:  # warm: index load, SQLite page cache
                    engine.retrieve(f"kb{size}", question)
                latencies, cpu, embeds, filled = [], [], [], []
                for question in questions:
                    started, cpu_started = time.perf_counter(), time.process_time()
                    context = engine.retrieve(f"kb{size}", question)
                    latencies.append((time.perf_counter() - started) * 1000)
                    cpu.append((time.process_time() - cpu_started) * 1000)
                    filled.append(context.tokens_used)
                    started = time.perf_counter()
                    emb.embed([question])
                    embeds.append((time.perf_counter() - started) * 1000)
                # The same questions again: the first pass is what new questions cost, this one what a
                # repeated question costs once SQLite's pages and the index are warm.
                repeat = []
                for question in questions:
                    started = time.perf_counter()
                    engine.retrieve(f"kb{size}", question)
                    repeat.append((time.perf_counter() - started) * 1000)
                results.append(
                    {
                        "nodes": size,
                        "queries": len(questions),
                        "repeat_median_ms": round(statistics.median(repeat), 2),
                        "index_build_seconds": round(index_seconds, 2),
                        "median_ms": round(statistics.median(latencies), 2),
                        "p95_ms": round(percentile(latencies, 0.95), 2),
                        "cpu_median_ms": round(statistics.median(cpu), 2),
                        "embed_median_ms": round(statistics.median(embeds), 2),
                        "load_average": round(os.getloadavg()[0], 2),
                        "context_tokens_median": statistics.median(filled),
                        "hnsw_ef": settings.hnsw_ef,
                        **{
                            f"recall_at_{k}": round(
                                recall_against_exact(engine, kb_id, query_vectors, min(k, size)), 4
                            )
                            for k in (10, 50, CANDIDATES)
                        },
                    }
                )
                results[-1]["search_median_ms"] = round(
                    statistics.median(search_and_fill_ms(engine, kb_id, questions, query_vectors, settings.hnsw_ef)), 2
                )
                if efs:
                    results[-1]["ef_sweep"] = ef_sweep(engine, kb_id, questions, query_vectors, efs, size)
                log(json.dumps(results[-1]))
                engine.delete_kb(f"kb{size}")
        finally:
            engine.close()
    return results


# ---- the optional benchmarks owned by others ------------------------------------------------


def llm_concurrency() -> dict[str, Any] | None:
    """Run `benchmarks/llm_concurrency.py` (it prints its own table). Its fake LLM server is the test
    suite's (`tests/llm_server.py`), so this needs a checkout."""
    from .benchmarks.llm_concurrency import run_llm_concurrency_benchmark

    try:
        figures = run_llm_concurrency_benchmark()
    except ModuleNotFoundError as exc:
        click.echo(f"LLM concurrency: needs the repository's tests/ (a checkout), not found ({exc.name}); skipped.")
        return None
    layers = figures.get("layers", [])
    return {
        **{k: v for k, v in figures.items() if k != "layers"},
        "layers": [
            {"layer": t.layer, "clusters": t.clusters, "seconds": round(t.seconds, 3)} for t in layers
        ],
    }


def bot_loop_lag(tokens: int = RATIO_SIZE) -> dict[str, Any] | None:
    """Run `benchmarks/loop_lag.py` (the bot's own ingest path, with questions asked meanwhile)."""
    from .benchmarks.loop_lag import measure as loop_lag_measure

    figures = asyncio.run(loop_lag_measure(tokens))
    click.echo(
        f"Bot path, {figures['document_tokens']:,} tokens: worst event-loop lag {figures['worst_ms']:.1f} ms, "
        f"p99 {figures['p99_ms']:.1f} ms; {figures['questions_answered']} questions answered during the build"
    )
    return figures


# ---- report --------------------------------------------------------------------------------


def cold_start(sizes: tuple[int, ...], source: str, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """The cold-start comparison (bench_cold) at each size, with one embedder for chunking the texts."""
    from raptor_engine.tree.embed import Embedder

    from .bench_cold import measure_cold

    settings = Settings.from_env()
    embedder = Embedder(
        settings.embed_model, backend=settings.embed_backend, cache_dir=settings.cache_dir, use_gpu=False
    )
    rows = []
    for size in sizes:
        say(f"cold start at {size:,} tokens: the floor process, a cold `raptor ingest`, a warm ingest")
        rows.append(measure_cold(size, embedder=embedder, source=source, chunk_tokens=settings.chunk_tokens))
        say(json.dumps(rows[-1]))
    return rows


def render(report: dict[str, Any]) -> str:
    """Plain-text tables of the figures."""
    from .bench_cold import render_cold

    lines = [f"raptor bench · {report['machine']}", ""]
    if report.get("cold"):
        lines += [*render_cold(report["cold"]), ""]
    ingests = report.get("ingest", [])
    if ingests:
        lines += [
            "Ingest against document length (default extractive summariser; each size in a fresh process)",
            f"{'tokens':>8} {'chunks':>6} {'nodes':>6} {'ingest s':>9} {'s/1k tok':>9} {'embed s':>8} "
            f"{'ratio':>6} {'CPU ratio':>9} {'peak RSS MB':>11} {'loop lag ms':>11} {'load':>5}",
        ]
        for r in ingests:
            lines.append(
                f"{r['tokens']:>8} {r['chunks']:>6} {r['nodes']:>6} {r['ingest_seconds']:>9.1f} "
                f"{r['seconds_per_1k_tokens']:>9.3f} {r['embed_seconds']:>8.1f} {r['ratio']:>6.2f} "
                f"{r['cpu_ratio']:>9.2f} {r['peak_rss_mb']:>11.0f} {r['loop_lag_ms']:>11.1f} {r['load_average']:>5.1f}"
            )
        lines.append("where the ingest time goes (seconds by stage):")
        for r in ingests:
            stages = ", ".join(f"{k} {v:.1f}" for k, v in r.get("stage_seconds", {}).items() if v >= 0.05)
            lines.append(f"{r['tokens']:>8}: {stages}")
        ratio = report.get("ratio_check")
        if ratio:
            lines += [
                "",
                f"{ratio['tokens']:,}-token ingest {ratio['ingest_seconds']:.1f} s vs embedding its chunks alone "
                f"{ratio['embed_seconds']:.1f} s: ratio {ratio['ratio']:.2f} (target <= 1.5: "
                f"{'met' if ratio['ratio'] <= 1.5 else 'NOT met'}); in CPU time {ratio['cpu_ratio']:.2f}",
            ]
        peak = max(r["peak_rss_mb"] for r in ingests)
        lines.append(
            f"peak memory of any ingest: {peak:.0f} MB (target < 2048 MB: {'met' if peak < 2048 else 'NOT met'})"
        )
        lines.append(
            f"worst event-loop lag during any ingest: {max(r['loop_lag_ms'] for r in ingests):.1f} ms"
        )
    retrieval = report.get("retrieval", [])
    if retrieval:
        recalls = [k for k in retrieval[0] if k.startswith("recall_at_")]
        lines += [
            "",
            "Retrieval (engine.retrieve: embed the question + hnswlib search + fill a 2000-token budget)",
            f"{'nodes':>8} {'median ms':>9} {'p95 ms':>7} {'CPU ms':>7} {'embed ms':>8} "
            + " ".join(f"{k.replace('recall_at_', 'recall@'):>10}" for k in recalls)
            + f" {'ef':>4} {'index build s':>13}",
        ]
        for r in retrieval:
            lines.append(
                f"{r['nodes']:>8} {r['median_ms']:>9.1f} {r['p95_ms']:>7.1f} {r['cpu_median_ms']:>7.1f} "
                f"{r['embed_median_ms']:>8.1f} "
                + " ".join(f"{r[k]:>10.4f}" for k in recalls)
                + f" {r['hnsw_ef']:>4} {r['index_build_seconds']:>13.1f} load {r['load_average']:.1f}"
            )
        for r in retrieval:
            if "search_median_ms" in r:
                lines.append(
                    f"{r['nodes']:>8} nodes: search + fetch + fill, question already embedded: "
                    f"median {r['search_median_ms']:.1f} ms"
                )
            if "repeat_median_ms" in r:
                lines.append(
                    f"{r['nodes']:>8} nodes: the same questions again (pages warm): "
                    f"median {r['repeat_median_ms']:.1f} ms"
                )
            for row in r.get("ef_sweep", []):
                recall = ", ".join(
                    f"{k.replace('recall_at_', 'recall@')} {v:.4f}"
                    for k, v in row.items()
                    if k.startswith("recall")
                )
                lines.append(
                    f"{r['nodes']:>8} nodes, ef {row['ef']:>4}: search {row['search_median_ms']:.1f} ms, {recall}"
                )
        largest = retrieval[-1]
        lines.append(
            f"median at {largest['nodes']:,} nodes: {largest['median_ms']:.1f} ms "
            f"(target <= 10 ms: {'met' if largest['median_ms'] <= 10 else 'NOT met'})"
        )
    return "\n".join(lines)


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average {load:.1f} at start"


def _sizes(value: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    if not value:
        return default
    try:
        sizes = tuple(int(v.strip().lower().replace("k", "000")) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a comma-separated list of sizes such as 10k,25k."
        ) from None
    if not sizes or min(sizes) < 1:
        raise click.BadParameter("sizes must be positive")
    return sizes


@click.command("bench")
@click.option("--sizes", help="Document sizes in tokens, e.g. 10k,25k,50k,100k,200k (the default).")
@click.option(
    "--kb-sizes", help="Knowledge-base sizes in nodes for retrieval, e.g. 1k,10k,100k (the default)."
)
@click.option(
    "--queries", type=click.IntRange(min=1), default=200, show_default=True, help="Questions per size."
)
@click.option(
    "--quick", is_flag=True, help="A short run: 10k and 25k tokens, 1k and 10k nodes, 50 questions."
)
@click.option(
    "--cold-sizes", help="Document sizes for the cold-start comparison with the floor, e.g. 3k,100k (the default)."
)
@click.option("--skip-cold", is_flag=True, help="Leave out the cold-start comparison.")
@click.option("--skip-ingest", is_flag=True, help="Only the retrieval figures (no cold start either).")
@click.option("--skip-retrieval", is_flag=True, help="Only the ingest figures.")
@click.option(
    "--llm", "with_llm", is_flag=True, help="Also run the LLM concurrency benchmark (a local fake server)."
)
@click.option(
    "--source",
    type=click.Choice(["auto", "real", "generated"]),
    default="auto",
    show_default=True,
    help="Text: evaluation-set articles when present (auto), or varied copies of the sample.",
)
@click.option("--ef-sweep", help="Also measure recall and search time at these ef values, e.g. 200,400,800.")
@click.option(
    "--bot-lag",
    is_flag=True,
    help="Also run the bot's loop-lag benchmark (benchmarks/loop_lag.py, ~100k tokens).",
)
@click.option(
    "--workers",
    "on_workers",
    is_flag=True,
    help="Only the Dask worker figures (benchmarks/workers.py: loop lag, 8-upload throughput on 1 and 2 "
    "workers, question latency meanwhile, time to first answer).",
)
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures as JSON."
)
@click.option(
    "--many-kbs",
    is_flag=True,
    help="Instead: many knowledge bases in many servers' stores, memory under RAPTOR_INDEX_MEMORY_MB "
    "(sized by --kbs --guilds --nodes --questions --memory-mb).",
)
@click.option(
    "--messages",
    type=click.IntRange(min=10),
    help="Instead: import this many chat messages as message documents (tokens/s, peak RSS), then time a "
    "deletion, a bulk delete of 1,000 and one author's forget-me until no file holds their text, and a new "
    "message until it is answered (bench_messages.py).",
)
@click.option(
    "--kbs", type=click.IntRange(min=1), default=2000, show_default=True, help="--many-kbs: knowledge bases."
)
@click.option(
    "--guilds", type=click.IntRange(min=1), default=500, show_default=True, help="--many-kbs: servers."
)
@click.option(
    "--nodes", default="200-2000", show_default=True, help="--many-kbs: nodes per knowledge base, A-B."
)
@click.option(
    "--questions", type=click.IntRange(min=1), default=5000, show_default=True, help="--many-kbs: questions."
)
@click.option(
    "--memory-mb", type=click.IntRange(min=1), help="--many-kbs: the budget (default RAPTOR_INDEX_MEMORY_MB)."
)
@click.option(
    "--data-dir",
    "scratch_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="--many-kbs: where to write (default a temporary folder, removed after).",
)
def bench_command(
    sizes: str | None,
    kb_sizes: str | None,
    queries: int,
    quick: bool,
    cold_sizes: str | None,
    skip_cold: bool,
    skip_ingest: bool,
    skip_retrieval: bool,
    with_llm: bool,
    source: str,
    ef_sweep: str | None,
    bot_lag: bool,
    on_workers: bool,
    out: Path | None,
    many_kbs: bool,
    messages: int | None,
    kbs: int,
    guilds: int,
    nodes: str,
    questions: int,
    memory_mb: int | None,
    scratch_dir: Path | None,
) -> None:
    """Measure ingest time, memory, loop lag, retrieval latency and index recall on this machine."""
    if many_kbs:
        from .bench_spaces import run_many_kbs_command

        run_many_kbs_command(kbs, guilds, nodes, questions, memory_mb, scratch_dir, out)
        return
    if messages:
        from .bench_messages import render as render_messages
        from .bench_messages import run as run_messages

        click.echo(machine())
        figures = run_messages(messages)
        print_safe(render_messages(figures))
        if out:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps({"machine": machine(), "messages": figures}, indent=2) + "\n")
        return
    allow_long_documents()
    if on_workers:
        from .benchmarks.workers import measure as workers_measure

        click.echo(machine())
        figures = workers_measure(say=click.echo)
        if out:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps({"machine": machine(), "workers": figures}, indent=2, default=str) + "\n")
        return
    doc_sizes = _sizes(sizes, QUICK_SIZES if quick else DEFAULT_SIZES)
    kb = _sizes(kb_sizes, QUICK_KB_SIZES if quick else DEFAULT_KB_SIZES)
    queries = min(queries, 50) if quick else queries
    report: dict[str, Any] = {"machine": machine(), "source": source, "ingest": [], "retrieval": []}
    say = lambda message: click.echo(f"· {message}", err=True)  # noqa: E731

    def save() -> None:
        if out:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")

    if not skip_ingest:
        for size in doc_sizes:
            say(f"ingesting a {size:,}-token document in a child process")
            report["ingest"].append(ingest_in_child(size, source=source))
            say(json.dumps(report["ingest"][-1]))
            save()
        at_target = min(report["ingest"], key=lambda r: abs(r["target_tokens"] - RATIO_SIZE))
        report["ratio_check"] = {
            k: at_target[k] for k in ("tokens", "ingest_seconds", "embed_seconds", "ratio", "cpu_ratio")
        }
    if not (skip_cold or skip_ingest):
        report["cold"] = cold_start(_sizes(cold_sizes, QUICK_COLD_SIZES if quick else COLD_SIZES), source, say)
        save()
    if not skip_retrieval:
        efs = _sizes(ef_sweep, ()) if ef_sweep else ()
        report["retrieval"] = measure_retrieval(kb, queries=queries, source=source, efs=efs, log=say)
    print_safe(render(report))
    if with_llm:
        click.echo()
        report["llm_concurrency"] = llm_concurrency()
    if bot_lag:
        click.echo()
        report["bot_loop_lag"] = bot_loop_lag()
    save()
    if out:
        say(f"wrote {out}")



