"""Shared fixtures: one real embedder per test session (loading it costs seconds)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def embedder():
    from raptor_engine.embed import Embedder

    return Embedder()
