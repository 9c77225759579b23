"""Clustering: real UMAP and Gaussian mixtures (checked against scikit-learn's) on structured embeddings, plus one run on real model embeddings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from raptor_engine.tree.cluster import _soft_gmm_groups, cluster_nodes, contiguous_groups


def _blobs(sizes: list[int], dim: int = 32, spread: float = 0.05, seed: int = 0) -> np.ndarray:
    """Unit vectors in well separated groups, in order: first sizes[0] from blob 0, then blob 1, ..."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(len(sizes), dim))
    rows = [centers[k] + spread * rng.normal(size=(n, dim)) for k, n in enumerate(sizes)]
    data = np.vstack(rows)
    return data / np.linalg.norm(data, axis=1, keepdims=True)


def _covered(clusters: list[list[int]], count: int) -> bool:
    return sorted({p for c in clusters for p in c}) == list(range(count))


def test_blobs_are_separated_and_every_node_is_covered():
    data = _blobs([15, 15, 15])
    result = cluster_nodes(data, [10] * 45)
    assert result.method == "gmm"
    assert _covered(result.clusters, 45)
    assert all(c == sorted(c) for c in result.clusters)
    for cluster in result.clusters:
        assert len({p // 15 for p in cluster}) == 1, f"cluster mixes blobs: {cluster}"


def test_same_input_gives_same_clusters():
    data = _blobs([20, 12, 18], seed=3)
    tokens = [30] * 50
    first = cluster_nodes(data, tokens, max_cluster_tokens=400)
    second = cluster_nodes(data.copy(), list(tokens), max_cluster_tokens=400)
    assert first.clusters == second.clusters
    assert first.method == second.method


def test_clusters_are_ordered_by_smallest_member():
    result = cluster_nodes(_blobs([10, 10, 10], seed=5), [10] * 30)
    firsts = [c[0] for c in result.clusters]
    assert firsts == sorted(firsts)


def test_point_between_two_mixture_components_joins_both():
    # UMAP usually pulls an in-between point firmly into one blob, so soft membership is tested on
    # the mixture step itself: in this symmetric 2-D space the middle point's posterior is ~0.5 for each component.
    rng = np.random.default_rng(1)
    left = rng.normal(loc=(-1.2, 0.0), scale=0.6, size=(30, 2))
    right = -left  # a mirror image, so the origin is equally likely under both components
    reduced = np.vstack([left, right, [[0.0, 0.0]]])
    groups = _soft_gmm_groups(reduced, limit=2, threshold=0.1, seed=224)
    assert len(groups) == 2
    assert all(60 in g for g in groups)
    assert sorted({p for g in groups for p in g}) == list(range(61))
    hard = _soft_gmm_groups(reduced, limit=2, threshold=0.9, seed=224)
    assert sum(60 in g for g in hard) == 1  # no posterior passes 0.9, so only its argmax keeps it


def test_every_cluster_fits_the_token_budget():
    data = _blobs([30, 30], spread=0.3, seed=2)
    tokens = [100 + (i % 7) * 20 for i in range(60)]
    result = cluster_nodes(data, tokens, max_cluster_tokens=700)
    assert _covered(result.clusters, 60)
    for cluster in result.clusters:
        assert sum(tokens[p] for p in cluster) <= 700


def test_identical_embeddings_with_big_tokens_terminate_in_contiguous_groups():
    data = np.tile(_blobs([1], seed=4), (40, 1))
    tokens = [900] * 40
    result = cluster_nodes(data, tokens, max_cluster_tokens=3500)
    assert result.method == "contiguous"
    assert _covered(result.clusters, 40)
    assert all(sum(tokens[p] for p in c) <= 3500 for c in result.clusters)
    assert result.clusters[0] == [0, 1, 2]
    assert any("identical" in note for note in result.notes)


def test_identical_embeddings_within_budget_form_one_cluster():
    data = np.tile(_blobs([1], seed=6), (12, 1))
    result = cluster_nodes(data, [10] * 12)
    assert result.clusters == [list(range(12))]
    assert result.method == "single"
    assert result.notes


def test_near_identical_embeddings_count_as_identical():
    rng = np.random.default_rng(8)
    data = np.tile(_blobs([1], seed=8), (20, 1)) + 1e-7 * rng.normal(size=(20, 32))
    result = cluster_nodes(data, [10] * 20)
    assert result.clusters == [list(range(20))]


def test_repeated_chunks_share_a_cluster():
    pair = _blobs([1, 1], seed=9)
    data = np.vstack([pair[[0]]] * 10 + [pair[[1]]] * 10 + [pair[[0]]] * 5)
    result = cluster_nodes(data, [10] * 25)
    assert result.clusters == [list(range(10)) + list(range(20, 25)), list(range(10, 20))]
    assert result.method == "distinct"
    assert "2 distinct embeddings" in result.notes[0]


def test_a_node_larger_than_the_budget_stands_alone():
    data = _blobs([6, 6], seed=7)
    tokens = [50] * 12
    tokens[3] = 5000
    result = cluster_nodes(data, tokens, max_cluster_tokens=300)
    assert [3] in result.clusters
    for cluster in result.clusters:
        assert cluster == [3] or sum(tokens[p] for p in cluster) <= 300


@pytest.mark.parametrize("count", [1, 2, 3])
def test_tiny_inputs_give_one_cluster(count):
    result = cluster_nodes(_blobs([count], seed=count), [20] * count)
    assert result.clusters == [list(range(count))]
    assert result.method == "single"
    assert "too few" in result.notes[0]


def test_tiny_input_over_budget_is_cut_contiguously():
    result = cluster_nodes(_blobs([3]), [300, 300, 300], max_cluster_tokens=500)
    assert result.clusters == [[0], [1], [2]]
    assert result.method == "contiguous"


def test_four_and_five_nodes_do_not_crash():
    for count in (4, 5):
        result = cluster_nodes(_blobs([2, count - 2], seed=count), [10] * count)
        assert _covered(result.clusters, count)


def test_empty_input():
    result = cluster_nodes(np.zeros((0, 8)), [])
    assert result.clusters == []


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError):
        cluster_nodes(np.zeros((3, 8)), [1, 2])


def test_contiguous_groups_fit_the_budget_in_order():
    assert contiguous_groups([3, 3, 3, 3], 6) == [[0, 1], [2, 3]]
    assert contiguous_groups([10, 1, 1], 5) == [[0], [1, 2]]
    assert contiguous_groups([], 5) == []


def test_contiguous_groups_respect_max_groups():
    groups = contiguous_groups([1] * 10, 2, max_groups=3)
    assert len(groups) == 3
    assert [p for g in groups for p in g] == list(range(10))


TOPICS = {
    "cooking": [
        "Knead the bread dough for ten minutes until it becomes smooth and elastic.",
        "Simmer the tomato sauce slowly with garlic, basil and olive oil.",
        "Preheat the oven before baking the chocolate cake for forty minutes.",
        "Season the roast chicken with salt, pepper and fresh rosemary.",
        "Whisk the eggs and sugar together before folding in the flour.",
        "Fry the onions in butter until they turn golden and sweet.",
        "A sharp chef's knife makes chopping vegetables quick and safe.",
        "Let the risotto rest for two minutes before serving it with parmesan.",
    ],
    "astronomy": [
        "Jupiter is the largest planet in the solar system and has dozens of moons.",
        "A telescope collects light from distant galaxies and nebulae.",
        "The Andromeda galaxy is moving toward the Milky Way.",
        "Neutron stars form when massive stars collapse after a supernova.",
        "Saturn's rings are made of ice and rock orbiting the planet.",
        "Astronomers measure the distance to stars using parallax.",
        "A black hole's gravity is so strong that not even light escapes it.",
        "The Hubble telescope photographed thousands of faint galaxies.",
    ],
    "football": [
        "The striker scored a goal in the final minute of the match.",
        "The goalkeeper saved a penalty kick to win the championship.",
        "The football team trained on the pitch before the cup final.",
        "The referee showed a red card after a dangerous tackle.",
        "Fans sang in the stadium as the midfielder passed the ball forward.",
        "The coach changed the formation at half time and the team scored twice.",
        "The league title was decided on goal difference this season.",
        "The winger crossed the ball and the defender headed it clear.",
    ],
}


def test_real_embeddings_separate_topics(embedder):
    texts = [t for sentences in TOPICS.values() for t in sentences]
    topic_of = [name for name, sentences in TOPICS.items() for _ in sentences]
    data = embedder.embed(texts)
    result = cluster_nodes(data, [20] * len(texts))
    assert _covered(result.clusters, len(texts))
    mixed = [c for c in result.clusters if len({topic_of[p] for p in c}) > 1]
    assert not mixed, [[topic_of[p] for p in c] for c in mixed]
    assert len(result.clusters) >= 3


# ---- no per-process compile wait ---------------------------------------------------------------

_CHILD = """
import json, sys
from pathlib import Path
from raptor_engine.tree import cluster
cluster.use_compile_cache(Path(sys.argv[1]))
umap = cluster.import_umap()
cluster.warm_up()
kernels = [umap.layouts._nb_optimize_layout_euclidean_single_epoch, umap.umap_.smooth_knn_dist,
           umap.umap_.compute_membership_strengths, umap.utils.tau_rand_int]  # the last compiles on import
from raptor_engine.tree import mixture_kernels
kernels += [mixture_kernels.compiled()[name] for name in ("kmeans", "em")]  # the mixture fits' loops
print(json.dumps({k.py_func.__name__: [sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values())]
                  for k in kernels}))
"""


def _warm_up_in_a_new_process(folder) -> dict[str, list[int]]:
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(folder)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _compile_cache_without(folder: Path, kernel: str) -> None:
    """A copy of the compiled code this machine has cached so far (none on a new machine), less `kernel`'s:
    the first process then compiles that kernel (and whatever was never cached) rather than all of umap."""
    import shutil

    from raptor_engine.config import default_cache_dir

    shared = default_cache_dir() / "numba"
    if shared.is_dir():
        shutil.copytree(shared, folder)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.rglob(f"*.{kernel}-*"):
        stale.unlink()


def test_a_second_process_loads_umaps_compiled_code_instead_of_compiling(tmp_path):
    """umap-learn leaves its layout and fuzzy-graph kernels uncached, and compiles functions with a type
    signature on every import; the engine caches all of them on disk, and the warm-up also loads the
    mixture fits' loops from there."""
    folder = tmp_path / "numba"
    _compile_cache_without(folder, "smooth_knn_dist")
    first = _warm_up_in_a_new_process(folder)
    assert first["smooth_knn_dist"][1] > 0, first  # compiled here...
    assert list(folder.rglob("*.smooth_knn_dist-*.nbi")), "the compiled kernel was not written to the cache"
    second = _warm_up_in_a_new_process(folder)  # ...and loaded by the next process, like every other kernel
    assert all(hits > 0 and misses == 0 for hits, misses in second.values()), second


def _count_warm_ups(monkeypatch, folder: Path) -> list[int]:
    """The compile cache moved to `folder`, and UMAP's warm-up fit recorded instead of run."""
    from raptor_engine.tree import cluster

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(cluster, "_compile_cache_dir", folder)
    fits: list[int] = []
    monkeypatch.setattr(cluster, "_umap_reduce", lambda data, **kwargs: fits.append(len(data)))
    monkeypatch.setattr(cluster, "_warm_mixture_code", lambda: None)  # compiled in the cache it was first used with
    return fits


def test_a_machine_compiles_umap_once_and_later_commands_leave_its_import_to_the_clustering(tmp_path, monkeypatch):
    """`compile_once` (what `raptor ingest` runs before any deadline) warms UMAP up on a machine whose
    cache does not hold its code yet, and not again once a warm-up has finished with that cache."""
    from raptor_engine.tree import cluster

    fits = _count_warm_ups(monkeypatch, tmp_path / "numba")
    assert not cluster.umap_compiled()
    cluster.compile_once()
    assert fits == [40] and cluster.umap_compiled()
    cluster.compile_once()
    assert fits == [40]
    monkeypatch.setattr(cluster.sys, "version", cluster.sys.version + " (another build)")
    assert not cluster.umap_compiled()  # another Python (or umap, or numba) has not compiled it
    cluster.compile_once()
    assert fits == [40, 40]


def test_an_unwritable_compile_cache_means_a_warm_up_every_time_not_an_error(tmp_path, monkeypatch):
    from raptor_engine.tree import cluster

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    fits = _count_warm_ups(monkeypatch, blocker / "numba")
    cluster.compile_once()
    cluster.compile_once()
    assert fits == [40, 40] and not cluster.umap_compiled()


_TINY_INGEST_CHILD = """
import sys
from raptor_engine.cli import cli
cli.main(["--data-dir", sys.argv[1], "ingest", sys.argv[2], "--kb", "t", "--quiet"], standalone_mode=False)
print("umap" in sys.modules, "numba" in sys.modules)
"""


def test_a_cold_ingest_of_a_document_too_small_to_cluster_never_imports_umap(tmp_path, monkeypatch):
    """umap's import is half of a cold `raptor ingest` of a short note (~1.5 of 3 CPU s); once this
    machine has compiled UMAP, a document of a few chunks has no layer to cluster and skips it."""
    import os
    import subprocess
    import sys

    from raptor_engine.tree import cluster

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    cluster._mark_compiled()  # as a finished warm-up leaves it
    env = dict(os.environ)
    note = tmp_path / "note.txt"
    note.write_text("The valve V-217 stuck at Marlow on 3 May. The estimated cost is 14,800 euros.\n")
    command = [sys.executable, "-c", _TINY_INGEST_CHILD, str(tmp_path / "data"), str(note)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["False", "False"]


def test_only_a_document_that_clusters_starts_umaps_import():
    from raptor_engine.tree.cluster import MIN_NODES_TO_CLUSTER, may_cluster

    assert [n for n in range(1, 8) if may_cluster(n, stop_nodes=3)] == [4, 5, 6, 7]
    assert [n for n in range(1, 8) if may_cluster(n, stop_nodes=1)] == list(range(MIN_NODES_TO_CLUSTER, 8))
    assert not may_cluster(10, stop_nodes=10)


def test_large_layers_get_their_neighbour_graph_from_hnswlib(monkeypatch):
    """Above UMAP's small-data size no pynndescent (JIT-compiled per process) is used, and the hnswlib
    neighbours match exact search."""
    import umap.umap_

    from raptor_engine.tree import cluster

    rng = np.random.default_rng(3)
    data = rng.normal(size=(cluster._UMAP_SMALL_DATA + 50, 12))
    labels, distances = cluster._hnsw_knn(data, 10, seed=1)
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    exact = np.argsort(-(unit[:300] @ unit.T), axis=1)[:, :10]
    assert (labels[:300, 0] == np.arange(300)).all() and np.allclose(distances[:, 0], 0.0, atol=1e-5)
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(labels[:300], exact, strict=True)])
    assert overlap >= 0.95

    def refuse(*args, **kwargs):
        raise AssertionError("UMAP computed its own neighbour graph")

    monkeypatch.setattr(umap.umap_, "nearest_neighbors", refuse)
    reduced = cluster._umap_reduce(data, n_neighbors=10, n_components=2, seed=1)
    assert reduced.shape == (len(data), 2) and np.all(np.isfinite(reduced))


_PYNNDESCENT_CHILD = """
import sys
import numpy as np
from raptor_engine.tree import cluster
umap = cluster.import_umap()
cluster.warm_up()
rng = np.random.default_rng(5)
result = cluster.cluster_nodes(rng.normal(size=(300, 24)), [40] * 300)
print(len(result.clusters) > 1, "pynndescent" in sys.modules)
print("cosine" in umap.umap_.pynn_named_distances, "pynndescent" in sys.modules)
import pynndescent
print(isinstance(pynndescent.NNDescent.__new__(pynndescent.NNDescent), umap.umap_.NNDescent),
      umap.umap_.pynn_named_distances["cosine"] is pynndescent.distances.named_distances["cosine"])
"""


def test_umaps_import_leaves_pynndescent_out_until_it_is_used():
    """umap imports pynndescent (~0.3 s of a cold start's CPU) for a neighbour search the engine never runs:
    a clustering leaves it unloaded, and umap's first real use of it loads the real module."""
    import subprocess
    import sys

    command = [sys.executable, "-c", _PYNNDESCENT_CHILD]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False", "True", "True", "True", "True"]


@pytest.mark.parametrize("seed", [0, 224])
def test_our_mixture_fits_agree_with_sklearns(seed):
    """The same EM as sklearn's GaussianMixture: iterations, BIC and posteriors agree to rounding, so
    the BIC scan picks the same component counts and the soft memberships are the same."""
    import warnings

    from sklearn.mixture import GaussianMixture

    from raptor_engine.tree.mixture import fit_mixture

    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(5, 10))
    data = np.vstack([c + rng.normal(size=(rng.integers(8, 60), 10)) for c in centers])
    for components in range(1, 9):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = GaussianMixture(n_components=components, random_state=seed, n_init=1).fit(data)
            ours = fit_mixture(data, components, seed=seed)
        assert ours.iterations == theirs.n_iter_ and ours.converged == theirs.converged_
        assert ours.bic(data) == pytest.approx(theirs.bic(data), rel=1e-9)
        np.testing.assert_allclose(ours.predict_proba(data), theirs.predict_proba(data), atol=1e-8)


def test_a_mixture_asks_for_no_more_components_than_rows():
    from raptor_engine.tree.mixture import fit_mixture

    with pytest.raises(ValueError):
        fit_mixture(np.zeros((3, 2)), 4, seed=0)


@pytest.mark.parametrize(("rows", "dim", "seed"), [(40, 10, 224), (300, 10, 0), (500, 3, 7), (25, 2, 224)])
def test_our_kmeans_start_labels_rows_as_sklearns_does(rows, dim, seed):
    """The mixtures start from k-means labels; the same seed must give sklearn's labels, or the scan's
    component counts (and the trees) would change with the implementation."""
    from sklearn.cluster import KMeans

    from raptor_engine.tree.mixture import kmeans_labels

    rng = np.random.default_rng(seed)
    data = rng.normal(size=(rows, dim)) * rng.uniform(0.1, 3.0, size=dim)
    data[: rows // 5] += 4.0  # one dense group among the noise
    for clusters in range(1, 16):
        expected = KMeans(n_clusters=clusters, n_init=1, random_state=np.random.RandomState(seed)).fit(data).labels_
        assert np.array_equal(kmeans_labels(data, clusters, seed=seed), expected), clusters


def test_an_empty_kmeans_cluster_gets_the_row_farthest_from_its_centre():
    from raptor_engine.tree.mixture import _relocate_empty

    data = np.array([[0.0], [0.1], [5.0], [0.2]])
    centres = np.array([[0.1], [9.0]])
    labels = np.array([0, 0, 0, 0])
    assert _relocate_empty(data, centres, labels, 2)
    assert labels.tolist() == [0, 0, 1, 0]
    assert not _relocate_empty(data, centres, labels, 2)


# ---- small clusters: a steady spectral start, fewer layout epochs -----------------------------------


def test_tiny_layers_cluster_the_same_from_call_to_call():
    """ARPACK's restarts (umap's spectral start) draw from a seed kept between calls: on these tiny inputs
    the same call gave different clusters in one process until small graphs were decomposed densely."""
    rng = np.random.default_rng(0)
    for count in (5, 6, 7, 15):
        for _ in range(3):
            data = rng.normal(size=(count, 384))
            data /= np.linalg.norm(data, axis=1, keepdims=True)
            results = {str(cluster_nodes(data, [100] * count).clusters) for _ in range(6)}
            assert len(results) == 1, (count, results)


def test_the_dense_spectral_start_spans_the_same_eigenvectors_as_umaps():
    import scipy.sparse

    from raptor_engine.tree import cluster

    umap = cluster.import_umap()
    original = umap.umap_.spectral_layout.__wrapped__
    rng = np.random.default_rng(4)
    weights = np.triu(rng.uniform(0.1, 1.0, size=(40, 40)) * (rng.uniform(size=(40, 40)) < 0.3), 1)
    weights[np.arange(39), np.arange(1, 40)] = 1.0  # a path through every node: one connected graph
    graph = scipy.sparse.coo_matrix(weights + weights.T)
    dense = cluster.dense_spectral_layout(graph, 3)
    arpack = original(None, graph, 3, np.random.RandomState(0))
    assert dense.shape == arpack.shape == (40, 3)
    # the same eigenvectors up to sign: each ARPACK vector lies in the dense ones' span
    projection = dense @ (dense.T @ arpack)
    assert np.allclose(np.abs(np.sum(dense * arpack, axis=0)), 1.0, atol=1e-3)
    assert np.allclose(projection, arpack, atol=1e-3)


def test_small_clusters_get_fewer_layout_epochs(monkeypatch):
    from raptor_engine.tree import cluster

    umap = cluster.import_umap()
    epochs: list[tuple[int, int]] = []

    class Recording(umap.UMAP):
        def fit_transform(self, data, *args, **kwargs):
            epochs.append((len(data), self.n_epochs))
            return super().fit_transform(data, *args, **kwargs)

    monkeypatch.setattr(umap, "UMAP", Recording)
    cluster._umap_reduce(_blobs([15, 15]), n_neighbors=10, n_components=5, seed=1)
    cluster._umap_reduce(_blobs([150, 150], dim=16), n_neighbors=10, n_components=5, seed=1)
    assert epochs == [(30, cluster._SMALL_LAYOUT_EPOCHS), (300, cluster._UMAP_EPOCHS)]
    assert cluster._SMALL_LAYOUT_EPOCHS < cluster._UMAP_EPOCHS


# ---- the local clusterings of a layer run on two threads -----------------------------------------


def _layer_with_several_global_clusters() -> tuple[np.ndarray, list[int]]:
    """Four topics of 30-45 nodes, each made of sub-topics, so that the global clusters are split locally."""
    rng = np.random.default_rng(7)
    topics = rng.normal(size=(4, 32))
    rows = [
        topic + 0.35 * sub + 0.05 * rng.normal(size=(count, 32))
        for topic, count in zip(topics, (30, 36, 40, 45), strict=True)
        for sub in rng.normal(size=(3, 32))
    ]
    data = np.vstack(rows)
    return data / np.linalg.norm(data, axis=1, keepdims=True), [40] * len(data)


def test_local_clusterings_run_on_the_thread_pool_and_give_the_same_clusters(monkeypatch):
    """With two threads the local UMAP + mixture fits of one layer run on the pool's threads, and the
    clusters and notes are the ones a single thread gives (each task's notes come back in order)."""
    import threading

    from raptor_engine.tree import cluster

    data, tokens = _layer_with_several_global_clusters()
    monkeypatch.setattr(cluster, "cluster_threads", lambda: 1)
    alone = cluster_nodes(data, tokens, max_cluster_tokens=800)

    reducing = cluster._umap_reduce
    threads: list[str] = []

    def recording(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return reducing(*args, **kwargs)

    monkeypatch.setattr(cluster, "_umap_reduce", recording)
    monkeypatch.setattr(cluster, "cluster_threads", lambda: 2)
    pooled = cluster_nodes(data, tokens, max_cluster_tokens=800)
    assert pooled.clusters == alone.clusters and pooled.notes == alone.notes
    assert pooled.method == alone.method == "gmm"
    local = [name for name in threads if name.startswith("cluster")]
    assert len(local) >= 2, threads  # the global fits run on the calling thread, the local ones on the pool
    assert len(local) == len(threads) - sum(1 for name in threads if name == threading.current_thread().name)


def test_the_pool_takes_the_largest_local_clusterings_first_and_they_come_back_in_order():
    """A layer's local clusterings are queued largest first (a large one left for last would run alone
    while the other thread idles); their groups are still returned in the global clusters' order."""
    from concurrent.futures import Executor, Future

    from raptor_engine.tree import cluster

    started: list[int] = []

    class InOrder(Executor):
        def submit(self, fn, *args, **kwargs):
            future: Future = Future()
            future.set_result(fn(*args, **kwargs))
            return future

    class Job(cluster._ClusterJob):
        def local_groups(self, data, members):
            started.append(len(members))
            return [members], [f"{len(members)} nodes"]

    job = Job(
        embeddings=np.zeros((12, 4)), token_counts=[1] * 12, budget=100, threshold=0.1, dim=2,
        max_clusters=5, seed=1, pool=InOrder(),
    )
    global_groups = [[0, 1], [2, 3, 4, 5], [6], [7, 8, 9], [10, 11]]
    results = list(job.each_local(job.embeddings, global_groups))
    assert started == [4, 3, 2, 2, 1]  # largest first, ties in the global clusters' order
    assert [groups for groups, _ in results] == [[members] for members in global_groups]
    assert [notes for _, notes in results] == [[f"{len(members)} nodes"] for members in global_groups]


def test_the_pool_threads_see_the_builds_budget(monkeypatch):
    """`checkpoint()` in a local clustering stops the build: each task runs in a copy of the caller's context."""
    import threading

    from raptor_engine.ingest.budget import BuildBudget, current_budget
    from raptor_engine.tree import cluster

    data, tokens = _layer_with_several_global_clusters()
    monkeypatch.setattr(cluster, "cluster_threads", lambda: 2)
    seen: list[tuple[str, bool]] = []
    checking = cluster.checkpoint

    def recording() -> None:
        seen.append((threading.current_thread().name, current_budget() is budget))
        checking()

    monkeypatch.setattr(cluster, "checkpoint", recording)
    budget = BuildBudget("layer.txt", seconds=600, memory_mb=100_000)
    with budget.active():
        cluster_nodes(data, tokens, max_cluster_tokens=800)
    assert any(name.startswith("cluster") for name, _ in seen)
    assert all(active for _, active in seen)


def test_cluster_threads_is_one_or_two(monkeypatch):
    from raptor_engine.tree import cluster

    monkeypatch.setattr(cluster.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert cluster.cluster_threads() == 1
    monkeypatch.setattr(cluster.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert cluster.cluster_threads() == 2


def test_the_layout_epoch_releases_the_gil_and_lays_out_as_umaps_own():
    """The layout kernel is umap's own function compiled with nogil=True: the same layout as umap's
    compilation of it, so the clusters do not change."""
    import numba

    from raptor_engine.tree import cluster

    umap = cluster.import_umap()
    kernel = umap.layouts._nb_optimize_layout_euclidean_single_epoch
    assert kernel.targetoptions.get("nogil") is True
    data = _blobs([30, 30, 30], seed=4)
    ours = cluster._umap_reduce(data, n_neighbors=10, n_components=5, seed=1)
    umaps = numba.njit(kernel.py_func, fastmath=True, parallel=False)
    try:
        umap.layouts._nb_optimize_layout_euclidean_single_epoch = umaps
        theirs = cluster._umap_reduce(data, n_neighbors=10, n_components=5, seed=1)
    finally:
        umap.layouts._nb_optimize_layout_euclidean_single_epoch = kernel
    assert np.array_equal(ours, theirs)


def _scripted_fits(monkeypatch, bics: list[float]) -> list[tuple[int, str]]:
    """Make each mixture fit of k components score `bics[k - 1]`; returns the (k, thread) of every fit."""
    import threading

    from raptor_engine.tree import cluster

    fitted: list[tuple[int, str]] = []

    def scripted(reduced, components, seed):
        fitted.append((components, threading.current_thread().name))
        return cluster.fit_mixture(reduced, 1, seed=seed), bics[components - 1]

    monkeypatch.setattr(cluster, "_fit_with_bic", scripted)
    return fitted


def test_the_bic_scan_stops_after_four_counts_without_a_new_lowest(monkeypatch):
    """BIC 50, 20, 30, 25, 19, 40, 35, 36, 38, 5: the lowest after 4 counts without improvement is 19 (k=5),
    found although BIC rose and fell on the way; the 5 at k=10 is beyond the stop (BIC never rose 3 times
    in a row, so the rises alone would have scanned on to it)."""
    from raptor_engine.tree import cluster

    reduced = np.random.default_rng(0).normal(size=(40, 3))
    bics = [50, 20, 30, 25, 19, 40, 35, 36, 38, 5]
    chosen: list[float] = []
    fitted = _scripted_fits(monkeypatch, bics)
    original = cluster._mixture_fits

    def recording(*args):
        for model, bic in original(*args):
            chosen.append(bic)
            yield model, bic

    monkeypatch.setattr(cluster, "_mixture_fits", recording)
    cluster._best_mixture_by_bic(reduced, limit=10, seed=1)
    assert [k for k, _ in fitted] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert chosen == bics[:9]


def test_the_bic_scan_stops_after_three_rises(monkeypatch):
    from raptor_engine.tree import cluster

    reduced = np.random.default_rng(0).normal(size=(40, 3))
    fitted = _scripted_fits(monkeypatch, [10, 5, 6, 7, 8, 1])
    cluster._best_mixture_by_bic(reduced, limit=6, seed=1)
    assert [k for k, _ in fitted] == [1, 2, 3, 4, 5]


def test_a_pooled_bic_scan_fits_one_count_ahead_and_chooses_the_same(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from raptor_engine.tree import cluster

    rng = np.random.default_rng(2)
    reduced = np.vstack([c + 0.3 * rng.normal(size=(60, 4)) for c in rng.normal(scale=4.0, size=(5, 4))])
    alone = cluster._best_mixture_by_bic(reduced, limit=20, seed=3)
    with ThreadPoolExecutor(2, thread_name_prefix="cluster") as pool:
        pooled = cluster._best_mixture_by_bic(reduced, limit=20, seed=3, pool=pool)
    assert pooled.n_components == alone.n_components
    assert np.array_equal(pooled.means, alone.means) and np.array_equal(pooled.weights, alone.weights)

    fitted = _scripted_fits(monkeypatch, [9, 8, 7, 6, 7, 8, 9, 10, 11, 12, 13])
    with ThreadPoolExecutor(2, thread_name_prefix="cluster") as pool:
        cluster._best_mixture_by_bic(reduced, limit=11, seed=3, pool=pool)
    counts = sorted(k for k, _ in fitted)
    assert counts[:7] == [1, 2, 3, 4, 5, 6, 7] and len(counts) <= 8  # 3 rises stop it; at most one count more
    assert all(name.startswith("cluster") for _, name in fitted)


# ---- the neighbour lists and distinct rows are found without sorting whole rows --------------------


def test_the_partitioned_knn_gives_umaps_own_neighbours_with_ties_and_infinities():
    """`stable_knn_indices` replaces umap's `fast_knn_indices` (a stable sort of every row): the same
    columns in the same order, also where the k-th distance is shared by several columns (ties go to the
    lower column) and where rows hold infinite distances."""
    from raptor_engine.tree import cluster

    umap = cluster.import_umap()
    assert umap.umap_.fast_knn_indices is cluster.stable_knn_indices
    original = umap.utils.fast_knn_indices
    rng = np.random.default_rng(11)
    for trial in range(60):
        count = int(rng.integers(2, 120))
        neighbors = int(rng.integers(1, count + 1))
        distances = rng.normal(size=(count, count))
        if trial % 2:
            distances = np.round(distances, 1)  # many equal values, some at the k-th place
        if trial % 3 == 0:
            distances[rng.uniform(size=distances.shape) < 0.3] = np.inf
        ours = cluster.stable_knn_indices(distances, neighbors)
        assert ours.dtype == np.int32
        assert np.array_equal(ours, original(distances, neighbors)), (trial, count, neighbors)
    ties = np.zeros((3, 6))
    assert cluster.stable_knn_indices(ties, 2).tolist() == [[0, 1]] * 3


def test_a_layout_with_the_partitioned_knn_is_umaps_own_layout():
    """On a layer with exact duplicate distances (repeated rows' neighbours tie), UMAP's projection is
    bit for bit the one umap's own full-sort neighbour search gives."""
    from raptor_engine.tree import cluster

    umap = cluster.import_umap()
    data = _blobs([40, 40, 40], seed=6)
    data = np.vstack([data, data[:20]])  # repeated rows: equal distances at every rank
    ours = cluster._umap_reduce(data, n_neighbors=12, n_components=5, seed=1)
    try:
        umap.umap_.fast_knn_indices = umap.utils.fast_knn_indices
        theirs = cluster._umap_reduce(data, n_neighbors=12, n_components=5, seed=1)
    finally:
        umap.umap_.fast_knn_indices = cluster.stable_knn_indices
    assert np.array_equal(ours, theirs)


def test_distinct_rows_are_found_in_first_seen_order_up_to_float_noise():
    from raptor_engine.tree.cluster import _IDENTICAL_TOLERANCE, _unique_rows

    rng = np.random.default_rng(2)
    base = rng.integers(-1000, 1000, size=(5, 8)) * _IDENTICAL_TOLERANCE  # on the rounding grid
    order = [3, 0, 3, 1, 4, 0, 2, 2, 1]
    noise = rng.uniform(-0.01, 0.01, size=(len(order), 8)) * _IDENTICAL_TOLERANCE
    data = base[order] + noise * (np.arange(len(order)) % 2)[:, None]  # every other row a little off
    unique, inverse = _unique_rows(data)
    seen = list(dict.fromkeys(order))  # 3, 0, 1, 4, 2
    firsts = [order.index(k) for k in seen]
    assert np.array_equal(unique, data[firsts])
    assert inverse.tolist() == [seen.index(k) for k in order]
