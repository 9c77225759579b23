"""Gaussian mixtures with full covariances, fitted by EM as sklearn's `GaussianMixture` fits them.

Why not sklearn's own: choosing a layer's component count by BIC fits about 250 small mixtures per
100k-token document, and sklearn spent most of each fit in per-component Python loops, input checks
and the set-up of its k-means (2.2-2.9 s of a 20 s ingest on a 2-core machine; 0.8 s here). This
takes the same steps with the same settings: a k-means start (k-means++ with the same random draws,
then Lloyd's iterations), `reg_covar` 1e-6, tolerance 1e-3 on the mean log-likelihood, at most 100
iterations, and the same BIC, with each step working on all components at once. Labels, iterations,
BIC and posteriors agree with sklearn's (tests/test_cluster.py compares them). `fit_mixture` runs these
steps as numba loops without the GIL (`mixture_kernels.py`); the numpy code here is their reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import mixture_kernels

REG_COVAR = 1e-6  # added to each covariance's diagonal, as sklearn does, so it stays invertible
TOLERANCE = 1e-3  # EM stops when the mean log-likelihood moves less than this
MAX_ITERATIONS = 100


@dataclass
class Mixture:
    """A fitted mixture: component weights, means and the Cholesky factors of the precisions."""

    weights: np.ndarray  # (k,)
    means: np.ndarray  # (k, d)
    precisions_cholesky: np.ndarray  # (k, d, d)
    converged: bool
    iterations: int
    fitted_score: float | None = None  # the mean log-likelihood of the rows it was fitted on, when known

    @property
    def n_components(self) -> int:
        return len(self.weights)

    def predict_proba(self, data: np.ndarray) -> np.ndarray:
        """Each row's posterior over the components."""
        weighted = self._weighted_log_prob(data)
        return np.exp(weighted - _logsumexp(weighted)[:, None])

    def score(self, data: np.ndarray) -> float:
        """Mean log-likelihood of the rows."""
        return float(_logsumexp(self._weighted_log_prob(data)).mean())

    def bic(self, data: np.ndarray) -> float:
        """Bayesian information criterion: lower is better."""
        return self._bic(self.score(data), *data.shape)

    def bic_of_fit(self, data: np.ndarray) -> float:
        """`bic` on the rows it was fitted on (`data`), from the score the fit computed when it has one."""
        if self.fitted_score is None:
            return self.bic(data)
        return self._bic(self.fitted_score, *data.shape)

    def _bic(self, score: float, rows: int, dim: int) -> float:
        k = self.n_components
        parameters = k * dim * (dim + 1) / 2 + k * dim + k - 1
        return -2 * score * rows + parameters * math.log(rows)

    def _weighted_log_prob(self, data: np.ndarray) -> np.ndarray:
        return _log_gaussian(data, self.means, self.precisions_cholesky) + np.log(self.weights)


def fit_mixture(data: np.ndarray, components: int, *, seed: int) -> Mixture:
    """EM from a k-means start; raises numpy's LinAlgError when a covariance is not positive definite.

    The steps run as numba loops that release the GIL (`mixture_kernels`): numpy's steps on a local
    clustering's tens of rows are mostly call overhead under the GIL, so the two threads running a
    layer's local clusterings waited on each other, and on a layer's 1,100 rows the loops take a third
    of numpy's time too. A k-means step that leaves a cluster empty (rare: each centre starts on a row)
    runs the numpy code below instead, which relocates as sklearn does."""
    data = np.ascontiguousarray(data, dtype=np.float64)
    rows = len(data)
    if not 1 <= components <= rows:
        raise ValueError(f"cannot fit {components} components to {rows} rows")
    kernels = mixture_kernels.compiled()
    first, draws = _kmeans_draws(rows, components, seed)
    status, labels = kernels["kmeans"](data, components, first, draws, KMEANS_MAX_ITERATIONS, KMEANS_TOLERANCE)
    if status == mixture_kernels.FIT_EMPTY_CLUSTER:
        return fit_mixture_numpy(data, components, seed=seed)
    status, weights, means, precisions, converged, iterations, score = kernels["em"](
        data, labels, components, REG_COVAR, TOLERANCE, MAX_ITERATIONS
    )
    if status == mixture_kernels.FIT_NOT_POSITIVE_DEFINITE:
        raise np.linalg.LinAlgError("a component's covariance is not positive definite")
    return Mixture(weights, means, precisions, bool(converged), int(iterations), fitted_score=float(score))


def _kmeans_draws(rows: int, clusters: int, seed: int) -> tuple[int, np.ndarray]:
    """The k-means++ start's random draws, made beforehand as `_kmeans_plus_plus` makes them one centre at
    a time: the first centre's row, then (clusters - 1, trials) uniforms (the same stream of numbers)."""
    trials = 2 + int(np.log(clusters))
    if clusters == 1:  # one cluster: no start to draw
        return 0, np.empty((0, trials))
    random = np.random.RandomState(seed)
    first = int(random.choice(rows, p=np.ones(rows) / rows))
    return first, random.uniform(size=(clusters - 1, trials))


def fit_mixture_numpy(data: np.ndarray, components: int, *, seed: int) -> Mixture:
    """`fit_mixture` by numpy's array steps: the reference the numba loops are tested against, and the
    path for a k-means step that leaves a cluster empty."""
    data = np.asarray(data, dtype=np.float64)
    rows = len(data)
    if not 1 <= components <= rows:
        raise ValueError(f"cannot fit {components} components to {rows} rows")
    labels = kmeans_labels(data, components, seed=seed)
    responsibilities = np.zeros((rows, components))
    responsibilities[np.arange(rows), labels] = 1.0
    counts, means, precisions = _maximise(data, responsibilities)
    weights = counts / rows  # as sklearn starts them (the later steps divide by the counts' sum)
    bound, iterations = -np.inf, 0
    while iterations < MAX_ITERATIONS:
        iterations += 1
        previous = bound
        weighted = _log_gaussian(data, means, precisions) + np.log(weights)
        norm = _logsumexp(weighted)
        counts, means, precisions = _maximise(data, np.exp(weighted - norm[:, None]))
        weights = counts / counts.sum()
        bound = float(norm.mean())
        if abs(bound - previous) < TOLERANCE:
            return Mixture(weights, means, precisions, True, iterations)
    return Mixture(weights, means, precisions, False, iterations)


def _maximise(data: np.ndarray, responsibilities: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The M step: each component's share of the rows, its mean and its precision's Cholesky factor."""
    counts = responsibilities.sum(axis=0) + 10 * np.finfo(responsibilities.dtype).eps
    means = responsibilities.T @ data / counts[:, None]
    centred = data[None, :, :] - means[:, None, :]  # (k, n, d)
    covariances = (centred * responsibilities.T[:, :, None]).transpose(0, 2, 1) @ centred / counts[:, None, None]
    dim = data.shape[1]
    covariances[:, np.arange(dim), np.arange(dim)] += REG_COVAR
    lower = np.linalg.cholesky(covariances)
    precisions = np.linalg.inv(lower).transpose(0, 2, 1)
    return counts, means, precisions


def _log_gaussian(data: np.ndarray, means: np.ndarray, precisions: np.ndarray) -> np.ndarray:
    """(n, k) log densities of each row under each component."""
    dim = data.shape[1]
    log_det = np.log(np.diagonal(precisions, axis1=1, axis2=2)).sum(axis=1)
    projected = data @ precisions - (means[:, None, :] @ precisions)  # (k, n, d)
    squared = np.einsum("knd,knd->nk", projected, projected)
    return -0.5 * (dim * math.log(2 * math.pi) + squared) + log_det


def _logsumexp(values: np.ndarray) -> np.ndarray:
    """log(sum(exp(row))) of each row, without overflow."""
    top = values.max(axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    return top + np.log(np.exp(values - top[:, None]).sum(axis=1))


# ---- the k-means start ------------------------------------------------------------------------

KMEANS_MAX_ITERATIONS = 300
KMEANS_TOLERANCE = 1e-4  # of the data's mean variance, on the centres' summed squared shift


def kmeans_labels(data: np.ndarray, clusters: int, *, seed: int) -> np.ndarray:
    """Each row's cluster by k-means as sklearn's `KMeans(n_clusters, n_init=1, random_state=seed)` runs
    it (k-means++ seeding with the same random draws, then Lloyd's iterations), without its per-call
    overhead, which was most of the time for these small inputs. Labels agree with sklearn's (tested).
    """
    rows = len(data)
    if clusters == 1:
        return np.zeros(rows, dtype=np.int64)
    random = np.random.RandomState(seed)
    centred = data - data.mean(axis=0)  # sklearn centres the data first; distances are then more exact
    norms = np.einsum("ij,ij->i", centred, centred)
    tolerance = float(np.mean(np.var(data, axis=0))) * KMEANS_TOLERANCE
    centres = _kmeans_plus_plus(centred, clusters, norms, random)
    previous = np.full(rows, -1)
    for _ in range(KMEANS_MAX_ITERATIONS):
        labels = _nearest(centred, centres)
        moved = _relocate_empty(centred, centres, labels, clusters)
        members = np.zeros((clusters, rows))
        members[labels, np.arange(rows)] = 1.0
        sums, sizes = members @ centred, members.sum(axis=1)[:, None]
        # A cluster that gave its only row to an empty one keeps its (zero) sum as its centre, as in sklearn.
        updated = np.divide(sums, sizes, out=sums.copy(), where=sizes > 0)
        shift = float(((updated - centres) ** 2).sum())
        centres = updated
        if np.array_equal(labels, previous) and not moved:
            return labels
        if shift <= tolerance:
            break
        previous = labels
    return _nearest(centred, centres)


def _kmeans_plus_plus(
    data: np.ndarray, clusters: int, norms: np.ndarray, random: np.random.RandomState
) -> np.ndarray:
    """k-means++ seeding, greedy with 2 + log(k) candidates per centre, drawing as sklearn draws."""
    rows = len(data)
    trials = 2 + int(np.log(clusters))
    weights = np.ones(rows)
    centres = np.empty((clusters, data.shape[1]))
    first = random.choice(rows, p=weights / weights.sum())
    centres[0] = data[first]
    closest = _squared_distances(data[first][None, :], data, norms)[0]
    potential = float(closest @ weights)
    for c in range(1, clusters):
        draws = random.uniform(size=trials) * potential
        candidates = np.searchsorted(np.cumsum(weights * closest), draws)
        np.clip(candidates, None, rows - 1, out=candidates)
        distances = np.minimum(closest, _squared_distances(data[candidates], data, norms))
        potentials = distances @ weights
        best = _first_of_least(potentials)
        potential, closest = float(potentials[best]), distances[best]
        centres[c] = data[candidates[best]]
    return centres


def _first_of_least(values: np.ndarray) -> int:
    """The first index within `KMEANS_TIE` (relative) of the least: candidates whose potentials tie exactly
    differ in their last bits by the order of a sum, and the compiled loops must choose as this code does
    (`mixture_kernels.first_of_least`), not as rounding does."""
    return int(np.flatnonzero(values <= values.min() * (1.0 + mixture_kernels.KMEANS_TIE))[0])


def _squared_distances(points: np.ndarray, data: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """Squared euclidean distances of each point to each row, computed as sklearn computes them."""
    distances = -2 * (points @ data.T)
    distances += np.einsum("ij,ij->i", points, points)[:, None]
    distances += norms[None, :]
    return np.maximum(distances, 0, out=distances)


def _nearest(data: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Each row's nearest centre (the first, on a tie)."""
    return np.argmin(np.einsum("ij,ij->i", centres, centres)[None, :] - 2 * (data @ centres.T), axis=1)


def _relocate_empty(data: np.ndarray, centres: np.ndarray, labels: np.ndarray, clusters: int) -> bool:
    """Give each empty cluster the row farthest from its own centre (in place), as sklearn does."""
    empty = np.flatnonzero(np.bincount(labels, minlength=clusters) == 0)
    if not len(empty):
        return False
    distances = ((data - centres[labels]) ** 2).sum(axis=1)
    farthest = np.argpartition(distances, -len(empty))[: -len(empty) - 1 : -1]
    labels[farthest] = empty
    return True
