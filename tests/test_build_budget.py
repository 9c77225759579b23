"""Issue 22: every upload's build, parse through summaries, has a deadline and a memory ceiling
(RAPTOR_BUILD_TIMEOUT, RAPTOR_BUILD_MEMORY_MB). Past either the build stops at its next checkpoint, the
user gets one sentence naming the limit, and the store is unchanged; the budget holds in the threads
the build starts and in another process it is sent to."""

from __future__ import annotations

import asyncio
import pickle
import threading
import time

import pytest

from raptor_engine import Engine, Settings
from raptor_engine.errors import LimitError
from raptor_engine.ingest import budget as budget_module
from raptor_engine.ingest.budget import BuildBudget, BuildLimitError, checked, checkpoint, current_budget
from raptor_engine.tree.summarize import ExtractiveSummarizer
from raptor_engine.types import Summary, SummaryRequest
from raptor_tools.fingerprint import SAFE_TEXT, fingerprint
from raptor_tools.hostile import unclosed_tags_html
from tests.unhurried import unhurried_settings

MB = 1024 * 1024
LONGER_TEXT = " ".join(f"Entry {n}. {SAFE_TEXT}" for n in range(12))  # enough leaves to summarise


def deadline_sentence(name: str, seconds: float) -> str:
    return (
        f"{name} was not added: building it took longer than the {seconds:g} s allowed for one upload; "
        "split it into smaller files."
    )


# ------------------------------------------------------------------------------------------- the budget


def test_checkpoint_is_a_no_op_outside_a_build():
    assert current_budget() is None
    checkpoint()
    assert list(checked(range(10_000))) == list(range(10_000))


def test_a_budget_is_seen_in_the_threads_a_build_starts_and_stops_them_there():
    budget = BuildBudget("a.txt", seconds=0.2, memory_mb=0)

    def long_loop() -> int:
        assert current_budget() is budget
        return sum(1 for _ in checked(iter(lambda: time.sleep(0.001), 1), every=10))  # endless but checked

    async def build() -> None:
        with budget.active():
            await asyncio.to_thread(long_loop)

    with pytest.raises(BuildLimitError) as caught:
        asyncio.run(build())
    assert str(caught.value) == deadline_sentence("a.txt", 0.2)
    assert current_budget() is None  # deactivated on the way out


def test_bound_ends_an_await_at_the_deadline():
    budget = BuildBudget("b.txt", seconds=0.2, memory_mb=0)

    async def build() -> None:
        with budget.active():
            await budget.bound(asyncio.sleep(30))

    with pytest.raises(BuildLimitError, match="took longer than the 0.2 s"):
        asyncio.run(build())


def test_bound_follows_a_deadline_restarted_while_it_waits():
    """A build queued for a worker restarts its deadline when it begins; the await bounded by the old
    one must not end at the old deadline."""

    async def build(restart: bool) -> str:
        budget = BuildBudget("q.txt", seconds=1.0, memory_mb=0)  # its clock starts with this run

        async def restart_later() -> None:
            await asyncio.sleep(0.7)
            if restart:
                budget.restart()

        async def work() -> str:
            await asyncio.sleep(1.3)
            return "built"

        mover = asyncio.create_task(restart_later())
        try:
            return await budget.bound(work())
        finally:
            await mover

    assert asyncio.run(build(True)) == "built"
    with pytest.raises(BuildLimitError):
        asyncio.run(build(False))  # the same wait without the restart ends at the first deadline


def test_a_held_clock_does_not_run_until_restarted():
    """Queued on a cluster, a build waits for a worker as long as it must: its clock is held."""
    budget = BuildBudget("held.txt", seconds=0.5, memory_mb=0)

    async def wait_then_work() -> str:
        budget.hold()
        await asyncio.sleep(1.2)  # the wait for a worker: past the 0.5 s, not charged
        budget.restart()
        await asyncio.sleep(0.1)
        return "built"

    assert asyncio.run(budget.bound(wait_then_work())) == "built"
    budget.restart()
    with pytest.raises(BuildLimitError):
        asyncio.run(budget.bound(asyncio.sleep(5)))  # once restarted it bounds again


def test_a_budget_sent_to_another_process_keeps_its_deadline():
    budget = BuildBudget("c.txt", seconds=60, memory_mb=512)
    copy = pickle.loads(pickle.dumps(budget))
    assert (copy.name, copy.deadline, copy.memory_mb) == ("c.txt", budget.deadline, 512)
    expired = pickle.loads(pickle.dumps(BuildBudget("d.txt", seconds=1e-6, memory_mb=0)))
    time.sleep(0.01)
    with expired.active(), pytest.raises(BuildLimitError):
        checkpoint()


def test_the_watchdog_trips_when_the_process_grows_past_the_ceiling():
    budget = BuildBudget("e.txt", seconds=0, memory_mb=48)
    with budget.active():
        blob = b"\x01" * (160 * MB)  # written, so resident
        for _ in range(500):
            if budget.tripped:
                break
            time.sleep(0.01)
        with pytest.raises(BuildLimitError) as caught:
            checkpoint()
        del blob
    assert str(caught.value) == (
        "e.txt was not added: building it needed more than the 48 MB of memory allowed for one upload; "
        "split it into smaller files."
    )
    assert budget.peak_growth_mb > 48


def test_the_bounds_are_settings():
    assert (Settings().build_timeout, Settings().build_memory_mb) == (60.0, 2048)


def test_the_bounds_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("RAPTOR_BUILD_TIMEOUT", "12.5")
    monkeypatch.setenv("RAPTOR_BUILD_MEMORY_MB", "300")
    settings = Settings.from_env()
    assert (settings.build_timeout, settings.build_memory_mb) == (12.5, 300)


def test_a_build_whose_summaries_come_from_an_llm_gets_the_llm_deadline(tmp_path):
    bounds = dict(build_timeout=60.0, llm_build_timeout=900.0, build_memory_mb=512)
    with_model = Engine(Settings(data_dir=tmp_path / "m", llm_base_url="http://127.0.0.1:9/v1", **bounds))
    extractive = Engine(Settings(data_dir=tmp_path / "e", **bounds))
    try:
        assert (with_model.build_budget("a.txt").seconds, with_model.build_budget("a.txt").memory_mb) == (900.0, 512)
        assert (extractive.build_budget("a.txt").seconds, extractive.build_budget("a.txt").memory_mb) == (60.0, 512)
    finally:
        with_model.close()
        extractive.close()


# ------------------------------------------------------------------------------------ through the engine


@pytest.fixture
def engine(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path), embedder=embedder)
    asyncio.run(engine.ingest("kb", "base.txt", SAFE_TEXT.encode()))
    yield engine
    engine.close()


def refused(engine: Engine, name: str, data: bytes) -> str:
    before = fingerprint(engine)
    with pytest.raises(LimitError) as caught:
        asyncio.run(engine.ingest("kb", name, data))
    assert fingerprint(engine) == before
    assert [d.name for d in engine.documents("kb")] == ["base.txt"]
    return str(caught.value)


def test_a_tiny_deadline_stops_an_ordinary_build_with_its_sentence(engine):
    engine.settings.build_timeout = 0.001
    assert refused(engine, "notes.txt", LONGER_TEXT.encode()) == deadline_sentence("notes.txt", 0.001)


class CheckingSummarizer:
    """An extractive summariser that first works for up to 30 s in its thread, checking the budget as a
    build's own steps do; `stopped` is set when its thread ends, however it ends. With `expire_after`,
    the build's deadline is moved to that many seconds after the summaries begin, so the deadline
    falls inside them however long a loaded machine took to get there."""

    name = "checking"
    input_budget = 3500

    def __init__(self, embedder, expire_after: float | None = None) -> None:
        self.inner = ExtractiveSummarizer(embedder.count_tokens, count_tokens_batch=embedder.count_tokens_batch)
        self.stopped = threading.Event()
        self.expire_after = expire_after

    def _work(self, requests: list[SummaryRequest]) -> list[Summary]:
        try:
            budget = current_budget()
            if self.expire_after is not None and budget is not None:
                budget.deadline = time.time() + self.expire_after
            ends = time.monotonic() + 30
            while time.monotonic() < ends:
                checkpoint()
                time.sleep(0.005)
            return self.inner.summarize_all(requests)
        finally:
            self.stopped.set()

    async def summarize_many(self, requests: list[SummaryRequest]) -> list[Summary]:
        return await asyncio.to_thread(self._work, requests)


def test_a_build_past_its_deadline_stops_in_its_thread_too(tmp_path, embedder):
    """The deadline passes while the summaries run in their thread: the build ends with its sentence at
    the deadline, and the thread left behind stops at its next checkpoint."""
    summarizer = CheckingSummarizer(embedder)
    engine = Engine(unhurried_settings(data_dir=tmp_path), embedder=embedder, summarizer=summarizer)
    asyncio.run(engine.ingest("kb", "base.txt", SAFE_TEXT.encode()))
    engine.settings.build_timeout = 3600.0  # reached on any machine; the summaries then move it closer
    summarizer.expire_after = 0.5
    summarizer.stopped.clear()
    assert refused(engine, "notes.txt", LONGER_TEXT.encode()) == deadline_sentence("notes.txt", 3600.0)
    assert summarizer.stopped.wait(10)  # the thread left behind stopped at its next checkpoint
    engine.close()


def test_a_build_past_its_memory_ceiling_stops_with_its_sentence(tmp_path, embedder, monkeypatch):
    summarizer = CheckingSummarizer(embedder)
    engine = Engine(unhurried_settings(data_dir=tmp_path), embedder=embedder, summarizer=summarizer)
    asyncio.run(engine.ingest("kb", "base.txt", SAFE_TEXT.encode()))
    readings = iter([500.0])  # the build starts at 500 MB, then its process holds 5 GB
    monkeypatch.setattr(budget_module, "current_rss_mb", lambda: next(readings, 5000.0))
    engine.settings.build_memory_mb = 1000
    assert refused(engine, "notes.txt", LONGER_TEXT.encode()) == (
        "notes.txt was not added: building it needed more than the 1,000 MB of memory allowed for one "
        "upload; split it into smaller files."
    )
    engine.close()


def test_a_parse_cut_short_by_the_build_deadline_says_the_build_took_too_long(engine):
    engine.settings.max_elements = 10**9  # the parse itself would run to its own 30 s
    engine.settings.build_timeout = 2.0
    assert refused(engine, "tags.html", unclosed_tags_html(15 * MB)) == deadline_sentence("tags.html", 2.0)


def test_a_parse_cut_short_by_the_budget_on_a_worker_says_the_build_took_too_long(tmp_path, embedder):
    """On a Dask worker no `bound` ends the build at its deadline: the parse child, whose own deadline the
    budget cut to its remaining time, is killed first. The user gets the budget's sentence, not the parse's
    ("took longer than 1.5 s to read"), however fast the machine: a parse that finished in time would
    have met the deadline at the next checkpoint instead."""
    from raptor_engine.tree.docbuild import build_document

    settings = Settings(data_dir=tmp_path, max_elements=10**9)  # the parse itself would run to its own 30 s
    summarizer = ExtractiveSummarizer(embedder.count_tokens, count_tokens_batch=embedder.count_tokens_batch)
    budget = BuildBudget("tags.html", seconds=0.5, memory_mb=0)

    async def on_a_worker() -> None:
        with budget.active():
            await build_document(
                "tags.html", unclosed_tags_html(15 * MB), settings=settings, held=0, embedder=embedder,
                summarizer=summarizer,
            )  # fmt: skip

    with pytest.raises(BuildLimitError) as caught:
        asyncio.run(on_a_worker())
    assert str(caught.value) == deadline_sentence("tags.html", 0.5)
