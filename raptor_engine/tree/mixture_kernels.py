"""The k-means start and EM of `mixture.fit_mixture` as loops that numba compiles to release the GIL.

Why: a layer's BIC scans fit a few hundred small mixtures (tens of rows, a handful of components).
numpy's steps on arrays that small are mostly call overhead, all of it under the GIL, so the two
threads that run a layer's local clusterings waited on each other rather than on the cores. These
loops take the same steps, in the same order, as the numpy code in `mixture.py` (itself sklearn's
steps): the sums are accumulated in another order than BLAS's, so the numbers agree to rounding
(tested against the numpy code and sklearn), not bit for bit.

Each function here is plain Python over numpy arrays; `compiled()` returns them compiled by numba
(`nogil=True`, cached on disk with UMAP's code). A k-means step that would leave a cluster empty is
not handled here: the kernel says so and the caller runs the numpy code, which relocates as sklearn does.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

FIT_OK = 0
FIT_NOT_POSITIVE_DEFINITE = 1  # a covariance's Cholesky factor failed: numpy would raise LinAlgError
FIT_EMPTY_CLUSTER = 2  # k-means left a cluster empty: the numpy code relocates it as sklearn does
KMEANS_TIE = 1e-10  # k-means++ candidates' potentials this close (relative) are a tie: the first one wins


def squared_distances(point: np.ndarray, data: np.ndarray, norms: np.ndarray, out: np.ndarray) -> None:
    """Squared euclidean distances of `point` to each row, as `mixture._squared_distances` computes them."""
    dim = data.shape[1]
    point_norm = 0.0
    for d in range(dim):
        point_norm += point[d] * point[d]
    for i in range(data.shape[0]):
        dot = 0.0
        for d in range(dim):
            dot += point[d] * data[i, d]
        value = -2.0 * dot + point_norm + norms[i]
        out[i] = value if value > 0.0 else 0.0


def kmeans_plus_plus(
    data: np.ndarray, clusters: int, norms: np.ndarray, first: int, draws: np.ndarray
) -> np.ndarray:
    """k-means++ seeding as `mixture._kmeans_plus_plus`, with its random draws made beforehand: `first`
    the first centre's row, `draws` (clusters - 1, trials) uniforms in [0, 1)."""
    rows, dim = data.shape
    trials = draws.shape[1]
    centres = np.empty((clusters, dim))
    centres[0] = data[first]
    closest = np.empty(rows)
    squared_distances(data[first], data, norms, closest)
    potential = 0.0
    for i in range(rows):
        potential += closest[i]
    cumulative = np.empty(rows)
    candidate = np.empty(rows)
    drawn = np.empty(trials, dtype=np.int64)
    potentials = np.empty(trials)
    distances = np.empty((trials, rows))
    for c in range(1, clusters):
        total = 0.0
        for i in range(rows):
            total += closest[i]
            cumulative[i] = total
        for t in range(trials):
            row = min(np.searchsorted(cumulative, draws[c - 1, t] * potential), rows - 1)
            squared_distances(data[row], data, norms, candidate)
            candidate_potential = 0.0
            for i in range(rows):
                if closest[i] < candidate[i]:
                    candidate[i] = closest[i]
                candidate_potential += candidate[i]
            drawn[t], potentials[t] = row, candidate_potential
            distances[t] = candidate
        best = first_of_least(potentials)
        potential = potentials[best]
        closest[:] = distances[best]
        centres[c] = data[drawn[best]]
    return centres


def first_of_least(values: np.ndarray) -> int:
    """The first index whose value is within `KMEANS_TIE` (relative) of the least, as `mixture._first_of_least`:
    k-means++ candidates whose potentials tie exactly (two rows at the same distance from the rest) differ
    in their last bits by the order of a sum (a loop here, BLAS there), so a strict minimum would let
    rounding choose between them and the two codes start from different centres."""
    least = values.min()
    for t in range(values.shape[0]):
        if values[t] <= least * (1.0 + KMEANS_TIE):
            return t
    return 0


def nearest(data: np.ndarray, centres: np.ndarray, labels: np.ndarray) -> None:
    """Each row's nearest centre (the first, on a tie), by |c|^2 - 2 x.c as `mixture._nearest`."""
    clusters, dim = centres.shape
    centre_norms = np.zeros(clusters)
    for c in range(clusters):
        for d in range(dim):
            centre_norms[c] += centres[c, d] * centres[c, d]
    for i in range(data.shape[0]):
        best, best_value = 0, math.inf
        for c in range(clusters):
            dot = 0.0
            for d in range(dim):
                dot += data[i, d] * centres[c, d]
            value = centre_norms[c] - 2.0 * dot
            if value < best_value:
                best, best_value = c, value
        labels[i] = best


def kmeans(
    data: np.ndarray,
    clusters: int,
    first: int,
    draws: np.ndarray,
    max_iterations: int,
    tolerance_share: float,
) -> tuple[int, np.ndarray]:
    """(status, labels) of `mixture.kmeans_labels`; status FIT_EMPTY_CLUSTER where a step left a cluster empty."""
    rows, dim = data.shape
    labels = np.zeros(rows, dtype=np.int64)
    if clusters == 1:
        return FIT_OK, labels
    mean = np.zeros(dim)
    for i in range(rows):
        for d in range(dim):
            mean[d] += data[i, d]
    mean /= rows
    centred = np.empty((rows, dim))
    norms = np.zeros(rows)
    variance = 0.0
    for d in range(dim):
        spread = 0.0
        for i in range(rows):
            centred[i, d] = data[i, d] - mean[d]
            spread += centred[i, d] * centred[i, d]
        variance += spread / rows
    for i in range(rows):
        for d in range(dim):
            norms[i] += centred[i, d] * centred[i, d]
    tolerance = variance / dim * tolerance_share
    centres = kmeans_plus_plus(centred, clusters, norms, first, draws)
    previous = np.full(rows, -1, dtype=np.int64)
    sums = np.empty((clusters, dim))
    sizes = np.empty(clusters)
    for _ in range(max_iterations):
        nearest(centred, centres, labels)
        sums[:] = 0.0
        sizes[:] = 0.0
        for i in range(rows):
            sizes[labels[i]] += 1.0
            for d in range(dim):
                sums[labels[i], d] += centred[i, d]
        for c in range(clusters):
            if sizes[c] == 0.0:
                return FIT_EMPTY_CLUSTER, labels
        shift = 0.0
        for c in range(clusters):
            for d in range(dim):
                updated = sums[c, d] / sizes[c]
                shift += (updated - centres[c, d]) ** 2
                centres[c, d] = updated
        same = True
        for i in range(rows):
            if labels[i] != previous[i]:
                same = False
                break
        if same:
            return FIT_OK, labels
        if shift <= tolerance:
            break
        previous[:] = labels
    nearest(centred, centres, labels)
    return FIT_OK, labels


def maximise(
    columns: np.ndarray,
    responsibilities: np.ndarray,
    counts: np.ndarray,
    means: np.ndarray,
    precisions: np.ndarray,
    reg_covar: float,
) -> bool:
    """The M step of `mixture._maximise` into `counts`, `means`, `precisions`, from the data's columns
    (d, n) and the responsibilities by component (k, n); False if a covariance is not positive definite."""
    dim, rows = columns.shape
    components = responsibilities.shape[0]
    eps = 10 * np.finfo(np.float64).eps
    covariance = np.empty((dim, dim))
    lower = np.empty((dim, dim))
    centred = np.empty((dim, rows))
    scaled = np.empty((dim, rows))
    for k in range(components):
        weight = responsibilities[k]
        count = _sum(weight) + eps
        counts[k] = count
        for d in range(dim):
            means[k, d] = _dot(weight, columns[d]) / count
            for i in range(rows):
                centred[d, i] = columns[d, i] - means[k, d]
                scaled[d, i] = centred[d, i] * weight[i]
        for a in range(dim):
            for b in range(a + 1):
                covariance[a, b] = _dot(scaled[a], centred[b]) / count
            covariance[a, a] += reg_covar
        if not _cholesky_precision(covariance, lower, precisions[k]):
            return False
    return True


def _sum(values: np.ndarray) -> float:
    """The sum of `values` (compiled to reassociate, so that it vectorises)."""
    total = 0.0
    for i in range(values.shape[0]):
        total += values[i]
    return total


def _dot(left: np.ndarray, right: np.ndarray) -> float:
    """The dot product of two rows (compiled to reassociate, so that it vectorises)."""
    total = 0.0
    for i in range(left.shape[0]):
        total += left[i] * right[i]
    return total


def _cholesky_precision(covariance: np.ndarray, lower: np.ndarray, precision: np.ndarray) -> bool:
    """The Cholesky factor of the precision, inv(cholesky(covariance)).T (upper triangular), from the
    lower triangle of `covariance`; False if it is not positive definite (numpy raises LinAlgError)."""
    dim = covariance.shape[0]
    lower[:] = 0.0
    for j in range(dim):
        diagonal = covariance[j, j]
        for m in range(j):
            diagonal -= lower[j, m] * lower[j, m]
        if not diagonal > 0.0:  # also NaN
            return False
        lower[j, j] = math.sqrt(diagonal)
        for i in range(j + 1, dim):
            value = covariance[i, j]
            for m in range(j):
                value -= lower[i, m] * lower[j, m]
            lower[i, j] = value / lower[j, j]
    precision[:] = 0.0  # precision[b, a] = inv(lower)[a, b], inv(lower) lower triangular
    for b in range(dim):
        precision[b, b] = 1.0 / lower[b, b]
        for a in range(b + 1, dim):
            value = 0.0
            for m in range(b, a):
                value -= lower[a, m] * precision[b, m]
            precision[b, a] = value / lower[a, a]
    return True


def weighted_log_prob(
    columns: np.ndarray, weights: np.ndarray, means: np.ndarray, precisions: np.ndarray, out: np.ndarray
) -> None:
    """(k, n) log(weight) + log density of each row under each component, as `Mixture._weighted_log_prob`,
    from the data's columns (d, n). Each row's projection on a component's precision factor is summed
    over the columns in order; the loops run over the rows innermost, so that they vectorise."""
    dim, rows = columns.shape
    components = means.shape[0]
    constant = dim * math.log(2 * math.pi)
    projected_mean = np.empty(dim)
    projected = np.empty((dim, rows))
    squared = np.empty(rows)
    for k in range(components):
        log_det = 0.0
        for d in range(dim):
            log_det += math.log(precisions[k, d, d])
        projected[:] = 0.0
        projected_mean[:] = 0.0
        for a in range(dim):
            for b in range(a, dim):
                factor = precisions[k, a, b]
                projected_mean[b] += means[k, a] * factor
                for i in range(rows):
                    projected[b, i] += columns[a, i] * factor
        squared[:] = 0.0
        for b in range(dim):
            for i in range(rows):
                value = projected[b, i] - projected_mean[b]
                squared[i] += value * value
        log_weight = math.log(weights[k])
        for i in range(rows):
            out[k, i] = -0.5 * (constant + squared[i]) + log_det + log_weight


def log_normalise(weighted: np.ndarray, norm: np.ndarray) -> float:
    """Each row's logsumexp into `norm` and `weighted` (k, n) turned into posteriors in place; the rows'
    mean log-likelihood."""
    components, rows = weighted.shape
    total_norm = 0.0
    for i in range(rows):
        top = -math.inf
        for k in range(components):
            if weighted[k, i] > top:
                top = weighted[k, i]
        if not math.isfinite(top):
            top = 0.0
        total = 0.0
        for k in range(components):
            weighted[k, i] = math.exp(weighted[k, i] - top)
            total += weighted[k, i]
        norm[i] = top + math.log(total)
        for k in range(components):
            weighted[k, i] /= total
        total_norm += norm[i]
    return total_norm / rows


def em(
    data: np.ndarray,
    labels: np.ndarray,
    components: int,
    reg_covar: float,
    tolerance: float,
    max_iterations: int,
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, bool, int, float]:
    """`mixture.fit_mixture`'s EM from k-means labels: (status, weights, means, precisions' Cholesky
    factors, converged, iterations, the final parameters' mean log-likelihood)."""
    rows, dim = data.shape
    columns = np.ascontiguousarray(data.T)
    responsibilities = np.zeros((components, rows))
    for i in range(rows):
        responsibilities[labels[i], i] = 1.0
    counts = np.empty(components)
    means = np.empty((components, dim))
    precisions = np.empty((components, dim, dim))
    weights = np.empty(components)
    norm = np.empty(rows)
    if not maximise(columns, responsibilities, counts, means, precisions, reg_covar):
        return FIT_NOT_POSITIVE_DEFINITE, weights, means, precisions, False, 0, math.nan
    for k in range(components):
        weights[k] = counts[k] / rows
    bound, iterations, converged = -math.inf, 0, False
    while iterations < max_iterations:
        iterations += 1
        previous = bound
        weighted_log_prob(columns, weights, means, precisions, responsibilities)
        bound = log_normalise(responsibilities, norm)
        if not maximise(columns, responsibilities, counts, means, precisions, reg_covar):
            return FIT_NOT_POSITIVE_DEFINITE, weights, means, precisions, False, iterations, math.nan
        total = 0.0
        for k in range(components):
            total += counts[k]
        for k in range(components):
            weights[k] = counts[k] / total
        if abs(bound - previous) < tolerance:
            converged = True
            break
    weighted_log_prob(columns, weights, means, precisions, responsibilities)
    score = log_normalise(responsibilities, norm)
    return FIT_OK, weights, means, precisions, converged, iterations, score


_KERNELS = (
    squared_distances,
    first_of_least,
    kmeans_plus_plus,
    nearest,
    kmeans,
    maximise,
    _cholesky_precision,
    weighted_log_prob,
    log_normalise,
    em,
)
_REASSOCIATING = (_sum, _dot)  # reductions whose order may change: compiled to vectorise
_compiled: dict[str, Any] = {}
_compile_lock = threading.Lock()
_cache_folder: list[
    Callable[[], Path]
] = []  # set by cluster.py: UMAP's compile cache folder, as it resolves it


def use_cache_folder(resolve: Callable[[], Path]) -> None:
    """Cache the compiled loops in `resolve()`'s `mixture` subfolder (read at the first fit). cluster.py
    passes its compile cache (`use_compile_cache`); without it the loops compile in memory, each process."""
    _cache_folder[:] = [resolve]


def compiled() -> dict[str, Any]:
    """The kernels by name, compiled by numba with `nogil=True` and cached on disk (`use_cache_folder`;
    where that cannot be written they compile in memory, each process).

    Each kernel's module global is rebound to its compiled form first, so that compiled code calls
    compiled code."""
    with _compile_lock:
        if not _compiled:
            import numba

            previous = numba.config.CACHE_DIR
            cache = bool(_cache_folder)
            if cache:
                numba.config.CACHE_DIR = str(_cache_folder[0]() / "mixture")  # read as each cache is created
            try:
                jitted = {f.__name__: _jit(numba, f, cache, {}) for f in _KERNELS}
                jitted.update(
                    {f.__name__: _jit(numba, f, cache, {"fastmath": {"reassoc"}}) for f in _REASSOCIATING}
                )
            finally:
                numba.config.CACHE_DIR = previous
            globals().update(jitted)
            _compiled.update(jitted)
        return _compiled


def _jit(numba: Any, function: Any, cache: bool, options: dict[str, Any]) -> Any:
    if cache:
        try:
            return numba.njit(function, nogil=True, cache=True, **options)
        except Exception as exc:  # no cache folder numba can write: compile in memory
            log.debug("numba cannot cache %s: %s", function.__name__, exc)
    return numba.njit(function, nogil=True, **options)
