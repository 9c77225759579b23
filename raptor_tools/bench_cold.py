"""`raptor bench`'s cold-start comparison: what one `raptor ingest` command costs against the floor.

The floor is a fresh process that only loads the embedding model with torch fp32
(sentence-transformers) and batch-embeds the document's chunks: what any RAPTOR implementation on
that model pays before it has done anything else. Against it run, on the same text and in the same
run: a fresh `raptor ingest` process (the real command, in a new data directory; its stages come
from `raptor ingest --json`), and the warm ingest of `bench_ingest.measure_ingest` (model loaded, UMAP
loaded, in a process of its own). Wall and CPU seconds are both reported: the project machine is
shared, and CPU time moves less with other people's load.

Caches that persist across processes (the ONNX export, UMAP's compiled code) are prepared by one
untimed ingest first: "cold" means a new process, not a new machine.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from .bench_ingest import ROOT, CountBatch, bench_text, evaldata_dir, ingest_in_child

TARGETS = {3_000: 1.5, 100_000: 0.8}  # cold ingest / floor, issue 12
CLI = "from raptor_engine.cli import main; main()"


def cold_text(tokens: int, count_batch: CountBatch, *, source: str = "auto") -> str:
    """The RAPTOR paper's Cinderella story for the small size when the evaluation data has it; else bench text."""
    root = evaldata_dir()
    story = root / "raptor_cinderella" / "documents.jsonl" if root else None
    if tokens <= 5_000 and story and story.is_file() and source != "generated":
        first = story.read_text(encoding="utf-8").splitlines()[0]
        return json.loads(first)["doc_text"]
    return bench_text(tokens, count_batch, source=source)


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def run_timed(command: list[str], *, timeout: float = 3600) -> tuple[float, float, str]:
    """Run a fresh process; its wall seconds (interpreter start included), CPU seconds and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=_env(), cwd=ROOT)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        raise click.ClickException(f"A benchmark process failed ({command[2]}…): {tail[0]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, done.stdout


def chunk_texts(text: str, embedder: Any, chunk_tokens: int) -> list[str]:
    """The chunks `raptor ingest` will embed, so the floor embeds exactly the same texts."""
    from raptor_engine.ingest.chunk import chunk_document
    from raptor_engine.ingest.load import load_document

    doc = load_document("bench.txt", text.encode("utf-8"))
    chunks = chunk_document(
        doc,
        embedder.count_tokens,
        max_tokens=chunk_tokens,
        hard_limit=embedder.max_tokens,
        count_tokens_batch=embedder.count_tokens_batch,
    )
    return [c.text for c in chunks]


def cli_ingest(document: Path, data_dir: Path) -> tuple[float, float, dict[str, Any]]:
    """`raptor ingest DOCUMENT --json` in a new process: wall, CPU, and its result (with stage seconds)."""
    command = [sys.executable, "-c", CLI, "--data-dir", str(data_dir), "ingest", str(document)]
    wall, cpu, out = run_timed([*command, "--kb", "bench", "--json", "--quiet"])
    return wall, cpu, json.loads(out)[0]


def prepare_caches(scratch: Path) -> float:
    """One untimed-in-the-comparison ingest, so the export and compiled code exist; its wall seconds."""
    tiny = scratch / "prepare.txt"
    tiny.write_text("The keeper lit the lamp. " * 40, encoding="utf-8")
    wall, _, _ = cli_ingest(tiny, scratch / "prepare")
    return wall


def measure_cold(tokens: int, *, embedder: Any, source: str = "auto", chunk_tokens: int = 100) -> dict[str, Any]:
    """Floor, cold `raptor ingest` and warm ingest on one text of about `tokens` tokens."""
    with tempfile.TemporaryDirectory(prefix="raptor-bench-cold-") as folder:
        scratch = Path(folder)
        text = cold_text(tokens, embedder.count_tokens_batch, source=source)
        document = scratch / "document.txt"
        document.write_text(text, encoding="utf-8")
        texts = chunk_texts(text, embedder, chunk_tokens)
        (scratch / "chunks.json").write_text(json.dumps(texts), encoding="utf-8")
        prepare = prepare_caches(scratch)
        floor_wall, floor_cpu, _ = run_timed(
            [sys.executable, "-m", "raptor_tools.bench_cold", str(scratch / "chunks.json")]
        )
        cold_wall, cold_cpu, result = cli_ingest(document, scratch / "cold")
        warm = ingest_in_child(tokens, source=source, text_file=document)
    return {
        "target_tokens": tokens,
        "tokens": result["document"]["tokens"],
        "chunks": result["chunks"],
        "nodes": result["nodes"],
        "floor_seconds": round(floor_wall, 2),
        "floor_cpu_seconds": round(floor_cpu, 2),
        "cold_seconds": round(cold_wall, 2),
        "cold_cpu_seconds": round(cold_cpu, 2),
        "ratio": round(cold_wall / floor_wall, 3),
        "cpu_ratio": round(cold_cpu / floor_cpu, 3),
        "target_ratio": TARGETS.get(tokens),
        # process start to the ingest's start: interpreter, imports, opening the store
        "cold_startup_seconds": round(cold_wall - result["seconds"], 2),
        "cold_stage_seconds": result.get("stage_seconds", {}),
        "warm_seconds": warm["ingest_seconds"],
        "warm_embed_only_seconds": warm["embed_seconds"],  # the same chunks, same runtime, in that process
        "warm_stage_seconds": warm["stage_seconds"],
        "prepare_seconds": round(prepare, 2),
        "load_average": round(os.getloadavg()[0], 2),
    }


def _stages(stages: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in stages.items() if v >= 0.05)


def render_cold(rows: list[dict[str, Any]]) -> list[str]:
    """The side-by-side table: floor, cold ingest, warm ingest, and where each ingest's seconds go."""
    lines = [
        "Cold start, fresh processes on the same text (floor: load torch fp32 sentence-transformers, embed the chunks)",
        f"{'tokens':>8} {'chunks':>6} {'floor s':>8} {'cold s':>7} {'ratio':>6} {'floor CPU':>9} {'cold CPU':>8} "
        f"{'CPU ratio':>9} {'warm s':>7} {'target':>7} {'load':>5}",
    ]
    for r in rows:
        target = r["target_ratio"]
        verdict = "-" if target is None else f"{'met' if r['ratio'] <= target else 'NOT met'} <={target}"
        lines.append(
            f"{r['tokens']:>8} {r['chunks']:>6} {r['floor_seconds']:>8.1f} {r['cold_seconds']:>7.1f} "
            f"{r['ratio']:>6.2f} {r['floor_cpu_seconds']:>9.1f} {r['cold_cpu_seconds']:>8.1f} "
            f"{r['cpu_ratio']:>9.2f} {r['warm_seconds']:>7.1f} {verdict:>7} {r['load_average']:>5.1f}"
        )
    for r in rows:
        lines.append(
            f"{r['tokens']:>8} tokens, cold: start-up {r['cold_startup_seconds']:.1f}, "
            f"{_stages(r['cold_stage_seconds'])}; warm: {_stages(r['warm_stage_seconds'])}"
        )
    lines.append(f"(caches prepared first by one untimed ingest: {rows[0]['prepare_seconds']:.1f} s)")
    return lines


def _floor_main(chunks_file: str) -> None:
    """The floor process: `python -m raptor_tools.bench_cold CHUNKS_JSON` (torch fp32, nothing else)."""
    from sentence_transformers import SentenceTransformer

    from raptor_engine.tree.embed import DEFAULT_MODEL, resolve_model_path

    texts = json.loads(Path(chunks_file).read_text(encoding="utf-8"))
    model = SentenceTransformer(resolve_model_path(os.environ.get("RAPTOR_EMBED_MODEL") or DEFAULT_MODEL))
    model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    print(json.dumps({"embedded": len(texts)}), flush=True)


if __name__ == "__main__":
    _floor_main(sys.argv[1])
