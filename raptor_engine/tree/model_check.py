"""Whether a knowledge base's stored vectors were made by the embedding model now configured.

A store keeps the vectors its build computed; a question is embedded by whatever RAPTOR_EMBED_MODEL names
today. A model of another size is caught by the index (`index.KBIndex.search`), but another model of the
same size (all-MiniLM-L12-v2 and L6 both make 384 numbers) would be searched without complaint and
return unrelated passages. So a few stored leaves are embedded again and compared with their stored
vectors: runtimes and exports of one model agree closely (int8 against fp32: cosine 0.986 at worst),
another model's vectors of the same text do not.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..errors import RaptorError

log = logging.getLogger(__name__)

SAMPLE_LEAVES = 3  # leaves embedded again per knowledge base and process (about 20 ms on a CPU)
# The median cosine of the samples below which the vectors are another model's: one model's runtimes
# and exports agree to 0.98 or more; two models' spaces are unrelated (near 0).
SAME_MODEL_COSINE = 0.9


class _Embeds(Protocol):
    name: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


class _LeafSamples(Protocol):
    def leaf_samples(self, kb_id: int, count: int) -> list[tuple[int, str, np.ndarray]]: ...


class VectorsOfAnotherModelError(RaptorError):
    """A knowledge base's vectors were made by another embedding model than the one configured."""


@dataclass(frozen=True)
class Agreement:
    """How closely the configured model reproduces a knowledge base's stored leaf vectors."""

    cosine: float  # the median over the samples
    samples: int
    other_size: bool = False  # the stored vectors hold another count of numbers (the index refuses those)

    @property
    def same_model(self) -> bool:
        return self.samples == 0 or (not self.other_size and self.cosine >= SAME_MODEL_COSINE)


def agreement(embedder: _Embeds, samples: list[tuple[int, str, np.ndarray]]) -> Agreement:
    """The median cosine between the stored vectors of `samples` and the embedder's vectors of their text
    (a stored vector that is not finite or is zero says nothing, and is left out)."""
    usable = [s for s in samples if np.all(np.isfinite(s[2])) and np.any(s[2])]
    if not usable:
        return Agreement(1.0, 0)
    fresh = np.asarray(embedder.embed([text for _, text, _ in usable]), dtype=np.float32)
    if any(vector.shape != fresh.shape[1:] for _, _, vector in usable):
        return Agreement(0.0, len(usable), other_size=True)
    stored = np.vstack([vector for _, _, vector in usable]).astype(np.float32)
    norms = np.linalg.norm(fresh, axis=1) * np.linalg.norm(stored, axis=1)
    cosines = np.einsum("ij,ij->i", fresh, stored) / np.maximum(norms, 1e-12)
    return Agreement(float(np.median(cosines)), len(usable))


def _fingerprint(samples: list[tuple[int, str, np.ndarray]]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for node_id, text, vector in samples:
        digest.update(f"{node_id}\0{text}\0".encode())
        digest.update(np.ascontiguousarray(vector).tobytes())
    return digest.hexdigest()


def another_model_message(kb: str, model: str) -> str:
    """The one sentence a user reads when `kb`'s vectors are not the configured model's."""
    return (
        f"The knowledge base {kb!r} was built with another embedding model than RAPTOR_EMBED_MODEL ({model}), "
        "whose vectors cannot be compared with its own; set RAPTOR_EMBED_MODEL back to the model that built it, "
        "or forget its documents and add them again."
    )


class ModelCheck:
    """Remembers, per process, whether a knowledge base's vectors are the configured model's.

    Keyed by what the sampled leaves hold (ids, texts and stored vectors), not by the knowledge base's id,
    which each server's store numbers from 1: a knowledge base whose first leaves were forgotten or
    replaced is checked again, and two stores' knowledge bases never share an answer. Once remembered, a
    check costs one SQL query."""

    def __init__(self, embedder: _Embeds) -> None:
        self.embedder = embedder
        self._known: dict[str, Agreement] = {}
        self._lock = threading.Lock()

    def agreement_of(self, store: _LeafSamples, kb_id: int) -> Agreement:
        samples = store.leaf_samples(kb_id, SAMPLE_LEAVES)
        key = _fingerprint(samples)
        with self._lock:
            known = self._known.get(key)
        if known is not None:
            return known
        found = agreement(self.embedder, samples)
        if not found.same_model:
            log.warning(
                "knowledge base %d: its leaves' stored vectors and %s's agree to cosine %.3f (median of %d)",
                kb_id,
                self.embedder.name,
                found.cosine,
                found.samples,
            )
        with self._lock:
            self._known[key] = found
        return found

    def require_same_model(self, store: _LeafSamples, kb_id: int, kb: str) -> None:
        """Refuse (VectorsOfAnotherModelError) to search or add to a knowledge base of another model's vectors."""
        found = self.agreement_of(store, kb_id)
        if not found.same_model and not found.other_size:  # another size: the index's own sentence says so
            raise VectorsOfAnotherModelError(another_model_message(kb, self.embedder.name))
