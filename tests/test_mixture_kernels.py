"""The mixture fits' numba loops (`mixture_kernels`) against the numpy steps they replace and sklearn.

The BIC scan picks a layer's component counts from these fits, and the soft memberships come from their
posteriors: if the loops drifted from the numpy code (itself checked against sklearn in test_cluster.py),
the trees would change with the implementation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raptor_engine.tree import cluster, mixture, mixture_kernels


def _grouped(rows: int, dim: int, groups: int, seed: int) -> np.ndarray:
    """Rows around `groups` centres, with columns of different scales (as a UMAP projection's)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(groups, dim))
    data = centres[rng.integers(0, groups, size=rows)] + rng.normal(size=(rows, dim))
    return data * rng.uniform(0.2, 2.0, size=dim)


def _same_fit(data: np.ndarray, components: int, seed: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loops = mixture.fit_mixture(data, components, seed=seed)
        steps = mixture.fit_mixture_numpy(data, components, seed=seed)
    assert (loops.iterations, loops.converged) == (steps.iterations, steps.converged)
    # A component of a few rows is singular but for REG_COVAR: its log-determinant (~ -14 a dimension)
    # and the rows' log-densities are large terms that can cancel to a BIC near zero, so rounding shows
    # as ~1e-8 absolute there; the scan compares BICs that differ by far more.
    bic = pytest.approx(steps.bic(data), rel=1e-9, abs=1e-6)
    assert loops.bic_of_fit(data) == bic
    assert loops.bic(data) == bic
    np.testing.assert_allclose(loops.predict_proba(data), steps.predict_proba(data), atol=1e-8)
    np.testing.assert_allclose(loops.means, steps.means, rtol=1e-7, atol=1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.integers(6, 400),
    dim=st.integers(1, 10),
    groups=st.integers(1, 6),
    components=st.integers(1, 12),
    seed=st.integers(0, 2**31 - 1),
)
def test_the_loops_fit_what_numpys_steps_fit(rows, dim, groups, components, seed):
    """Iterations, convergence, BIC, posteriors and means agree to rounding on any layer's shape, up to the
    scan's largest count (half the rows: with a component per row, k-means++'s candidates can tie exactly
    and rounding picks one of two equal starts, which only orders the components differently). At most
    rows - 2 dimensions, as `cluster` reduces a layer: with more, one component's covariance is singular
    but for its regularisation, and its log-determinant turns rounding into BIC differences of 1e-9."""
    dim = min(dim, rows - 2)
    _same_fit(_grouped(rows, dim, groups, seed), max(1, min(components, rows // 2)), seed)


def test_candidates_whose_potentials_tie_start_both_codes_from_the_same_centre():
    """Six rows where two k-means++ candidates (rows 0 and 4) leave exactly the same potential: the loop's
    sum and BLAS's differed in the last bit, so each code took another second centre and the fits ended
    apart (BIC -142.2 against -224.2). Hypothesis found it; ties now go to the first candidate in both."""
    _same_fit(_grouped(6, 8, 2, seed=1), 3, seed=1)


def test_a_tie_within_rounding_goes_to_the_first_candidate_in_both_codes():
    values = np.array([3.0, 2.0 * (1 + 1e-13), 2.0, 2.5])
    assert mixture._first_of_least(values) == 1
    assert mixture_kernels.compiled()["first_of_least"](values) == 1
    apart = np.array([3.0, 2.0 * (1 + 1e-6), 2.0])
    assert mixture._first_of_least(apart) == mixture_kernels.compiled()["first_of_least"](apart) == 2


def test_the_loops_fit_a_layer_of_a_thousand_rows_as_numpy_does():
    """The global scan's size (the 100k bench text's leaf layer: 1,104 rows in 10 dimensions)."""
    data = _grouped(1100, 10, 12, seed=224)
    for components in (1, 5, 12, 20):
        _same_fit(data, components, seed=224)


@pytest.mark.parametrize(("rows", "dim", "seed"), [(40, 10, 224), (300, 10, 0), (500, 3, 7), (25, 2, 224)])
def test_the_kmeans_loop_labels_rows_as_sklearn_does(rows, dim, seed):
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(seed)
    data = rng.normal(size=(rows, dim)) * rng.uniform(0.1, 3.0, size=dim)
    data[: rows // 5] += 4.0
    kmeans = mixture_kernels.compiled()["kmeans"]
    for clusters in range(1, 16):
        first, draws = mixture._kmeans_draws(rows, clusters, seed)
        status, labels = kmeans(
            data, clusters, first, draws, mixture.KMEANS_MAX_ITERATIONS, mixture.KMEANS_TOLERANCE
        )
        expected = (
            KMeans(n_clusters=clusters, n_init=1, random_state=np.random.RandomState(seed)).fit(data).labels_
        )
        assert status == mixture_kernels.FIT_OK
        assert np.array_equal(labels, expected), clusters
        assert np.array_equal(labels, mixture.kmeans_labels(data, clusters, seed=seed)), clusters


def test_draws_made_beforehand_are_the_ones_made_centre_by_centre():
    for rows, clusters, seed in ((10, 3, 0), (1104, 20, 224), (50, 14, 5)):
        random = np.random.RandomState(seed)
        first = random.choice(rows, p=np.ones(rows) / rows)
        trials = 2 + int(np.log(clusters))
        centre_by_centre = np.vstack([random.uniform(size=trials) for _ in range(clusters - 1)])
        assert mixture._kmeans_draws(rows, clusters, seed) == (first, pytest.approx(centre_by_centre, abs=0))


def test_a_kmeans_step_that_leaves_a_cluster_empty_is_fitted_by_numpys_steps():
    """Repeated rows can make two k-means++ centres land on one row, whose cluster is then empty;
    sklearn relocates it, which the loops leave to the numpy code."""
    grid = [[0, 0], [0, 1], [2, 1], [0, 1], [1, 2], [2, 2], [0, 2], [0, 1], [0, 0], [1, 0], [1, 0], [0, 2]]
    data = np.array(grid + [[1, 2], [2, 2], [1, 0], [1, 2], [2, 2]], dtype=np.float64)
    first, draws = mixture._kmeans_draws(len(data), 8, seed=0)
    status, _ = mixture_kernels.compiled()["kmeans"](data, 8, first, draws, 300, 1e-4)
    assert status == mixture_kernels.FIT_EMPTY_CLUSTER
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loops, steps = mixture.fit_mixture(data, 8, seed=0), mixture.fit_mixture_numpy(data, 8, seed=0)
    assert loops.fitted_score is None  # the numpy path's
    np.testing.assert_array_equal(loops.means, steps.means)
    assert loops.bic(data) == steps.bic(data)


def test_a_covariance_that_is_not_positive_definite_stops_the_fit_as_numpy_does():
    """numpy's Cholesky raises LinAlgError, which the BIC scan takes as the end of the scan; the loops
    report it and `fit_mixture` raises the same error."""
    data = _grouped(30, 3, 2, seed=1)
    responsibilities = np.ones((30, 2))
    responsibilities[:, 1] = -1.0  # weights of both signs: a covariance that is not positive definite
    responsibilities[0, 1] = 40.0
    with pytest.raises(np.linalg.LinAlgError):
        mixture._maximise(data, responsibilities)
    counts, means, precisions = np.empty(2), np.empty((2, 3)), np.empty((2, 3, 3))
    columns = np.ascontiguousarray(data.T)
    maximise = mixture_kernels.compiled()["maximise"]
    assert not maximise(columns, np.ascontiguousarray(responsibilities.T), counts, means, precisions, 1e-6)
    assert maximise(columns, np.ones((2, 30)) / 2, counts, means, precisions, 1e-6)


def test_fit_mixture_raises_numpys_error_when_the_loops_report_a_failed_factorisation(monkeypatch):
    kernels = dict(mixture_kernels.compiled())
    failed = (mixture_kernels.FIT_NOT_POSITIVE_DEFINITE, None, None, None, False, 0, np.nan)
    monkeypatch.setitem(kernels, "em", lambda *args: failed)
    monkeypatch.setattr(mixture_kernels, "compiled", lambda: kernels)
    with pytest.raises(np.linalg.LinAlgError):
        mixture.fit_mixture(_grouped(30, 3, 2, seed=1), 2, seed=0)


def test_every_loop_releases_the_gil():
    """The point of the loops: two local clusterings' fits run on two cores at once."""
    kernels = mixture_kernels.compiled()
    assert set(kernels) >= {"kmeans", "em", "maximise", "weighted_log_prob", "log_normalise", "_dot", "_sum"}
    assert all(kernel.targetoptions.get("nogil") for kernel in kernels.values())


def test_the_loops_are_cached_in_umaps_compile_cache(tmp_path, monkeypatch):
    """cluster.py hands the loops its compile cache (the engine's `use_compile_cache`, or NUMBA_CACHE_DIR),
    so a new process loads them instead of compiling them (~20 s) at its first fit."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(cluster, "_compile_cache_dir", tmp_path)
    assert [resolve() for resolve in mixture_kernels._cache_folder] == [tmp_path]
