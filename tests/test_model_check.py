"""A knowledge base built with one embedding model is not searched or extended with another of the same size.

Another model's vectors are simulated by a fixed rotation of the real model's: the same size, an unrelated
space (as all-MiniLM-L12-v2 is to L6). Another runtime or export of the same model is simulated by noise
that leaves the vectors at cosine ~0.98 of the real ones (int8 against fp32 is 0.986 at worst)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from raptor_engine.engine import Engine
from raptor_engine.tree.model_check import (
    SAME_MODEL_COSINE,
    Agreement,
    ModelCheck,
    VectorsOfAnotherModelError,
    agreement,
)
from tests.unhurried import unhurried_settings

SAMPLES = Path(__file__).resolve().parents[1] / "raptor_tools" / "samples"


class TransformedEmbedder:
    """The real embedder with its vectors passed through `change` (and renamed); everything else is its."""

    def __init__(self, real, name: str, change) -> None:
        self._real = real
        self.name = name
        self._change = change

    def __getattr__(self, attr):
        return getattr(self._real, attr)

    def embed(self, texts, report=None, **kwargs) -> np.ndarray:
        return self._change(self._real.embed(texts, report, **kwargs))

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def rotated(real) -> TransformedEmbedder:
    rotation, _ = np.linalg.qr(np.random.default_rng(7).standard_normal((real.dim, real.dim)))
    return TransformedEmbedder(real, "another-model", lambda v: (v @ rotation).astype(np.float32))


def noisy(real) -> TransformedEmbedder:
    rng = np.random.default_rng(11)

    def jitter(v: np.ndarray) -> np.ndarray:
        noise = rng.standard_normal(v.shape).astype(np.float32)
        noise *= (
            0.17 * np.linalg.norm(v, axis=1, keepdims=True) / np.linalg.norm(noise, axis=1, keepdims=True)
        )
        return (v + noise).astype(np.float32)

    return TransformedEmbedder(real, real.name, jitter)


@pytest.fixture()
def built(tmp_path, embedder):
    """A data folder holding the lighthouse sample, built with the real model."""
    settings = unhurried_settings(data_dir=tmp_path / "data")
    engine = Engine(settings, embedder=embedder)
    try:
        asyncio.run(
            engine.ingest("kb", "lighthouse_keepers.md", (SAMPLES / "lighthouse_keepers.md").read_bytes())
        )
    finally:
        engine.close()
    return settings


def _counts(engine: Engine) -> tuple[int, int, int]:
    kb_id = engine.store.kb_id("kb")
    return (
        engine.store.node_count(kb_id),
        len(engine.store.documents(kb_id)),
        engine.store.db.execute("SELECT COUNT(*) FROM builds").fetchone()[0],
    )


def test_another_model_is_refused_with_one_sentence_and_nothing_changes(built, embedder):
    engine = Engine(built, embedder=rotated(embedder))
    try:
        before = _counts(engine)
        with pytest.raises(VectorsOfAnotherModelError) as asked:
            asyncio.run(engine.ask("kb", "Who kept the light in 1887?"))
        message = str(asked.value)
        assert "another embedding model" in message and "RAPTOR_EMBED_MODEL (another-model)" in message
        assert message.count(". ") == 0 and message.endswith(".")
        with pytest.raises(VectorsOfAnotherModelError):
            asyncio.run(engine.ingest("kb", "bees.md", (SAMPLES / "bees.md").read_bytes()))
        assert _counts(engine) == before
        report = engine.doctor(repair=True)
        assert any("built with another embedding model than another-model" in p for p in report.problems)
        assert not any("another embedding model" in r for r in report.repaired)
    finally:
        engine.close()


def test_the_way_out_the_message_names_works(built, embedder):
    """Forgetting the documents and adding them again under the new model makes the knowledge base usable."""
    engine = Engine(built, embedder=rotated(embedder))
    try:
        asyncio.run(engine.forget("kb", "lighthouse_keepers.md"))
        asyncio.run(
            engine.ingest("kb", "lighthouse_keepers.md", (SAMPLES / "lighthouse_keepers.md").read_bytes())
        )
        answer = asyncio.run(engine.ask("kb", "Who kept the light in 1887?"))
        assert answer.citations
        assert not any("another embedding model" in p for p in engine.doctor(repair=False).problems)
    finally:
        engine.close()


def test_another_runtime_of_the_same_model_is_searched(built, embedder):
    """Vectors that differ as an int8 export's do from fp32 (cosine ~0.98) are the same model's."""
    engine = Engine(built, embedder=noisy(embedder))
    try:
        samples = engine.store.leaf_samples(engine.store.kb_id("kb"), 3)
        found = engine.model_check.agreement_of(engine.store, engine.store.kb_id("kb"))
        assert found.samples == len(samples) == 3
        assert SAME_MODEL_COSINE < found.cosine < 0.995
        answer = asyncio.run(engine.ask("kb", "Who kept the light in 1887?"))
        assert answer.citations
    finally:
        engine.close()


def test_the_real_model_reproduces_its_own_leaves(built, embedder):
    """Not bit for bit: int8 activations are scaled per batch, so a leaf embedded beside others differs a
    little (cosine ~0.99) from the same leaf embedded again."""
    engine = Engine(built, embedder=embedder)
    try:
        found = engine.model_check.agreement_of(engine.store, engine.store.kb_id("kb"))
        assert found.cosine > 0.98 and found.same_model
    finally:
        engine.close()


def test_agreement_of_nothing_of_another_size_and_of_unusable_vectors(embedder):
    assert agreement(embedder, []) == Agreement(1.0, 0) and Agreement(1.0, 0).same_model
    short = [(1, "The keeper lit the lamp.", np.ones(10, dtype=np.float32))]
    assert agreement(embedder, short) == Agreement(0.0, 1, other_size=True)
    text = "The keeper lit the lamp."
    own = embedder.embed([text])[0]
    broken = [
        (1, text, np.full(own.shape, np.nan, dtype=np.float32)),
        (2, text, np.zeros(own.shape, np.float32)),
    ]
    assert agreement(embedder, broken) == Agreement(1.0, 0)
    found = agreement(embedder, [*broken, (3, text, own)])
    assert found.samples == 1 and found.cosine > 0.99


class _OneKb:
    """A store whose knowledge base 1 holds the given leaves (what `ModelCheck` reads of a store)."""

    def __init__(self, leaves: list[tuple[int, str, np.ndarray]]) -> None:
        self.leaves = leaves

    def leaf_samples(self, kb_id: int, count: int) -> list[tuple[int, str, np.ndarray]]:
        return self.leaves[:count] if kb_id == 1 else []


def test_two_stores_knowledge_bases_of_the_same_id_are_judged_apart(embedder):
    """Each server's store numbers its knowledge bases from 1: one built with the model and one with
    another, same ids and texts, get their own verdicts in one process, in either order."""
    texts = ["The keeper lit the lamp at dusk.", "The ferry leaves at seven.", "Bees keep the hive warm."]
    own = embedder.embed(texts)
    other = rotated(embedder).embed(texts)
    good = _OneKb([(i + 1, t, own[i]) for i, t in enumerate(texts)])
    bad = _OneKb([(i + 1, t, other[i]) for i, t in enumerate(texts)])
    for first, second in ((good, bad), (bad, good)):
        check = ModelCheck(embedder)
        verdicts = {id(store): check.agreement_of(store, 1).same_model for store in (first, second)}
        assert verdicts == {id(good): True, id(bad): False}
