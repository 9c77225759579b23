"""Memory stays bounded: open stores and loaded indices live in an LRU with a byte budget.

Knowledge bases are written straight into their spaces by the many-kbs benchmark's writer (random
vectors, no model), so these tests take seconds. Speed is never asserted; `raptor bench --many-kbs`
prints it.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest
from click.testing import CliRunner

from raptor_engine.cli import cli
from raptor_engine.storage import memory
from raptor_engine.storage.index import NodeTokens
from raptor_engine.storage.memory import MemoryBudget
from raptor_tools.bench_spaces import ManyKbsPlan, _engine, write_kbs, zipf_choices

PLAN = ManyKbsPlan(kbs=8, guilds=3, min_nodes=30, max_nodes=60, questions=60, memory_mb=1)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    data = tmp_path_factory.mktemp("many") / "data"
    write_kbs(PLAN, data)
    return data


def test_the_budget_evicts_the_least_recently_used_and_never_a_pinned_entry():
    closed: list[str] = []
    budget = MemoryBudget(100)
    pinned = {"b": True}
    for key in "abc":
        budget.admit(key, 40, lambda key=key: closed.append(key), lambda key=key: pinned.get(key, False))
    assert closed == ["a"] and budget.used == 80  # a was the oldest; b is pinned but was not needed
    budget.touch("b")
    budget.admit("d", 40, lambda: closed.append("d"))
    assert closed == ["a", "c"]  # c is now the least recently used unpinned entry (b is pinned)
    budget.admit("e", 90, lambda: closed.append("e"))
    assert closed == ["a", "c", "d"] and "b" in budget and "e" in budget  # over budget only by pins
    unbounded = MemoryBudget(0)
    for key in range(100):
        unbounded.admit(key, 10**9, lambda: closed.append("never"))
    assert "never" not in closed and unbounded.peak == 100 * 10**9


def test_evictions_hand_freed_memory_back_to_the_system(monkeypatch):
    """glibc keeps freed heap blocks; without a trim after evictions the process grew ~40% past the budget."""
    trims: list[int] = []
    original = memory.release_freed_memory
    monkeypatch.setattr(memory, "release_freed_memory", lambda: trims.append(1))
    budget = MemoryBudget(100)
    budget.admit("a", 60, lambda: None)
    budget.admit("b", 30, lambda: None)
    assert trims == []  # nothing evicted, nothing to give back
    budget.admit("c", 60, lambda: None)
    assert trims == [1]
    original()  # the real one runs wherever the C library has malloc_trim, and is a no-op elsewhere
    if sys.platform.startswith("linux"):
        assert memory._malloc_trim() is not None  # glibc, as on this project's CI


def test_node_tokens_is_a_compact_mapping_of_node_ids_to_token_counts():
    tokens = NodeTokens([30, 10, 20], [3, 1, 2])
    assert dict(tokens) == {10: 1, 20: 2, 30: 3} and len(tokens) == 3
    assert 20 in tokens and 25 not in tokens and "20" not in tokens and tokens[30] == 3
    with pytest.raises(KeyError):
        tokens[25]
    assert tokens.counts_of([30, 25, 10, 99, 0]) == {30: 3, 10: 1}
    assert tokens.keys() - {10} == {20, 30}  # the index's set arithmetic over ids
    assert dict(tokens.without({20, 99})) == {10: 1, 30: 3}
    assert dict(tokens.with_counts({20: 5, 40: 4})) == {10: 1, 20: 5, 30: 3, 40: 4}
    assert NodeTokens().counts_of([1]) == {} and 1 not in NodeTokens()
    with pytest.raises(ValueError):
        NodeTokens([1, 2], [1])
    ids = np.arange(2000, dtype=np.int64) * 7
    assert NodeTokens(ids, np.ones(2000, dtype=np.int32)).counts_of([14, 15]) == {14: 1}


def test_the_benchmarks_peak_memory_is_the_childs_own_not_its_parents():
    """ru_maxrss survives exec: a question run started by a parent holding 400 MB reported 400 MB."""
    held = np.ones(400 * 2**20 // 8)  # 400 MB touched in this (the parent) process
    code = "from raptor_tools.bench_spaces import _peak_rss_bytes as p; print(p() // 2**20)"
    peak_mb = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert held.sum() > 0 and peak_mb < 300


def test_questions_under_a_tiny_budget_reload_from_disk_and_answer_the_same(written):
    bounded, unbounded = _engine(written, 1), _engine(written, 0)
    try:
        for number, kb in enumerate(zipf_choices(PLAN)):
            question = f"question {number}"
            got = [(n.node_id, n.text) for n in bounded.retrieve(kb, question).nodes]
            assert got == [(n.node_id, n.text) for n in unbounded.retrieve(kb, question).nodes]
            # 1 MB holds less than one server's store and one index: only the last question's stay open
            assert len(bounded.spaces.budget) <= 2 and bounded.spaces.open_count() <= 1
        assert bounded.spaces.budget.evictions > 0
        assert unbounded.spaces.budget.evictions == 0 and unbounded.spaces.open_count() == PLAN.guilds
    finally:
        bounded.close()
        unbounded.close()


def test_a_question_never_waits_for_another_knowledge_bases_load(written, monkeypatch):
    """Loading one knowledge base's index (held here on an event) blocks neither a question to another
    knowledge base of the same server nor one of another server."""
    from raptor_engine.storage.index import IndexManager

    engine = _engine(written, 0)
    names = PLAN.kb_names()
    slow, same_space, other_space = names[0], names[PLAN.guilds], names[1]
    assert engine.space_of(slow) == engine.space_of(same_space) != engine.space_of(other_space)
    loading, release = threading.Event(), threading.Event()
    real_load = IndexManager._load

    def held_load(self, kb_id):
        if self.owner == engine.space_of(slow) and self.store.kb_id(slow) == kb_id:
            loading.set()
            assert release.wait(60)
        return real_load(self, kb_id)

    monkeypatch.setattr(IndexManager, "_load", held_load)
    stuck = threading.Thread(target=engine.retrieve, args=(slow, "first"))
    stuck.start()
    try:
        assert loading.wait(60)
        for kb in (same_space, other_space):
            done = threading.Thread(target=engine.retrieve, args=(kb, "second"))
            done.start()
            done.join(60)
            assert not done.is_alive(), f"the question to {kb} waited for {slow}'s load"
        assert stuck.is_alive()
    finally:
        release.set()
        stuck.join(60)
        engine.close()


def test_bench_many_kbs_prints_both_runs(tmp_path):
    result = CliRunner().invoke(
        cli,
        ["bench", "--many-kbs", "--kbs", "4", "--guilds", "2", "--nodes", "20-30", "--questions", "30"]
        + ["--memory-mb", "1", "--data-dir", str(tmp_path / "data")],
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if not line.startswith("·")]  # progress
    assert lines[0].startswith("4 knowledge bases in 2 spaces") and "30 questions" in lines[0]
    assert lines[2].startswith("1 MB") and lines[3].startswith("none")
    assert "load average" in lines[4]
    bad = CliRunner().invoke(cli, ["bench", "--many-kbs", "--nodes", "twenty"])
    assert bad.exit_code != 0 and "--nodes is a range" in bad.output
