"""One ingest measured in a fresh child process (`measure_ingest`, `ingest_in_child`) and the text it
ingests: real long documents from `../shared/evaldata` when that folder exists (or `RAPTOR_EVALDATA`),
continued by copies of the shipped sample with names and numbers varied per copy (`bench_text`).

Shared by `raptor bench` (bench.py) and the cold-start comparison (bench_cold.py), which both build on it.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from raptor_engine.config import Settings
from raptor_engine.tree.stages import StageClock

from .samples import sample

ROOT = Path(__file__).resolve().parents[1]  # the checkout, or site-packages when installed from a wheel
BENCH_MAX_DOCUMENT_TOKENS = 10_000_000
REAL_SETS = ("quality", "squality", "qasper", "narrativeqa_summaries")
LAG_INTERVAL = 0.010
CountBatch = Callable[[list[str]], list[int]]


# ---- text ----------------------------------------------------------------------------------


def evaldata_dir() -> Path | None:
    """The evaluation sets' folder, if this machine has one (a user's clone usually does not): from
    RAPTOR_EVALDATA, or `../shared/evaldata` beside the checkout or beside the working directory."""
    candidates = [
        os.environ.get("RAPTOR_EVALDATA", ""),
        ROOT.parent / "shared" / "evaldata",
        Path.cwd().parent / "shared" / "evaldata",
    ]
    for candidate in candidates:
        if candidate and (Path(candidate) / "quality" / "documents.jsonl").is_file():
            return Path(candidate)
    return None


def real_paragraphs(root: Path) -> Iterator[str]:
    """Paragraphs of the sets' long documents, in a fixed order."""
    for name in REAL_SETS:
        path = root / name / "documents.jsonl"
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    text = json.loads(line)["doc_text"]
                    yield from (p.strip() for p in re.split(r"\n\s*\n", text) if p.strip())


_NAME_SYLLABLES = (
    "an",
    "bel",
    "cor",
    "dun",
    "el",
    "fen",
    "gar",
    "hal",
    "is",
    "jor",
    "ket",
    "lin",
    "mor",
    "ost",
)


def _varied_copy(text: str, copy: int) -> str:
    """The sample with its numbers and capitalised names replaced, differently for each copy."""
    rng = random.Random(copy)
    names: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        word = match.group(0)
        if word not in names:
            parts = rng.sample(_NAME_SYLLABLES, rng.randint(2, 3))
            names[word] = "".join(parts).capitalize()
        return names[word]

    text = re.sub(r"(?<=[a-z,] )[A-Z][a-z]{2,}", name, text)  # capitalised words inside sentences
    return re.sub(r"\d+", lambda m: str(int(m.group(0)) + rng.randint(1, 97)), text)


def generated_paragraphs() -> Iterator[str]:
    """Endless varied copies of the shipped sample document."""
    text = sample().read_text(encoding="utf-8")
    copy = 0
    while True:
        copy += 1
        yield from (p.strip() for p in _varied_copy(text, copy).split("\n\n") if p.strip())


def bench_text(target_tokens: int, count_batch: CountBatch, *, source: str = "auto") -> str:
    """About `target_tokens` tokens (by the embedding model's tokenizer) of real or varied text."""
    root = evaldata_dir() if source in ("auto", "real") else None
    if source == "real" and root is None:
        raise click.ClickException("No evaluation data found; set RAPTOR_EVALDATA or use --source generated.")
    paragraphs = real_paragraphs(root) if root else iter(())
    chosen: list[str] = []
    total = 0
    for stream in (paragraphs, generated_paragraphs()):
        while total < target_tokens:
            batch = [p for _, p in zip(range(64), stream, strict=False)]
            if not batch:
                break
            for paragraph, tokens in zip(batch, count_batch(batch), strict=True):
                if total >= target_tokens:
                    break
                chosen.append(paragraph)
                total += tokens
    return "\n\n".join(chosen)


# ---- ingest (run in a child process) --------------------------------------------------------


async def _watch_loop(stop: asyncio.Event, interval: float = LAG_INTERVAL) -> float:
    """Worst delay, in seconds, of a timer that should fire every `interval` on this loop."""
    loop = asyncio.get_running_loop()
    worst = 0.0
    while not stop.is_set():
        started = loop.time()
        await asyncio.sleep(interval)
        worst = max(worst, loop.time() - started - interval)
    return worst


async def _ingest_watching_loop(engine: Any, data: bytes) -> tuple[Any, float, float, dict[str, float]]:
    """Ingest on this loop while a sampler measures how long the loop is ever blocked."""
    stop = asyncio.Event()
    watcher = asyncio.create_task(_watch_loop(stop))
    clock = StageClock()
    started = time.perf_counter()
    result = await engine.ingest("bench", "bench.txt", data, added_by="bench", progress=clock)
    finished = time.perf_counter()
    stop.set()
    return result, finished - started, await watcher, clock.seconds(finished)


def allow_long_documents() -> None:
    """The benchmark ingests documents of up to 200k tokens on purpose: lift the per-upload bounds on
    tokens and build time (the bot's guards RAPTOR_MAX_DOCUMENT_TOKENS and RAPTOR_BUILD_TIMEOUT, which a
    loaded machine could trip at 200k) for this process and its children, unless the caller set them.
    The memory ceiling stays, so the figures include its watchdog."""
    os.environ.setdefault("RAPTOR_MAX_DOCUMENT_TOKENS", str(BENCH_MAX_DOCUMENT_TOKENS))
    os.environ.setdefault("RAPTOR_BUILD_TIMEOUT", "0")


def measure_ingest(
    tokens: int, data_dir: Path, *, embedder: Any = None, source: str = "auto", text: str | None = None
) -> dict[str, Any]:
    """Ingest a document of about `tokens` tokens (or `text`) and embed its chunks alone, after warming up."""
    from raptor_engine.engine import Engine
    from raptor_engine.ingest.chunk import chunk_document
    from raptor_engine.ingest.load import load_document

    settings = Settings.from_env(data_dir=data_dir, llm_api_key="", llm_base_url="")
    engine = Engine(settings, embedder=embedder)
    try:
        engine.warm()
        emb = engine.embedder
        if text is None:
            text = bench_text(tokens, emb.count_tokens_batch, source=source)
        data = text.encode("utf-8")
        doc = load_document("bench.txt", data, max_bytes=settings.max_file_bytes)
        chunks = chunk_document(
            doc,
            emb.count_tokens,
            max_tokens=settings.chunk_tokens,
            hard_limit=emb.max_tokens,
            count_tokens_batch=emb.count_tokens_batch,
        )
        texts = [c.text for c in chunks]
        emb.embed(texts[:64])  # first-batch costs (thread pools, allocations) are not the document's
        started, cpu_started = time.perf_counter(), time.process_time()
        emb.embed(texts)
        embed_seconds = time.perf_counter() - started
        embed_cpu = time.process_time() - cpu_started
        cpu_started = time.process_time()
        result, ingest_seconds, worst_lag, stages = asyncio.run(_ingest_watching_loop(engine, data))
        ingest_cpu = time.process_time() - cpu_started
        info = engine.tree_info("bench")
    finally:
        engine.close()
    return {
        "target_tokens": tokens,
        "tokens": sum(c.tokens for c in chunks),
        "chunks": len(chunks),
        "layers": {str(layer.layer): layer.nodes for layer in info.layers},
        "nodes": info.nodes,
        "embed_seconds": round(embed_seconds, 3),
        "ingest_seconds": round(ingest_seconds, 3),
        "ratio": round(ingest_seconds / embed_seconds, 3) if embed_seconds else None,
        "embed_cpu_seconds": round(embed_cpu, 3),
        "ingest_cpu_seconds": round(ingest_cpu, 3),
        "cpu_ratio": round(ingest_cpu / embed_cpu, 3) if embed_cpu else None,
        "load_average": round(os.getloadavg()[0], 2),
        "seconds_per_1k_tokens": round(ingest_seconds / max(sum(c.tokens for c in chunks), 1) * 1000, 4),
        "loop_lag_ms": round(worst_lag * 1000, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "stage_seconds": stages,
    }


def ingest_in_child(
    tokens: int, *, source: str = "auto", timeout: float = 3600, text_file: Path | None = None
) -> dict[str, Any]:
    """`measure_ingest` in a fresh interpreter; its last stdout line is the JSON result."""
    with tempfile.TemporaryDirectory(prefix="raptor-bench-") as scratch:
        command = [sys.executable, "-m", "raptor_tools.bench_ingest", str(tokens), scratch, source]
        command += [str(text_file)] if text_file else []
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise click.ClickException(
            f"The ingest benchmark at {tokens} tokens failed: {done.stderr.strip().splitlines()[-1:]}"
        )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    # the OS's own record of the largest child so far: a check on the child's self-report
    figures["children_max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    return figures


def _child_main(argv: list[str]) -> None:
    """Entry of the child process: `python -m raptor_tools.bench_ingest TOKENS DATA_DIR SOURCE [TEXT_FILE]`."""
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    tokens, data_dir, source = int(argv[0]), Path(argv[1]), argv[2]
    text = Path(argv[3]).read_text(encoding="utf-8") if len(argv) > 3 else None
    print(json.dumps(measure_ingest(tokens, data_dir, source=source, text=text)), flush=True)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
