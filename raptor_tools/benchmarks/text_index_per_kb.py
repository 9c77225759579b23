"""What one full-text index per knowledge base costs a question, against the one table every knowledge
base of a store shared before (text_index.py).

A store of 10 knowledge bases of 1,000 leaves each (sentences of words drawn from one Zipf-distributed
vocabulary, so the knowledge bases share their words), then a copy of it turned into the shared-table
layout. Each question (five words of that vocabulary, common and rare) is searched in both, alternately:
the per-kb table (`Store.text_search`) and the shared table joined to the knowledge base's nodes (the
query the store ran before). Prints the median and 90th percentile per question, the file sizes and the
time of `text_index_problems` (what `raptor doctor` runs).

Run: `python -m raptor_tools.benchmarks.text_index_per_kb [--kbs 10] [--nodes 1000] [--questions 300]`.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

_ROOT = Path(__file__).resolve().parents[2]  # the checkout, for `python -m` from anywhere
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from raptor_engine.storage.records import NewNode  # noqa: E402
from raptor_engine.storage.store import Store  # noqa: E402
from raptor_engine.storage.text_index import LEGACY_TEXT_INDEX, TOKENIZE, content_view, index_table  # noqa: E402

VOCABULARY = 20_000
WORDS_PER_LEAF = 80
LIMIT = 50  # the hybrid ranking's full-text candidates (Fusion.text_candidates)


def _words(rng: random.Random, count: int) -> list[str]:
    """Words of the shared vocabulary, the commonest most often (Zipf, s = 1.1)."""
    ranks = rng.choices(range(1, VOCABULARY + 1), weights=_WEIGHTS, k=count)
    return [f"w{rank}x" for rank in ranks]


_WEIGHTS = [1 / rank**1.1 for rank in range(1, VOCABULARY + 1)]


def build(path: Path, kbs: int, nodes: int, seed: int) -> list[int]:
    """The store: `kbs` knowledge bases of `nodes` leaves each; returns their ids."""
    rng = random.Random(seed)
    store = Store(path)
    ids = []
    try:
        for kb in range(kbs):
            leaves = [
                NewNode(
                    key=i, layer=0, kind="leaf", text=" ".join(_words(rng, WORDS_PER_LEAF)) + ".",
                    tokens=WORDS_PER_LEAF, embedding=np.ones(4, dtype=np.float32), start=0, end=1,
                )
                for i in range(nodes)
            ]
            document = {"name": f"d{kb}", "sha256": f"{kb:064d}", "size": 1, "format": "txt", "chunks": nodes,
                        "layers": 1, "tokens": nodes * WORDS_PER_LEAF}
            kb_id, _ = store.commit_document(f"kb{kb}", document, leaves, lambda keys: [], {"action": "add"})
            ids.append(kb_id)
    finally:
        store.close()
    return ids


def to_shared_table(path: Path, kb_ids: list[int]) -> None:
    """The layout before: one FTS5 table over every node."""
    conn = sqlite3.connect(path)
    for kb_id in kb_ids:
        conn.execute(f"DROP TABLE {index_table(kb_id)}")
        conn.execute(f"DROP VIEW {content_view(kb_id)}")
    conn.execute(
        f"CREATE VIRTUAL TABLE {LEGACY_TEXT_INDEX} USING fts5(text, content='nodes', content_rowid='id', "
        f"tokenize='{TOKENIZE}')"
    )
    conn.execute(f"INSERT INTO {LEGACY_TEXT_INDEX}({LEGACY_TEXT_INDEX}) VALUES ('rebuild')")
    conn.commit()
    conn.execute("VACUUM")
    conn.close()


def shared_search(conn: sqlite3.Connection, kb_id: int, match: str) -> list[tuple[int, float]]:
    """The query the store ran on the shared table."""
    t = LEGACY_TEXT_INDEX
    return conn.execute(
        f"SELECT n.id, -bm25({t}) FROM {t} JOIN nodes n ON n.id = {t}.rowid "
        f"WHERE {t} MATCH ? AND n.kb_id = ? ORDER BY bm25({t}) LIMIT ?",
        [match, kb_id, LIMIT],
    ).fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kbs", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        per_kb_path, shared_path = Path(folder) / "per_kb.db", Path(folder) / "shared.db"
        kb_ids = build(per_kb_path, args.kbs, args.nodes, args.seed)
        with sqlite3.connect(per_kb_path) as conn:
            conn.execute("VACUUM")
        shutil.copy(per_kb_path, shared_path)
        to_shared_table(shared_path, kb_ids)
        rng = random.Random(args.seed + 1)
        store, shared = Store(per_kb_path), sqlite3.connect(shared_path)
        times: dict[str, list[float]] = {"per-kb": [], "shared": []}
        try:
            for number in range(args.questions):
                kb_id, phrases = rng.choice(kb_ids), sorted(set(_words(rng, 5)))
                match = " OR ".join(f'"{p}"' for p in phrases)
                runs = [("per-kb", store.text_search, (kb_id, phrases, LIMIT)),
                        ("shared", shared_search, (shared, kb_id, match))]
                for name, run, run_args in runs if number % 2 else reversed(runs):
                    started = time.perf_counter()
                    run(*run_args)
                    times[name].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            problems = store.text_index_problems()
            check_s = time.perf_counter() - started
        finally:
            store.close()
            shared.close()
        print(f"{args.kbs} knowledge bases x {args.nodes} leaves of {WORDS_PER_LEAF} words, {args.questions} questions")
        for name, values in times.items():
            values.sort()
            print(f"{name:7s} median {statistics.median(values):.2f} ms, p90 {values[int(len(values) * 0.9)]:.2f} ms")
        print(f"ratio of medians (per-kb / shared): "
              f"{statistics.median(times['per-kb']) / statistics.median(times['shared']):.2f}")
        print(f"file: per-kb {per_kb_path.stat().st_size / 1e6:.1f} MB, shared {shared_path.stat().st_size / 1e6:.1f} MB")
        print(f"text_index_problems (doctor's check of every index): {check_s:.2f} s, {len(problems)} problems")
        opened = {name: _first_query_ms(path) for name, path in (("per-kb", per_kb_path), ("shared", shared_path))}
        print("a new connection's first query (reads the schema): "
              + ", ".join(f"{name} {ms:.2f} ms" for name, ms in opened.items()))


def _first_query_ms(path: Path, repeats: int = 20) -> float:
    """Median time to open a connection and run its first query, which parses the file's schema (one
    view and five tables per knowledge base in the per-kb layout)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        conn = sqlite3.connect(path)
        conn.execute("SELECT count(*) FROM kbs").fetchone()
        conn.close()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


if __name__ == "__main__":
    main()
