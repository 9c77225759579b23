"""Load: many questions while ingests run in the same knowledge base, two ingests at once, and two
processes writing one data directory. Builds are serialised, every question is answered from the
last complete tree, and no 'database is locked' (or any other error) reaches a caller."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from raptor_engine import Engine
from raptor_engine.tree.summarize import ExtractiveSummarizer
from raptor_tools.robustness import (
    CRASH_BASE,
    CRASH_DOCUMENTS,
    LOAD_DOCUMENTS,
    Zygote,
    check_after_crash,
    crash_settings,
    run_load,
    seed_crash,
)
from tests.unhurried import unhurried, unhurried_settings

QUESTIONS = 60


async def test_many_questions_while_two_ingests_run_in_the_same_knowledge_base(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        figures = await run_load(engine, "load", QUESTIONS)
        assert figures.errors == []
        assert figures.answered == QUESTIONS
        assert figures.builds == 2
        assert figures.most_queued == 2  # the second ingest waited for the first
        assert figures.overlapping_builds == 0  # their progress never interleaved: serialised
        assert sorted(d.name for d in engine.documents("load")) == sorted(
            [CRASH_BASE[0]] + [name for name, _ in LOAD_DOCUMENTS]
        )
        assert engine.queue_length("load") == 0
        assert engine.doctor(repair=False).problems == []
        usage = engine.usage("load")
        assert usage["questions"] == QUESTIONS  # every answer was recorded, none lost to a lock
    finally:
        engine.close()


async def test_questions_during_a_build_see_only_complete_trees(tmp_path, embedder):
    """While a build is paused mid-summary, questions are answered from the previous tree."""
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    release = asyncio.Event()
    entered = asyncio.Event()

    class Paused(ExtractiveSummarizer):
        async def summarize_many(self, requests):
            entered.set()
            await release.wait()
            return await super().summarize_many(requests)

    try:
        await engine.ingest("kb", CRASH_BASE[0], CRASH_BASE[1].encode())
        engine._summarizer = Paused(embedder.count_tokens)
        name, text = CRASH_DOCUMENTS[0]
        build = asyncio.create_task(engine.ingest("kb", name, text.encode()))
        await asyncio.wait_for(entered.wait(), 60)
        answers = await asyncio.gather(
            *(engine.ask("kb", "What was the signal box built of?") for _ in range(20))
        )
        assert all({c.document for c in a.citations} <= {CRASH_BASE[0]} for a in answers)
        assert all("red brick" in a.text for a in answers)
        assert engine.queue_length("kb") == 1
        release.set()
        result = await build
        assert result.status == "added"
        after = await engine.ask("kb", "What did the tide mill grind?")
        assert "oats" in after.text
    finally:
        release.set()
        engine.close()


async def test_two_engines_on_one_data_dir_keep_the_cross_document_layer_whole(tmp_path, embedder):
    """Two writers (two engines, as two processes would be) adding to one knowledge base at once: the
    second waits for its turn (writers.py) while the first builds (its tree and the cross-document
    layer), then both land and the layer covers every document."""
    settings = unhurried(crash_settings(tmp_path / "data"))
    first = Engine(settings, embedder=embedder)
    second = Engine(settings, embedder=embedder)
    read_tops = asyncio.Event()
    release = asyncio.Event()
    second_waits = asyncio.Event()

    class WaitsForTheOther(ExtractiveSummarizer):
        async def summarize_many(self, requests):
            read_tops.set()
            await release.wait()  # the first writer holds its turn while the second arrives
            return await super().summarize_many(requests)

    make_gate = second._writer_gate

    def watched_gate(kb):
        gate = make_gate(kb)
        enter = gate.enter

        async def announced_enter(waiting=None):
            second_waits.set()
            await enter(waiting)

        gate.enter = announced_enter
        return gate

    try:
        await seed_crash(first)
        first._summarizer = WaitsForTheOther(embedder.count_tokens)
        second._writer_gate = watched_gate
        (name_a, text_a), (name_b, text_b) = CRASH_DOCUMENTS
        slow = asyncio.create_task(first.ingest("crash", name_a, text_a.encode()))
        await asyncio.wait_for(read_tops.wait(), 60)
        other = asyncio.create_task(second.ingest("crash", name_b, text_b.encode()))
        await asyncio.wait_for(second_waits.wait(), 120)
        await asyncio.sleep(0.5)
        assert not other.done()  # its turn comes after the first writer's commit
        assert name_b not in [d.name for d in second.documents("crash")]
        release.set()
        await slow
        await other
        for engine in (first, second):
            assert sorted(d.name for d in engine.documents("crash")) == sorted(
                [CRASH_BASE[0], name_a, name_b]
            )
            assert check_after_crash(engine) == []
            assert engine.doctor(repair=True).healthy
    finally:
        release.set()
        first.close()
        second.close()


@pytest.fixture
def zygote():
    running = Zygote()
    yield running
    running.close()


async def test_two_processes_write_one_data_dir_while_questions_are_answered(tmp_path, embedder, zygote):
    """A forked ingest process and this process write the same SQLite file at the same time."""
    data_dir = tmp_path / "data"
    engine = Engine(unhurried(crash_settings(data_dir)), embedder=embedder)
    try:
        await seed_crash(engine)  # "crash" (written by the other process) already answers
        zygote.start_ingest(data_dir, tmp_path / "stages")
        figures = await run_load(engine, "load", 30)  # meanwhile: two ingests and 30 questions here
        crash_answers = await asyncio.gather(
            *(engine.ask("crash", "What was the signal box built of?") for _ in range(10))
        )
        how, code = await asyncio.to_thread(zygote.wait)
        assert (how, code) == ("exit", 0)
        assert figures.errors == [] and figures.answered == 30
        assert all("red brick" in a.text for a in crash_answers)
        names = sorted(d.name for d in engine.documents("crash"))
        assert names == sorted([CRASH_BASE[0]] + [n for n, _ in CRASH_DOCUMENTS])
        assert check_after_crash(engine) == []
        assert engine.doctor(repair=False).problems == []  # this process's indices caught up by version
        context = engine.retrieve("crash", "choir at the viaduct opening")
        assert any(n.document == "choir.txt" for n in context.nodes)
        with sqlite3.connect(engine.settings.db_path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        engine.close()


# ---- through the bot ---------------------------------------------------------------------------------------

from tests.bot.conftest import BOB, bot_settings, fake_api, make_harness, text_of  # noqa: E402, F401


async def test_the_bot_answers_every_question_while_two_uploads_build(make_harness):  # noqa: F811
    """Users on Discord: 20 /ask at once while two /kb add builds queue in the same channel."""
    from tests.bot.test_bot_flows import add_doc

    h = await make_harness()
    await add_doc(h, "box.txt", CRASH_BASE[1])
    adds = [h.kb_add(h.fake.add_file(name, text.encode())) for name, text in LOAD_DOCUMENTS]
    asks = [h.ask("What was the signal box built of?", user=BOB + i) for i in range(20)]
    for token in asks:
        replies = await h.replies_done(token, what="an answer under load")
        said = " ".join(text_of(m) for m in replies)
        assert "red brick" in said, said
        assert "⚠️" not in said and "locked" not in said.lower()
    for token in adds:
        replies = await h.replies_done(token, lambda r: "Done" in text_of(r[0]), what="an upload under load")
        assert "Done" in text_of(replies[0])
    assert sorted(d.name for d in h.engine.documents(h.engine.knowledge_bases()[0])) == sorted(
        ["box.txt"] + [name for name, _ in LOAD_DOCUMENTS]
    )
