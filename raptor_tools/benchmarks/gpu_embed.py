"""Embedding throughput on this machine's device: chunks per second, the old batching against the new.

The work is the issue's: N chunks of ~100 tokens (bench text, chunked as an ingest chunks it),
embedded by `Embedder.embed` once with a CPU's batches (1,024 padded tokens, tokenized on the calling
thread) and once as the embedder sizes them for the device it found (on a GPU: 64k-token batches, the
next batches tokenized on several threads while the device runs the current one). The vectors of both
are checked against torch fp32 on the CPU (cosine, a sample). On a machine without a GPU it measures
the CPU runtime the same way, labelled so.

Run: `python -m raptor_tools.benchmarks.gpu_embed [--chunks 20000] [--backend torch] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from raptor_engine.tree.embed import DEFAULT_MODEL, Embedder  # noqa: E402
from raptor_engine.tree.embed_runtime import cosines  # noqa: E402

CHUNK_TOKENS = 100
SAMPLE = 500  # chunks checked against torch fp32 on the CPU
CPU_BATCH_TOKENS = 1024  # the CPU's batches: what a GPU worker used before batches were sized for it


def chunk_texts(count: int, embedder: Embedder) -> list[str]:
    """`count` chunks of ~CHUNK_TOKENS tokens, as an ingest cuts them (repeating the text as needed)."""
    from raptor_tools.bench_cold import chunk_texts as ingest_chunks
    from raptor_tools.bench_ingest import bench_text

    texts = ingest_chunks(
        bench_text(min(count, 5_000) * CHUNK_TOKENS, embedder.count_tokens_batch), embedder, CHUNK_TOKENS
    )
    # Numbered copies past the text's own chunks, so no two texts are the same string.
    return [texts[i % len(texts)] + ("" if i < len(texts) else f" ({i})") for i in range(count)]


def chunks_per_second(embedder: Embedder, texts: list[str], repeat: int) -> tuple[float, np.ndarray]:
    """The best of `repeat` timed runs (after one warm-up batch), and the vectors."""
    embedder.embed(texts[:256])
    best, vectors = float("inf"), np.zeros((0, embedder.dim), dtype=np.float32)
    for _ in range(repeat):
        started = time.perf_counter()
        vectors = embedder.embed(texts)
        best = min(best, time.perf_counter() - started)
    return len(texts) / best, vectors


def device_name(embedder: Embedder) -> str:
    if not embedder.on_gpu:
        return f"CPU ({os.cpu_count()} cores)"
    import torch

    return torch.cuda.get_device_name(0)


def measure(chunks: int, backend: str, repeat: int) -> dict[str, Any]:
    device = Embedder(DEFAULT_MODEL, backend=backend)
    texts = chunk_texts(chunks, device)
    new_rate, new_vectors = chunks_per_second(device, texts, repeat)
    old = Embedder(DEFAULT_MODEL, backend=backend, tokenize_threads=0)
    old.batch_tokens, old.batch_size, old.tokenize_threads = CPU_BATCH_TOKENS, 64, 0
    old_rate, old_vectors = chunks_per_second(old, texts, repeat)
    reference = Embedder(DEFAULT_MODEL, backend="torch", use_gpu=False).embed(texts[:SAMPLE])
    return {
        "device": device_name(device),
        "runtime": device.backend,
        "chunks": len(texts),
        "tokens_per_chunk": round(
            sum(device.count_tokens_batch(texts[:SAMPLE])) / min(SAMPLE, len(texts)), 1
        ),
        "cpu_batches": {
            "batch_tokens": CPU_BATCH_TOKENS,
            "tokenize_threads": 0,
            "chunks_per_s": round(old_rate),
        },
        "device_batches": {
            "batch_tokens": device.batch_tokens,
            "tokenize_threads": device.tokenize_threads,
            "chunks_per_s": round(new_rate),
        },
        "speedup": round(new_rate / old_rate, 2),
        "cosine_vs_cpu_torch_fp32_min": {
            "device_batches": round(float(cosines(new_vectors[:SAMPLE], reference).min()), 6),
            "cpu_batches": round(float(cosines(old_vectors[:SAMPLE], reference).min()), 6),
        },
        "load_average": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument(
        "--backend", default="torch", help="torch (the default: a GPU worker's), onnx, onnx-int8"
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    figures = measure(args.chunks, args.backend, args.repeat)
    print(
        f"{figures['device']}, {figures['runtime']}: {figures['chunks']:,} chunks of ~{figures['tokens_per_chunk']} "
        f"tokens: {figures['cpu_batches']['chunks_per_s']:,} chunks/s with 1,024-token batches tokenized inline, "
        f"{figures['device_batches']['chunks_per_s']:,} chunks/s with {figures['device_batches']['batch_tokens']:,}-token "
        f"batches and {figures['device_batches']['tokenize_threads']} tokenizing threads ({figures['speedup']}x); "
        f"worst cosine vs torch fp32 on the CPU {figures['cosine_vs_cpu_torch_fp32_min']['device_batches']}"
    )
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
