"""A saved hnswlib index is derived from SQLite, so a file pair that does not fit the store (a `.json` stating
another vector size, a `.hnsw` with a flipped byte in its links) must be rebuilt from SQLite, never crash
the process: hnswlib takes the vector size from its caller and follows its link lists unchecked. Each
hostile load runs in a child process, so that on the code before it dies (SIGABRT, SIGSEGV) rather than the
test run."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from raptor_engine import Engine
from raptor_engine.storage.index import HNSW_HEADER, IndexManager, _upper_levels, hnsw_file_problem
from raptor_engine.storage.store import Store
from tests.sample_texts import RAILWAY
from tests.unhurried import unhurried_settings

ROOT = Path(__file__).resolve().parents[1]

# In the child: load the knowledge base's index as the engine does, search it, and remove a node (its vector
# zeroed in the index, as a `forget` does), printing what the index holds after.
CHILD = """
import json, sys
import numpy as np
from pathlib import Path
from raptor_engine.storage.index import IndexManager, _zero_and_delete
from raptor_engine.storage.store import Store
data = Path(sys.argv[1])
store = Store(data / "raptor.db")
manager = IndexManager(store, data / "indices")
built = manager.get(1)
query = np.random.default_rng(0).random(built.dim, dtype=np.float32)
built.search(query, 5, 50)
_zero_and_delete(built.index, [min(built.ids)], built.dim)
built.search(query, 5, 50)
print(json.dumps({"dim": built.dim, "nodes": len(built.ids)}))
"""


@pytest.fixture(scope="module")
def saved(tmp_path_factory, embedder) -> Path:
    """A data directory whose knowledge base 1 holds two documents, its index saved beside it."""
    data = tmp_path_factory.mktemp("index-files") / "data"
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    asyncio.run(engine.ingest("notes", "railway.md", RAILWAY.encode()))
    asyncio.run(engine.ingest("notes", "bees.md", (ROOT / "raptor_tools/samples/bees.md").read_bytes()))
    engine.close()
    return data


def _copy(saved: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    subprocess.run(["cp", "-a", str(saved), str(data)], check=True)
    return data


def _load_in_a_child(data: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", CHILD, str(data)], capture_output=True, text=True, env=env, timeout=120)


def test_an_index_saved_by_the_engine_fits_its_store(saved):
    ids = json.loads((saved / "indices" / "kb-1.json").read_text())["ids"]
    assert hnsw_file_problem(saved / "indices" / "kb-1.hnsw", 384, 384, len(ids)) is None


@pytest.mark.parametrize("dim", [384 * 64, 8])
def test_a_json_that_states_another_vector_size_is_rebuilt_not_trusted(saved, tmp_path, dim):
    """Tried: `dim` 24,576 in the `.json`, then `raptor forget` of one of two documents aborted the process
    ('double free or corruption'; the zeroed vector was written 64 times past its slot), and `doctor` said
    healthy; `ask` refused the knowledge base as if its documents had to be added again."""
    data = _copy(saved, tmp_path)
    meta_path = data / "indices" / "kb-1.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "dim": dim}))
    done = _load_in_a_child(data)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"dim": 384, "nodes": len(meta["ids"])}
    assert "rebuilding it from SQLite" in done.stderr
    assert json.loads(meta_path.read_text())["dim"] == 384  # saved again, as built from the rows


def _flip(path: Path, seed: int) -> None:
    """Flip a few bytes of the graph's links (after the header), as a damaged or crafted file would hold."""
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    for _ in range(rng.choice([1, 4, 32])):
        data[rng.randrange(HNSW_HEADER.size, len(data))] = rng.randrange(256)
    path.write_bytes(bytes(data))


# Seeds whose flips killed the child on the code before (SIGSEGV while loading or searching), found by
# running seeds 1-120 on this fixture's index: 27 died by SIGSEGV and 2 raised hnswlib's RuntimeError; on the
# code now all 120 are refused and rebuilt, or load and answer. Ten of the 27 are kept here.
CRASHED_BEFORE = [4, 5, 6, 16, 17, 19, 20, 24, 30, 34]


@pytest.mark.parametrize("seed", CRASHED_BEFORE)
def test_a_hnsw_file_with_flipped_link_bytes_never_crashes_the_process(saved, tmp_path, seed):
    data = _copy(saved, tmp_path)
    _flip(data / "indices" / "kb-1.hnsw", seed)
    done = _load_in_a_child(data)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert json.loads(done.stdout)["dim"] == 384


# In the child: load the index as the engine does, add nodes to it (as `_catch_up` does for a new document's
# nodes) and find the first of them.
CHILD_ADDS = """
import json, sys
import numpy as np
from pathlib import Path
from raptor_engine.storage.index import IndexManager, extend_hnsw
from raptor_engine.storage.store import Store
data = Path(sys.argv[1])
built = IndexManager(Store(data / "raptor.db"), data / "indices").get(1)
added = np.random.default_rng(0).random((8, built.dim), dtype=np.float32)
extend_hnsw(built.index, np.arange(10**6, 10**6 + 8), added)
print(json.dumps({"found": int(built.index.knn_query(added[0], k=1)[0][0][0])}))
"""
HEADER_FIELDS = (
    "offset0", "most", "count", "per_element", "label_at", "data_at", "level", "enter", "max_m", "max_m0", "m",
    "mult", "ef_construction",
)  # fmt: skip


def _set_header(path: Path, **values: float) -> None:
    raw = bytearray(path.read_bytes())
    fields = dict(zip(HEADER_FIELDS, HNSW_HEADER.unpack_from(raw), strict=True))
    HNSW_HEADER.pack_into(raw, 0, *{**fields, **values}.values())
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("header", [{"m": 0}, {"m": 1000}, {"mult": 1e300}, {"mult": -5.0}, {"mult": float("nan")}])
def test_a_hnsw_header_whose_graph_parameters_do_not_fit_is_rebuilt(saved, tmp_path, header):
    """hnswlib reads M, maxM, maxM0 and the level factor back unchecked and adds the next node by them. Tried: M 0
    killed the process adding a node (SIGSEGV); the others made every add raise ('Not enough memory: addPoint
    failed to allocate linklist', 'Possible memory corruption'), so the knowledge base took no document."""
    data = _copy(saved, tmp_path)
    _set_header(data / "indices" / "kb-1.hnsw", **header)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD_ADDS, str(data)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert json.loads(done.stdout) == {"found": 10**6}
    assert "rebuilding it from SQLite" in done.stderr


def _upper_levels_per_element(raw, at: int, count: int, max_m: int):
    """`_upper_levels` before the review: the same checks, a numpy slice per element (0.51 s of CPU for
    100,000 nodes, three times hnswlib's own load; 0.05 s now)."""
    per_level = (max_m + 1) * 4
    levels = []
    for _ in range(count):
        if at + 4 > len(raw):
            return "ends inside its upper links"
        size = int(raw[at : at + 4].view(np.uint32)[0])
        at += 4
        if size % per_level or at + size > len(raw):
            return "has upper links that do not fit its file"
        if size:
            lists = raw[at : at + size].copy().view(np.uint32).reshape(-1, max_m + 1)
            counts = lists[:, 0] & 0xFFFF
            if int(counts.max()) > max_m or bool((lists[:, 1:][np.arange(max_m)[None, :] < counts[:, None]] >= count).any()):
                return "links a node to one it does not hold"
        levels.append(size // per_level)
        at += size
    if at != len(raw):
        return "has bytes after its last element"
    return levels


def test_the_upper_links_are_judged_as_the_per_element_walk_judged_them(tmp_path):
    """On an index of 3,000 nodes (about 190 with upper levels), whole, with flipped bytes past its level-0
    part (where the upper links are), and cut short or grown: the same levels, or a problem where it found
    one."""
    hnswlib = pytest.importorskip("hnswlib")
    count, dim, max_m = 3000, 8, 8
    index = hnswlib.Index(space="cosine", dim=dim)
    index.init_index(max_elements=count, ef_construction=40, M=max_m)
    index.add_items(np.random.default_rng(1).random((count, dim), dtype=np.float32), np.arange(count))
    path = tmp_path / "i.hnsw"
    index.save_index(str(path))
    whole = path.read_bytes()
    header = HNSW_HEADER.unpack(whole[: HNSW_HEADER.size])
    at = HNSW_HEADER.size + count * header[3]
    variants = [whole, whole[:-1], whole[:-4], whole + b"\0\0\0\0", whole[: at + 2]]
    rng = random.Random(3)
    for _ in range(300):
        data = bytearray(whole)
        for _ in range(rng.choice([1, 2, 8])):
            data[rng.randrange(at, len(data))] = rng.choice([0, 1, 8, 17, 255, rng.randrange(256)])
        variants.append(bytes(data))
    found = {"levels": 0, "problem": 0}
    for data in variants:
        raw = np.frombuffer(data, dtype=np.uint8)
        now, before = _upper_levels(raw, at, count, max_m), _upper_levels_per_element(raw, at, count, max_m)
        assert isinstance(now, str) == isinstance(before, str), (now, before)
        if not isinstance(now, str):
            assert now == before
        found["levels" if not isinstance(now, str) else "problem"] += 1
    print(found)
    assert found["levels"] >= 1 and found["problem"] >= 50
def _labels(path: Path) -> list[int]:
    """The node id of each element of a saved index, in the file's order (tombstones included)."""
    data = path.read_bytes()
    fields = HNSW_HEADER.unpack_from(data)
    count, per_element, label_offset = fields[2], fields[3], fields[4]
    return [int.from_bytes(data[HNSW_HEADER.size + i * per_element + label_offset :][:8], "little") for i in range(count)]


def _alter_vectors(path: Path, nodes: list[int]) -> None:
    """Replace the vectors (not the links) of the given nodes in a saved index with other unit vectors:
    the file stays well formed, so it loads, and searches rank by the altered values."""
    labels = _labels(path)
    data = bytearray(path.read_bytes())
    fields = HNSW_HEADER.unpack_from(data)
    per_element, offset_data = fields[3], fields[5]
    rng = np.random.default_rng(7)
    for element in (labels.index(node) for node in nodes):
        vector = rng.normal(size=384).astype(np.float32)
        start = HNSW_HEADER.size + element * per_element + offset_data
        data[start : start + 384 * 4] = (vector / np.linalg.norm(vector)).astype(np.float32).tobytes()
    path.write_bytes(bytes(data))


def _top_hits(data: Path, node_ids: list[int]) -> list[float]:
    """The best similarity a search by each node's stored vector (SQLite's) finds: 1.0 (itself, or a node of
    the same text) while the index holds the store's vectors."""
    store = Store(data / "raptor.db")
    try:
        built = IndexManager(store, data / "indices").get(1)
        ids, matrix = store.embeddings(1, ids=node_ids)
        return [round(built.search(vector, 1, 50)[0][1], 4) for vector in matrix]
    finally:
        store.close()


@pytest.mark.parametrize("altered", [1, 5])
def test_doctor_finds_an_index_whose_vectors_are_not_the_stores_and_rebuilds_it(saved, tmp_path, embedder, altered):
    """Tried: a `.hnsw` with some vectors changed (links intact) loaded, ranked those nodes out of their own
    searches, and `doctor` said healthy. Now doctor compares the index's vectors with SQLite's (all of them in
    a knowledge base this small) and rebuilds it."""
    data = _copy(saved, tmp_path)
    ids = json.loads((data / "indices" / "kb-1.json").read_text())["ids"]
    victims = ids[:: max(len(ids) // altered, 1)][:altered]
    expected = _top_hits(data, victims)
    _alter_vectors(data / "indices" / "kb-1.hnsw", victims)
    assert expected == [1.0] * altered
    assert _top_hits(data, victims) != expected  # the attack is real: they rank otherwise

    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        found = engine.doctor(repair=False).problems
        assert found == [
            f"the index of knowledge base 1 holds vectors that are not the store's ({altered} of {len(ids)} compared differ)"
        ]
        report = engine.doctor(repair=True)
        assert report.repaired == found and engine.doctor(repair=False).problems == []
    finally:
        engine.close()
    assert _top_hits(data, victims) == expected


def test_doctor_samples_the_vectors_of_a_large_index(saved, tmp_path, monkeypatch):
    """Past VECTOR_SAMPLE nodes a random sample is compared (cheap at any size): with every vector altered,
    every one sampled differs; the index untouched, none does."""
    monkeypatch.setattr("raptor_engine.storage.index.VECTOR_SAMPLE", 8)
    data = _copy(saved, tmp_path)
    store = Store(data / "raptor.db")
    try:
        assert IndexManager(store, data / "indices").check(1) == []
        _alter_vectors(data / "indices" / "kb-1.hnsw", json.loads((data / "indices" / "kb-1.json").read_text())["ids"])
        assert IndexManager(store, data / "indices").check(1) == [
            "the index of knowledge base 1 holds vectors that are not the store's (8 of 8 compared differ)"
        ]
    finally:
        store.close()
