"""A smoke test of `raptor bench` on tiny sizes: the functions run and report well-formed figures.
Speed itself is never asserted here; the benchmark prints it."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from raptor_engine.cli import cli
from raptor_engine.config import Settings
from raptor_tools import bench, bench_ingest


def test_generated_text_reaches_the_size_with_varied_copies(embedder):
    text = bench_ingest.bench_text(1500, embedder.count_tokens_batch, source="generated")
    paragraphs = text.split("\n\n")
    tokens = embedder.count_tokens_batch(paragraphs)
    assert (
        sum(tokens) >= 1500 and sum(tokens) - tokens[-1] < 1500
    )  # stops at the first paragraph past the size
    sample = bench_ingest.sample().read_text(encoding="utf-8")
    first, second = bench_ingest._varied_copy(sample, 1), bench_ingest._varied_copy(sample, 2)
    assert first != second and first != sample
    assert re.findall(r"\d+", first) != re.findall(r"\d+", sample)  # numbers vary per copy
    assert bench_ingest._varied_copy(sample, 1) == first  # and deterministically


def test_size_lists_and_percentiles():
    assert bench._sizes("10k, 25k,500", ()) == (10_000, 25_000, 500)
    assert bench._sizes(None, (1, 2)) == (1, 2)
    with pytest.raises(Exception, match="sizes"):
        bench._sizes("ten", ())
    values = [float(v) for v in range(1, 21)]  # nearest rank: p95 of 1..20 is the 19th value
    assert bench.percentile(values, 0.95) == 19.0 and bench.percentile(values, 0.5) == 10.0


def test_synthetic_vectors_stay_near_their_real_seed():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(20, 384))
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    vectors, rows = bench.synthetic_vectors(base, 200, np.random.default_rng(1))
    assert vectors.shape == (200, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = np.einsum("ij,ij->i", vectors, base[rows])
    assert similarity.min() > 0.6  # each is mostly its seed, so hnswlib sees real-looking clusters


def test_ingest_measure_on_a_tiny_document(tmp_path, embedder):
    figures = bench_ingest.measure_ingest(1200, tmp_path / "data", embedder=embedder, source="generated")
    assert figures["tokens"] >= 1200 and figures["chunks"] >= 10
    assert figures["nodes"] > figures["chunks"] and figures["layers"]["0"] == figures["chunks"]
    assert figures["ingest_seconds"] > 0 and figures["embed_seconds"] > 0
    assert figures["ratio"] == pytest.approx(figures["ingest_seconds"] / figures["embed_seconds"], rel=0.01)
    assert figures["loop_lag_ms"] >= 0 and figures["peak_rss_mb"] > 100  # the model alone is bigger
    stages = figures["stage_seconds"]
    assert {"load+chunk", "embed", "cluster", "summarise", "store", "index"} <= stages.keys()
    assert sum(stages.values()) == pytest.approx(figures["ingest_seconds"], abs=0.25)


def test_retrieval_measure_and_recall_on_a_small_synthetic_kb(embedder):
    configured = Settings.from_env().hnsw_ef
    results = bench.measure_retrieval(
        (300,), queries=6, embedder=embedder, base_count=40, source="generated", efs=(16, configured)
    )
    (row,) = results
    assert [r["ef"] for r in row["ef_sweep"]] == [16, configured]
    for swept in row["ef_sweep"]:
        assert swept["search_median_ms"] > 0 and 0.0 < swept["recall_at_10"] <= 1.0
    assert row["ef_sweep"][1]["recall_at_10"] == row["recall_at_10"]  # the same ef as retrieval uses
    assert 0 < row["search_median_ms"]
    assert row["nodes"] == 300 and row["queries"] == 6
    assert 0 < row["median_ms"] <= row["p95_ms"] and row["repeat_median_ms"] > 0
    assert 0.9 <= row["recall_at_10"] <= 1.0 and 0.0 < row["recall_at_200"] <= 1.0
    assert 0 < row["context_tokens_median"] <= 2000
    text = bench.render({"machine": "test", "ingest": [], "retrieval": results})
    assert "recall@200" in text and "300" in text and "the same questions again" in text


def test_bench_command_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(
        cli,
        [
            "bench",
            "--skip-ingest",
            "--kb-sizes",
            "50",
            "--queries",
            "3",
            "--source",
            "generated",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["ingest"] == [] and report["retrieval"][0]["nodes"] == 50
    assert "Retrieval" in result.stdout


def test_cold_start_compares_a_real_raptor_ingest_process_with_the_floor(embedder):
    """Floor, cold `raptor ingest` and warm ingest run as separate processes on the same text, and the
    report carries both ratios and each ingest's stages (read from `raptor ingest --json`)."""
    from raptor_tools import bench_cold

    row = bench_cold.measure_cold(700, embedder=embedder, source="generated")
    assert row["chunks"] >= 5 and row["tokens"] >= 700 and row["nodes"] > row["chunks"]
    assert row["floor_seconds"] > 0 and row["cold_seconds"] > 0 and row["floor_cpu_seconds"] > 0
    assert row["ratio"] == pytest.approx(row["cold_seconds"] / row["floor_seconds"], rel=0.01)
    assert row["cpu_ratio"] == pytest.approx(row["cold_cpu_seconds"] / row["floor_cpu_seconds"], rel=0.01)
    for stages in (row["cold_stage_seconds"], row["warm_stage_seconds"]):
        assert {"load+chunk", "embed", "cluster", "summarise", "store", "index"} <= stages.keys()
    assert 0 < row["cold_startup_seconds"] < row["cold_seconds"]
    lines = "\n".join(bench_cold.render_cold([row]))
    assert "floor s" in lines and "cold s" in lines and "warm s" in lines and "start-up" in lines


def test_synthetic_copies_of_a_text_share_no_sentence():
    """The retrieval bench reuses 1,000 real texts for 100k nodes; numbered, no two nodes share a
    sentence, so the fill never skips candidates as copies (which no real knowledge base does)."""
    from raptor_engine.ingest.sentences import sentences_of

    text = "The keeper lit the lamp. Was it late?\nYes! Heading without a stop"
    first, second = bench.numbered_text(text, 1), bench.numbered_text(text, 2)
    assert first == "The keeper lit the lamp (n1). Was it late (n1)?\nYes (n1)! Heading without a stop (n1)"
    assert not {s.key for s in sentences_of(first)} & {s.key for s in sentences_of(second)}
    assert bench.numbered_text("Ends here.", 4) == "Ends here (n4)."
    assert bench.numbered_text("No stop at all", 7) == "No stop at all (n7)"


def test_bench_messages_imports_deletes_and_answers(tmp_path):
    out = tmp_path / "messages.json"
    result = CliRunner().invoke(cli, ["bench", "--messages", "60", "--out", str(out)])
    assert result.exit_code == 0, result.output
    figures = json.loads(out.read_text())["messages"]
    assert figures["messages"] == 60 and figures["documents"] >= 1 and figures["tokens"] > 600
    assert figures["deleted_text_gone"] and figures["new_message_answered"]
    assert figures["bulk_removed"] > 0 and figures["bulk_text_gone"]  # a third of 60, bar alice's
    assert figures["forget_me_removed"] == 15 and figures["forget_me_text_gone"]  # alice wrote every fourth
    assert "Deletion to text gone (store, index and every file's bytes)" in result.stdout
    assert "Forget-me (one author): 15 messages gone" in result.stdout
    assert "New message to answered from it" in result.stdout


def test_the_device_embedding_benchmark_reports_both_batchings_and_their_vectors():
    """`python -m raptor_tools.benchmarks.gpu_embed` on this machine's device (a GPU when present)."""
    from raptor_engine.tree.embed import default_tokenize_threads
    from raptor_tools.benchmarks import gpu_embed

    figures = gpu_embed.main(["--chunks", "40", "--repeat", "1", "--backend", "onnx-int8"])
    assert figures["chunks"] == 40 and 50 <= figures["tokens_per_chunk"] <= 110
    assert figures["cpu_batches"]["chunks_per_s"] > 0 and figures["device_batches"]["chunks_per_s"] > 0
    assert figures["cosine_vs_cpu_torch_fp32_min"]["cpu_batches"] > 0.95  # int8 against torch fp32
    assert figures["device_batches"]["tokenize_threads"] == (
        default_tokenize_threads() if figures["runtime"].endswith("(cuda)") else 0
    )
