"""An engine's first ingest loads the embedding model while the parse child reads the upload."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from raptor_engine import Engine, IngestError, Settings
from raptor_engine import engine as engine_module
from raptor_engine.tree import docbuild
from tests.sample_texts import BEEKEEPING

WAIT_S = 120  # a guard against a hang, not a timing: each side only waits for the other to begin


def _fresh_engine(tmp_path: Path, embedder, monkeypatch) -> tuple[Engine, threading.Event, list[str]]:
    """An engine with no model loaded yet, whose model load only finishes once the parse has begun."""
    parse_began = threading.Event()
    order: list[str] = []
    real_parse = docbuild.load_isolated

    def parse(*args, **kwargs):
        order.append("parse begins")
        parse_began.set()
        return real_parse(*args, **kwargs)

    def load_model(*args, **kwargs):
        order.append("model load begins")
        if not parse_began.wait(WAIT_S):
            raise AssertionError("the model was loaded before the upload's parse began")
        return embedder  # the session's model: the test is about the order, not the loading

    monkeypatch.setattr(docbuild, "load_isolated", parse)
    monkeypatch.setattr(engine_module, "Embedder", load_model)
    return Engine(Settings.from_env(data_dir=tmp_path / "data")), parse_began, order


def test_the_model_loads_while_the_upload_is_parsed(tmp_path, embedder, monkeypatch):
    engine, _, order = _fresh_engine(tmp_path, embedder, monkeypatch)
    try:
        result = asyncio.run(engine.ingest("kb", "bees.txt", BEEKEEPING.encode(), added_by="test"))
    finally:
        engine.close()
    assert result.status == "added" and result.nodes > 1
    assert set(order) == {"model load begins", "parse begins"}
    assert engine._embedder is embedder


def test_an_upload_refused_while_the_model_loads_is_one_clear_error(tmp_path, embedder, monkeypatch):
    engine, parse_began, _ = _fresh_engine(tmp_path, embedder, monkeypatch)
    try:
        with pytest.raises(IngestError, match="no text"):
            asyncio.run(engine.ingest("kb", "empty.txt", b"   \n\n  ", added_by="test"))
        assert parse_began.is_set()
    finally:
        engine.close()
