"""How long drawing a tree takes and how big the PNG is, from a small tree to 20,000 leaves.

Embedding and clustering 20k chunks would take many minutes, so the big trees are synthetic: leaves
in documents, each layer grouping a few nodes of the one below (some in two groups, as RAPTOR's soft
clustering does), until at most three nodes remain, and a cross-document layer over the documents'
tops, written straight into a real store with `Store.commit_document`. `--data-dir D --kb K` also
measures a real knowledge base. The picture is what `raptor tree --png` and the bot send.

Run: `python -m benchmarks.tree_picture [--leaves 1100,15700,20000] [--out DIR]`.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from raptor_engine.config import Settings  # noqa: E402
from raptor_engine.engine import Engine  # noqa: E402
from raptor_engine.storage.records import NewNode
from raptor_engine.storage.store import Store  # noqa: E402

STOP_NODES = 3
TWO_PARENTS = 0.15  # share of nodes soft clustering puts in a second cluster


def _node(key: int, layer: int, kind: str, children: list[int] | None = None) -> NewNode:
    return NewNode(
        key=key,
        layer=layer,
        kind=kind,
        text=f"{kind} {key}",
        tokens=100 if kind == "leaf" else 28,
        embedding=np.zeros(8, dtype=np.float32),
        children=children or [],
        start=key * 500 if kind == "leaf" else None,
        end=key * 500 + 499 if kind == "leaf" else None,
    )


def _clusters(count: int, rng: random.Random) -> list[list[int]]:
    """Groups of 4-8 positions of a layer, drawn from nearby positions, a few positions in two groups."""
    order = list(range(count))
    for i in range(count):  # similar chunks sit near each other, but not only next to each other
        j = min(count - 1, i + rng.randrange(0, 12))
        order[i], order[j] = order[j], order[i]
    groups, i = [], 0
    while i < count:
        size = rng.randrange(4, 9)
        groups.append(order[i : i + size])
        i += size
    for position in range(count):
        if rng.random() < TWO_PARENTS and len(groups) > 1:
            extra = groups[rng.randrange(len(groups))]
            if position not in extra:
                extra.append(position)
    return [sorted(g) for g in groups]


def document_nodes(leaves: int, rng: random.Random) -> list[NewNode]:
    """One document's tree: leaves, then summary layers until at most STOP_NODES nodes remain."""
    nodes = [_node(k, 0, "leaf") for k in range(leaves)]
    current = list(nodes)
    while len(current) > STOP_NODES:
        layer = current[0].layer + 1
        parents = [
            _node(len(nodes) + i, layer, "summary", [current[p].key for p in group])
            for i, group in enumerate(_clusters(len(current), rng))
        ]
        if len(parents) >= len(current):
            break
        nodes += parents
        current = parents
    return nodes


def _kb_nodes(tops: list[tuple[int, int]], first_key: int) -> list[NewNode]:
    """The cross-document layer: every five document tops (ids, layers) get one parent, above them all."""
    layer = max(t[1] for t in tops) + 1
    out = []
    for j in range(0, len(tops), 5):
        node = _node(first_key + j // 5, layer, "kb")
        node.stored_children = [t[0] for t in tops[j : j + 5]]
        out.append(node)
    return out


def store_synthetic_tree(data_dir: Path, kb: str, documents: int, leaves: int, seed: int = 7) -> Settings:
    """Write a synthetic tree of `documents` documents and `leaves` leaves in all into a store."""
    rng = random.Random(seed)
    settings = Settings(data_dir=data_dir)
    store = Store(settings.db_path)
    sizes = [leaves // documents + (1 if i < leaves % documents else 0) for i in range(documents)]
    tops: list[tuple[int, int]] = []  # (id, layer) of the stored documents' top nodes
    for i, size in enumerate(sizes):
        nodes = document_nodes(size, rng)
        top_layer = max(n.layer for n in nodes)
        new_tops = [n.key for n in nodes if n.layer == top_layer]
        last = i == len(sizes) - 1

        def kb_layer(
            ids: dict[int, int], new_tops: list[int] = new_tops, layer: int = top_layer, last: bool = last
        ) -> list[NewNode]:
            tops.extend((ids[k], layer) for k in new_tops)
            return _kb_nodes(tops, len(ids)) if last and len(tops) > 1 else []

        document = {
            "name": f"document-{i + 1:03d}.md",
            "sha256": f"{seed:08x}{i:056x}",
            "size": size * 500,
            "format": "md",
            "chunks": size,
            "layers": top_layer + 1,
            "tokens": size * 100,
        }
        build = {"action": "ingest", "document": document["name"]}
        store.commit_document(kb, document, nodes, kb_layer, build)
    store.close()
    return settings


def measure(engine: Engine, kb: str, out_dir: Path | None, label: str) -> dict[str, object]:
    """Render the plain picture and one with a context's worth of highlighted nodes; time both."""
    started = time.perf_counter()
    plain = engine.tree_picture(kb)
    plain_seconds = time.perf_counter() - started
    ids = sorted(engine.store.node_ids(engine.store.require_kb(kb)))
    chosen = random.Random(1).sample(ids, min(12, len(ids)))
    started = time.perf_counter()
    marked = engine.tree_picture(kb, highlight=chosen, cited=chosen[:4], caption="twelve random nodes")
    marked_seconds = time.perf_counter() - started
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{label}.png").write_bytes(plain.png)
        (out_dir / f"{label}-highlighted.png").write_bytes(marked.png)
    return {
        "label": label,
        "nodes": plain.nodes,
        "seconds": plain_seconds,
        "bytes": len(plain.png),
        "highlighted_seconds": marked_seconds,
        "highlighted_bytes": len(marked.png),
        "binned": plain.binned,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaves", default="1100,15700,20000", help="synthetic tree sizes, in leaves")
    parser.add_argument("--documents", type=int, default=20, help="documents per synthetic tree")
    parser.add_argument("--data-dir", type=Path, help="also measure this real data directory's --kb")
    parser.add_argument("--kb", help="the real knowledge base to measure")
    parser.add_argument("--out", type=Path, help="write the pictures here")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for leaves in (int(x) for x in args.leaves.split(",")):
            started = time.perf_counter()
            settings = store_synthetic_tree(Path(scratch) / str(leaves), "synthetic", args.documents, leaves)
            print(
                f"built a synthetic tree of {leaves:,} leaves in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
            )
            engine = Engine(settings)
            rows.append(measure(engine, "synthetic", args.out, f"synthetic-{leaves}"))
            engine.close()
    if args.data_dir and args.kb:
        engine = Engine(Settings(data_dir=args.data_dir))
        rows.append(measure(engine, args.kb, args.out, f"real-{args.kb}"))
        engine.close()
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'tree':<22} {'nodes':>7} {'render s':>9} {'PNG kB':>7} {'highlighted s':>14} {'PNG kB':>7}")
    for r in rows:
        print(
            f"{r['label']:<22} {r['nodes']:>7,} {r['seconds']:>9.2f} {r['bytes'] / 1000:>7.0f} "
            f"{r['highlighted_seconds']:>14.2f} {r['highlighted_bytes'] / 1000:>7.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
