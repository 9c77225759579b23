"""A parse child started ahead (`parse_worker.start_spare`) reads the next upload as a child started for it
would, and is never used when it died or was started with another environment."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from raptor_engine import Engine, Settings
from raptor_engine.ingest import parse_worker
from raptor_engine.ingest.parse_worker import WorkerLimits, discard_spare, load_isolated, start_spare
from tests.sample_texts import BEEKEEPING

TEXT = b"The keeper lit the lamp at dusk.\n\nShips passed the rock all night, and none struck it."


@pytest.fixture(autouse=True)
def _no_spare_left():
    discard_spare()
    yield
    discard_spare()


def _count_starts(monkeypatch) -> list[int]:
    """Record each child started for a parse (not the spare's own start)."""
    started: list[int] = []
    real = parse_worker._start_child

    def start(env):
        child = real(env)
        started.append(child.pid)
        return child

    monkeypatch.setattr(parse_worker, "_start_child", start)
    return started


def test_the_spare_child_reads_the_upload_as_a_fresh_child_does(monkeypatch):
    fresh, _ = load_isolated("note.txt", TEXT, WorkerLimits())
    start_spare()
    spare = parse_worker._spare[0][0]
    started = _count_starts(monkeypatch)
    doc, stats = load_isolated("note.txt", TEXT, WorkerLimits())
    assert doc == fresh and stats.outcome == "read"
    assert started == [] and spare.returncode == 0  # the spare read it, and nothing else was started
    assert parse_worker._spare == []  # taken: a spare serves one parse


def test_a_dead_spare_is_not_used(monkeypatch):
    start_spare()
    spare = parse_worker._spare[0][0]
    spare.kill()
    spare.wait()
    started = _count_starts(monkeypatch)
    doc, _ = load_isolated("note.txt", TEXT, WorkerLimits())
    assert "keeper lit the lamp" in doc.text
    assert len(started) == 1 and started[0] != spare.pid


def test_a_spare_started_with_another_environment_is_ended_not_used(monkeypatch):
    start_spare()
    spare = parse_worker._spare[0][0]
    real_environment = parse_worker._child_environment
    monkeypatch.setattr(parse_worker, "_child_environment", lambda: {**real_environment(), "LANG": "C.UTF-8x"})
    started = _count_starts(monkeypatch)
    doc, _ = load_isolated("note.txt", TEXT, WorkerLimits())
    assert "keeper lit the lamp" in doc.text
    assert len(started) == 1 and spare.poll() is not None  # ended, and a child with this environment read it


def test_a_spare_refuses_a_bomb_within_the_limits_set_after_it_started():
    """The spare sets the memory and CPU limits from the header it is sent, as a fresh child does."""
    start_spare()
    with pytest.raises(Exception, match="(?i)limit|large|memory|bytes"):
        load_isolated("big.txt", b"x" * 5000, WorkerLimits(max_bytes=1000))


def test_start_spare_keeps_one_and_discard_ends_it():
    start_spare()
    first = parse_worker._spare[0][0]
    start_spare()
    assert parse_worker._spare[0][0] is first
    discard_spare()
    assert parse_worker._spare == [] and first.poll() is not None


def test_a_warmed_engine_keeps_a_spare_after_an_ingest_and_ends_it_on_close(tmp_path: Path, embedder):
    engine = Engine(Settings.from_env(data_dir=tmp_path / "data"), embedder=embedder)
    engine._spare_parses = True  # what `warm()` sets (its model and UMAP warm-up are not this test's)
    start_spare()
    spare = parse_worker._spare[0][0]
    result = asyncio.run(engine.ingest("kb", "bees.txt", BEEKEEPING.encode()))
    assert result.status == "added"
    assert spare.returncode == 0  # the ingest's parse was the spare's
    waiting = parse_worker._spare[0][0]
    assert waiting.poll() is None and waiting.pid != spare.pid  # the next upload's
    engine.close()
    assert parse_worker._spare == [] and waiting.poll() is not None


def test_an_engine_that_was_not_warmed_starts_no_spare(tmp_path: Path, embedder):
    engine = Engine(Settings.from_env(data_dir=tmp_path / "data"), embedder=embedder)
    asyncio.run(engine.ingest("kb", "bees.txt", BEEKEEPING.encode()))
    assert parse_worker._spare == []
    engine.close()
