"""LLM faults injected through the in-process OpenAI-protocol server, seen from the engine and the bot.

tests/test_llm.py covers single faults at the client (one 429, 500s, one hang, malformed replies,
a broken stream). Here the faults come in storms and runs during real engine builds and questions:
a storm of 429s over a concurrent layer, a run of 500s that starts midway through a build, hangs
past the timeout, truncated replies. Retries and timeouts behave, a failed build leaves the previous
tree answering and its record says why, a question that cannot be answered records nothing, and the
user is told what happened (the bot's reply carries the one-sentence BackendError).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from raptor_engine import BackendError, Engine, Settings
from raptor_engine.llm import OpenAIAnswerer, OpenAISummarizer
from raptor_engine.types import SummaryRequest
from raptor_tools.robustness import fingerprint
from tests.bot.conftest import (  # noqa: F401  (fixtures for the bot-level checks)
    CHAN_A,
    bot_settings,
    fake_api,
    make_harness,
    text_of,
)
from tests.llm_server import FakeLLMServer
from tests.unhurried import unhurried_settings

FAST_BACKOFF = 0.001
SECRET = "sk-test-FAULTS-secret-0000"
BASE = "The signal box at Kelby was built of red brick in 1889 and had thirty levers."
SECOND = "The tide mill ground oats for the village until the sluice gate rotted in 1911."


@pytest.fixture
async def server():
    async with FakeLLMServer() as running:
        yield running


def llm_settings(server: FakeLLMServer, data_dir: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "data_dir": data_dir,
        "llm_base_url": server.base_url,
        "llm_api_key": SECRET,
        "llm_summary_model": "summary-model",
        "llm_answer_model": "answer-model",
        "llm_concurrency": 4,
        "llm_timeout": 60.0,  # the default: a test of the timeout sets its own; a busy machine is no hang
        "llm_max_retries": 2,
    }
    values.update(overrides)
    return unhurried_settings(**values)  # type: ignore[arg-type]


def llm_engine(server: FakeLLMServer, data_dir: Path, embedder, **overrides: object) -> Engine:
    settings = llm_settings(server, data_dir, **overrides)
    summarizer = OpenAISummarizer(
        settings, db_path=settings.db_path, count_tokens=embedder.count_tokens, backoff_base=FAST_BACKOFF
    )
    answerer = OpenAIAnswerer(settings, backoff_base=FAST_BACKOFF)
    return Engine(settings, embedder=embedder, summarizer=summarizer, answerer=answerer)


def clusters(count: int) -> list[SummaryRequest]:
    return [
        SummaryRequest([f"Cluster {i} is about topic {i}. It says more about {i}."], np.zeros((1, 4)), 60)
        for i in range(count)
    ]


def assert_clear(message: str, *phrases: str) -> None:
    """One sentence, naming the server, saying what went wrong, never carrying the key."""
    assert "\n" not in message and message.endswith(".") and len(message) < 300
    assert message.startswith("The LLM backend at http://127.0.0.1:")
    assert SECRET not in message
    for phrase in phrases:
        assert phrase in message, message


# ---- storms and runs at the summariser ---------------------------------------------------------------


async def test_a_storm_of_429s_over_a_concurrent_layer_is_ridden_out(server, tmp_path):
    server.fail_next("429", times=16, retry_after=0.05)
    settings = llm_settings(server, tmp_path, llm_max_retries=16)
    summarizer = OpenAISummarizer(settings, db_path=settings.db_path, backoff_base=FAST_BACKOFF)
    summaries = await summarizer.summarize_many(clusters(12))
    outcomes = server.outcomes()
    assert outcomes.count("429") == 16 and outcomes.count("ok") == 12
    assert server.max_in_flight <= 4
    assert [s.text for s in summaries] == [
        f"Cluster {i} is about topic {i}. It says more about {i}." for i in range(12)
    ]
    assert not any("Rate limit" in s.text for s in summaries)  # an error never becomes summary text
    # every request after a 429 waited for its Retry-After: none starts within 0.05 s of the previous 429 end
    ends = sorted(r.finished_at for r in server.requests if r.outcome == "429" and r.finished_at)
    starts = sorted(r.received_at for r in server.requests if r.outcome == "ok")
    assert starts[-1] - ends[0] >= 0.05


async def test_a_429_storm_longer_than_the_retries_fails_clearly(server, tmp_path):
    server.always_fail = "429"
    settings = llm_settings(server, tmp_path, llm_max_retries=3)
    summarizer = OpenAISummarizer(settings, db_path=settings.db_path, backoff_base=FAST_BACKOFF)
    with pytest.raises(BackendError) as raised:
        await summarizer.summarize_many(clusters(3))
    assert_clear(str(raised.value), "rate-limiting", "HTTP 429", "4 attempts")


# ---- builds through the engine ----------------------------------------------------------------------


async def test_a_run_of_500s_midway_through_a_build_keeps_the_previous_tree_and_a_retry_pays_once(
    server, tmp_path, embedder
):
    from raptor_tools.benchmarks.llm_concurrency import topic_document

    engine = llm_engine(server, tmp_path / "data", embedder, llm_concurrency=2)
    try:
        await engine.ingest("kb", "base.txt", BASE.encode())
        tree_before, docs_before = engine.tree_info("kb").to_dict(), engine.documents("kb")
        served = 0

        def fail_after_three(body):
            nonlocal served
            served += 1
            if served == 3:
                server.always_fail = "500"  # from now on every request fails: a run of 500s
            return f"Summary number {served} of the cluster."

        server.responder = fail_after_three
        with pytest.raises(BackendError) as raised:
            await engine.ingest("kb", "topics.md", topic_document(1500, seed=3).encode())
        assert_clear(str(raised.value), "HTTP 500", "3 attempts")
        assert engine.documents("kb") == docs_before
        assert engine.tree_info("kb").to_dict() == tree_before
        failed = engine.builds("kb")[0]
        assert failed["status"] == "failed" and "HTTP 500" in failed["error"]
        server.always_fail = None
        answer = await engine.ask("kb", "What was the signal box built of?")
        assert "red brick" in " ".join(n.text for n in answer.context.nodes)

        before_retry = len(server.requests)
        result = await engine.ingest("kb", "topics.md", topic_document(1500, seed=3).encode())
        assert result.status == "added"
        summary_requests = [
            r for r in server.requests[before_retry:] if "Summarizing Text Portal" in r.text()
        ]
        ok_before = sum(
            1 for r in server.requests[:before_retry] if r.outcome == "ok" and "Summarizing" in r.text()
        )
        kb_id = engine.store.kb_id("kb")
        made = [n for n in engine.store.nodes_of_kb(kb_id) if n.kind != "leaf"]
        assert ok_before >= 3
        # the summaries that succeeded before the run of 500s came from the cache this time
        assert 1 <= len(summary_requests) <= len(made) - 3
        assert engine.doctor(repair=False).problems == []
    finally:
        engine.close()


async def test_hangs_past_the_timeout_fail_the_build_and_the_previous_tree_answers(
    server, tmp_path, embedder
):
    engine = llm_engine(server, tmp_path / "data", embedder, llm_timeout=0.3, llm_max_retries=1)
    try:
        await engine.ingest("kb", "base.txt", BASE.encode())
        server.hang_seconds = 5
        server.always_fail = "hang"
        with pytest.raises(BackendError) as raised:
            await engine.ingest("kb", "mill.txt", SECOND.encode())  # its cross-document summary hangs
        assert_clear(str(raised.value), "timed out after 0.3 s", "2 attempts")
        assert len(server.requests) == 2
        assert [d.name for d in engine.documents("kb")] == ["base.txt"]
        assert engine.builds("kb")[0]["status"] == "failed"
        server.always_fail = None
        context = engine.retrieve("kb", "What was the signal box built of?")
        assert [n.document for n in context.nodes] == ["base.txt"]
    finally:
        engine.close()


async def test_truncated_replies_during_a_build_are_retried_and_never_stored(server, tmp_path, embedder):
    engine = llm_engine(server, tmp_path / "data", embedder)
    try:
        await engine.ingest("kb", "base.txt", BASE.encode())
        server.fail_next("truncated", times=2)
        result = await engine.ingest("kb", "mill.txt", SECOND.encode())
        assert result.status == "added"
        assert server.outcomes()[:3] == ["truncated", "truncated", "ok"]
        texts = [n.text for n in engine.store.nodes_of_kb(engine.store.kb_id("kb"))]
        assert not any("chatcmpl" in t or '"cho' in t for t in texts)
    finally:
        engine.close()


# ---- questions ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "phrase"),
    [
        ("429", "HTTP 429"),
        ("500", "HTTP 500"),
        ("503", "HTTP 503"),
        ("hang", "timed out after 0.3 s"),
        ("truncated", "could not answer"),
        ("malformed", "malformed"),
        ("401", "rejected the API key"),
    ],
)
async def test_a_question_the_backend_cannot_answer_fails_clearly_and_records_nothing(
    server, tmp_path, embedder, fault, phrase
):
    engine = llm_engine(server, tmp_path / "data", embedder, llm_timeout=0.3, llm_max_retries=1)
    try:
        await engine.ingest("kb", "base.txt", BASE.encode())
        server.hang_seconds = 5
        before = fingerprint(engine)
        server.always_fail = fault
        with pytest.raises(BackendError) as raised:
            await engine.ask("kb", "What was the signal box built of?")
        assert_clear(str(raised.value), phrase)
        assert fingerprint(engine) == before  # no question row, no half answer
        server.always_fail = None
        answer = await engine.ask("kb", "What was the signal box built of?")
        assert answer.citations and "red brick" in answer.text
    finally:
        engine.close()


# ---- the user is told ---------------------------------------------------------------------------------


async def test_the_bot_tells_the_user_what_the_backend_did(server, make_harness, bot_settings, embedder):  # noqa: F811
    from tests.bot.test_bot_flows import add_doc, ask

    settings = llm_settings(
        server, bot_settings.data_dir, ask_cooldown_seconds=0, llm_max_retries=1,
        build_workers=bot_settings.build_workers,  # in this process: the backend's faults are the subject, not a cluster
    )  # fmt: skip
    summarizer = OpenAISummarizer(
        settings, db_path=settings.db_path, count_tokens=embedder.count_tokens, backoff_base=FAST_BACKOFF
    )
    answerer = OpenAIAnswerer(settings, backoff_base=FAST_BACKOFF)
    h = await make_harness(settings=settings, summarizer=summarizer, answerer=answerer)
    await add_doc(h, "box.txt", BASE)
    server.always_fail = "500"
    replies = await add_doc_failing(h, "mill.txt", SECOND)
    said = text_of(replies[0])
    assert "mill.txt" in said and "HTTP 500" in said and SECRET not in said
    _, answer = await ask(h, "What was the signal box built of?")
    said = " ".join(text_of(m) for m in answer)
    assert "⚠️" in said and "HTTP 500" in said and SECRET not in said
    server.always_fail = None
    _, answer = await ask(h, "What was the signal box built of?")
    assert re.search(r"red brick", " ".join(text_of(m) for m in answer))


async def add_doc_failing(h, name: str, text: str) -> list[dict]:
    attachment = h.fake.add_file(name, text.encode())
    token = h.kb_add(attachment, channel=CHAN_A)
    return await h.replies_done(token, lambda r: "was not added" in text_of(r[0]), what=f"refusing {name}")
