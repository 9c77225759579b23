"""Message documents built on the Dask workers, as uploads are: the embedded LocalCluster the bot starts by
default (mutual TLS, the project's version as a resource), driven through `Engine.add_messages` and
`remove_messages` beside an engine that builds in its own threads (the CLI's path), with the same results.

The faults (a worker killed mid-rebuild, a rebuild that kills every worker, a deadline) are in
tests/test_workers.py, on its cluster of `raptor worker` processes.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import replace

import numpy as np
import pytest

from raptor_engine import Engine
from raptor_engine.ingest.messages import MessagePlace
from raptor_engine.workers import PROGRESS_TOPIC, BuildCluster, ClusterUnreachableError
from tests.dask_processes import finished_builds
from tests.message_samples import history, message
from tests.unhurried import patient, unhurried_settings

CHANNEL = MessagePlace(400, "general")
GATE = "The gate code for the boathouse is 4417"


def tree_of(engine: Engine, kb: str) -> tuple[list[tuple], np.ndarray, list[tuple[int, int]]]:
    """A knowledge base's nodes in id order ((document, layer, kind, text) each), their vectors, its edges."""
    with engine.in_space(kb):
        kb_id = engine.store.kb_id(kb)
        nodes = [(n.document, n.layer, n.kind, n.text) for n in engine.store.nodes_of_kb(kb_id)]
        _, vectors = engine.store.embeddings(kb_id)
        edges = sorted(engine.store.tree_shape(kb_id).edges)
    return nodes, vectors, edges


def assert_same_trees(here: Engine, there: Engine, kb: str) -> None:
    """The same documents, nodes, summaries and edges; vectors within float tolerance (the worker's model
    runs on one thread, the engine's on several)."""
    assert [(d.name, d.chunks, d.layers, d.tokens) for d in here.documents(kb)] == [
        (d.name, d.chunks, d.layers, d.tokens) for d in there.documents(kb)
    ]
    nodes_here, vectors_here, edges_here = tree_of(here, kb)
    nodes_there, vectors_there, edges_there = tree_of(there, kb)
    assert nodes_here == nodes_there and edges_here == edges_there
    np.testing.assert_allclose(vectors_here, vectors_there, atol=1e-4)


async def message_builds(cluster: BuildCluster) -> list[str]:
    """The message rebuilds the cluster ran to their result (the scheduler's task log)."""
    return [key for key in await cluster.client.run_on_scheduler(finished_builds) if "raptor-build-messages-" in key]


async def test_message_rebuilds_run_on_a_worker_and_store_what_an_in_process_build_stores(tmp_path, embedder):
    settings = unhurried_settings(message_group_tokens=300, build_workers=1)
    here = Engine(replace(settings, data_dir=tmp_path / "here"), embedder=embedder)
    there = Engine(replace(settings, data_dir=tmp_path / "there"), embedder=embedder)
    there.cluster = cluster = await BuildCluster.start(there.settings)  # the bot's default: embedded, TLS
    stages: list[str] = []
    try:
        assert cluster.local is not None and cluster.local.scheduler_address.startswith("tls://127.0.0.1:")
        await cluster.client.wait_for_workers(1, timeout=patient(120))
        steps = [
            ("add_messages", (CHANNEL, history(40))),  # an import
            ("add_messages", (CHANNEL, [message(40, "Note 40: the regatta starts at noon on Saturday.")])),  # sync
            ("add_messages", (CHANNEL, [message(7, "Note 7: the ferry now leaves from the south pier.")])),  # edit
            ("remove_messages", ([10_005],)),  # a deletion (the gate code)
        ]
        for done, (method, args) in enumerate(steps, start=1):
            await getattr(here, method)("kb", *args)
            kwargs = {"progress": lambda event: stages.append(event.stage)} if method == "add_messages" else {}
            await getattr(there, method)("kb", *args, **kwargs)
            assert_same_trees(here, there, "kb")
            assert len(await message_builds(cluster)) == done  # each rebuild ran on the worker
        assert {"embed", "cluster", "summarise"} <= set(stages)  # its progress came back from the worker
        events = [msg for _, msg in await cluster.client.get_events(PROGRESS_TOPIC)]
        assert sum(1 for msg in events if msg.get("stage") == "begun") == len(steps)
        nodes, *_ = tree_of(there, "kb")
        assert not any(GATE in text for *_, text in nodes)
        assert any("the regatta starts at noon" in text for *_, text in nodes)
        answer = await there.ask("kb", "Where does the ferry leave from now?")
        assert "south pier" in answer.text
    finally:
        await cluster.close()
        here.close()
        there.close()


async def test_a_removal_sends_no_removed_text_to_the_worker(tmp_path, embedder, monkeypatch):
    """What goes to the worker is the kept messages' chunks and the stored vectors of those chunks only:
    the removed message's text does not leave the bot's process."""
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data", message_group_tokens=300), embedder=embedder)
    await engine.add_messages("kb", CHANNEL, history(20))
    sent: list[tuple] = []

    async def capture(self, name, chunk_lists, known, settings, progress, budget=None, dim=None):
        sent.append((chunk_lists, known))
        raise ClusterUnreachableError("The build workers were lost while building it; nothing was stored.")

    monkeypatch.setattr(BuildCluster, "build_trees", capture)
    engine.cluster = BuildCluster(engine.settings, "tcp://127.0.0.1:9")  # never connected: build_trees is captured
    try:
        result = await engine.remove_messages("kb", [10_005])
        assert result.removed == 1
        [(chunk_lists, known)] = sent
        texts = [chunk.text for chunks in chunk_lists for chunk in chunks]
        assert texts and set(known) <= set(texts)  # the kept leaves' vectors travel, to be reused
        assert not any(GATE in text for text in [*texts, *known])
        nodes, *_ = tree_of(engine, "kb")
        assert not any(GATE in text for *_, text in nodes)  # built here instead, once the cluster failed
    finally:
        engine.close()


async def test_a_removal_that_only_empties_documents_sends_no_task(tmp_path, embedder, monkeypatch):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data", message_group_tokens=300), embedder=embedder)
    thread = MessagePlace(500, "Ferry questions", thread=True)
    await engine.add_messages("kb", thread, history(3, channel=500, base_id=20_000))
    await engine.add_messages("kb", CHANNEL, history(5))
    sent: list[str] = []

    async def capture(self, name, *args, **kwargs):
        sent.append(name)
        raise AssertionError("no task expected")

    monkeypatch.setattr(BuildCluster, "build_trees", capture)
    engine.cluster = BuildCluster(engine.settings, "tcp://127.0.0.1:9")
    try:
        result = await engine.remove_messages("kb", [20_000, 20_001, 20_002])
        assert result.removed == 3 and result.removed_documents == 1 and sent == []
        assert "Ferry questions" not in [d.name for d in engine.documents("kb")]
    finally:
        engine.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_without_reachable_workers_an_addition_is_refused_in_one_sentence_and_a_deletion_still_happens(
    tmp_path, embedder
):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data", message_group_tokens=300), embedder=embedder)
    await engine.add_messages("kb", CHANNEL, history(20))  # no cluster yet: in this process
    before = tree_of(engine, "kb")[0]
    address = f"tcp://127.0.0.1:{_free_port()}"
    engine.cluster = await BuildCluster.start(engine.settings, address)  # logs, does not raise
    try:
        with pytest.raises(ClusterUnreachableError) as caught:
            await asyncio.wait_for(engine.add_messages("kb", CHANNEL, [message(20, "Note 20: a new one.")]), patient(60))
        assert str(caught.value) == (
            f"The build workers (Dask scheduler {address}) cannot be reached; the messages were not stored, "
            "try again later."
        )
        assert tree_of(engine, "kb")[0] == before and 10_020 not in engine.message_ids("kb")
        result = await asyncio.wait_for(engine.remove_messages("kb", [10_005]), patient(120))
        assert result.removed == 1
        assert not any(GATE in text for *_, text in tree_of(engine, "kb")[0])
    finally:
        await engine.cluster.close()
        engine.close()


def test_the_trees_of_a_message_rebuild_travel_as_small_pickles_and_come_back_whole(tmp_path, embedder):
    from raptor_engine.ingest.messages import message_chunks
    from raptor_engine.tree.docbuild import build_trees
    from raptor_engine.tree.summarize import ExtractiveSummarizer
    from raptor_engine.workers import SLICE_ITEMS, pack_trees, unpack_trees

    settings = unhurried_settings(data_dir=tmp_path / "data")
    summarizer = ExtractiveSummarizer(embedder.count_tokens, count_tokens_batch=embedder.count_tokens_batch)
    chunk_lists = [
        message_chunks(
            history(count), embedder.count_tokens, embedder.count_tokens_batch,
            max_tokens=settings.chunk_tokens, hard_limit=embedder.max_tokens, max_chars=settings.node_max_chars,
        )[0]
        for count in (50, 3)
    ]  # fmt: skip
    trees = asyncio.run(build_trees(chunk_lists, embedder=embedder, summarizer=summarizer, settings=settings))
    parts = pack_trees(trees, {"k": "cached"})
    assert len(parts) == 1 + -(-sum(len(t.nodes) for t in trees) // SLICE_ITEMS)
    back, added = unpack_trees(parts)
    assert added == {"k": "cached"} and [t.layers for t in back] == [t.layers for t in trees]
    for got, built in zip(back, trees, strict=True):
        assert [(n.key, n.layer, n.text, n.children) for n in got.nodes] == [
            (n.key, n.layer, n.text, n.children) for n in built.nodes
        ]
        assert all((a.embedding == b.embedding).all() for a, b in zip(got.nodes, built.nodes, strict=True))



def test_a_workers_begun_event_restarts_the_engines_budget_and_is_no_progress(tmp_path):
    """A message rebuild has no 'load' stage: the task's first event, 'begun', is what restarts the engine's
    copy of its budget (held while the task waited for a worker); no progress display is told of it."""
    import time

    from raptor_engine.config import Settings
    from raptor_engine.ingest.budget import BuildBudget

    cluster = BuildCluster(Settings(data_dir=tmp_path / "data", build_worker_wait=30))
    budget = BuildBudget("#general 2026-03-01", seconds=60, memory_mb=0)
    budget.hold()
    told: list = []
    cluster._budgets["b1"], cluster._progress["b1"] = budget, told.append
    cluster._on_progress((time.time(), {"id": "b1", "stage": "begun"}))
    assert 85 < budget.remaining() <= 90 and told == []
    cluster._on_progress((time.time(), {"id": "b1", "stage": "embed", "done": 1, "total": 3}))
    assert [(p.stage, p.done, p.total) for p in told] == [("embed", 1, 3)]
