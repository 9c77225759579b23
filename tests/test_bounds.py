"""Bounds: file size, documents per knowledge base, tokens per knowledge base, questions per user per
minute. Each is configurable (Settings / environment), enforced, and refused with one clear sentence;
a refused upload leaves the store byte-for-byte as it was."""

from __future__ import annotations

import pytest

from raptor_engine import Engine, IngestError, LimitError, Settings
from raptor_engine.ingest.load import check_upload
from raptor_engine.query.ratelimit import QuestionLimiter
from raptor_tools.fingerprint import fingerprint
from tests.bot.conftest import (  # noqa: F401  (fixtures for the bot-level check)
    ALICE,
    BOB,
    bot_settings,
    fake_api,
    make_harness,
    text_of,
)
from tests.unhurried import unhurried_settings

DOCS = [
    ("a.txt", "The signal box at Kelby was built of red brick in 1889."),
    ("b.txt", "The tide mill ground oats until its sluice gate rotted in 1911."),
    ("c.txt", "The chapel choir sang at the opening of the viaduct."),
]


def one_sentence(message: str) -> None:
    assert "\n" not in message and message.endswith(".") and len(message) < 250, message


@pytest.fixture
def make_engine(tmp_path, embedder):
    made: list[Engine] = []

    def make(**bounds: object) -> Engine:
        engine = Engine(unhurried_settings(data_dir=tmp_path / "data", **bounds), embedder=embedder)  # type: ignore[arg-type]
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.close()


def test_bounds_come_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv("RAPTOR_MAX_FILE_BYTES", "1234")
    monkeypatch.setenv("RAPTOR_MAX_DOCUMENTS", "7")
    monkeypatch.setenv("RAPTOR_MAX_KB_TOKENS", "999")
    monkeypatch.setenv("RAPTOR_QUESTIONS_PER_MINUTE", "3")
    settings = Settings.from_env()
    assert (settings.max_file_bytes, settings.max_documents, settings.max_kb_tokens) == (1234, 7, 999)
    assert settings.questions_per_minute == 3
    monkeypatch.setenv("RAPTOR_MAX_DOCUMENTS", "many")
    with pytest.raises(ValueError, match="RAPTOR_MAX_DOCUMENTS must be a whole number"):
        Settings.from_env()


# ---- file size -----------------------------------------------------------------------------------------


async def test_file_size_is_refused_before_download_and_at_ingest(make_engine):
    engine = make_engine(max_file_bytes=1000)
    await engine.ingest("kb", DOCS[0][0], DOCS[0][1].encode())
    before = fingerprint(engine)
    with pytest.raises(IngestError) as early:
        check_upload("big.txt", 5000, engine.settings.max_file_bytes)  # from Discord's metadata
    one_sentence(str(early.value))
    assert "over the" in str(early.value)
    with pytest.raises(LimitError) as late:
        await engine.ingest("kb", "big.txt", b"word. " * 300)  # 1,800 bytes
    one_sentence(str(late.value))
    assert str(late.value) == "big.txt is 1,800 bytes, over the limit of 1,000 bytes."
    assert fingerprint(engine) == before
    await engine.ingest("kb", "small.txt", b"Small enough to fit the bound.")  # under the bound: fine


# ---- documents per knowledge base ------------------------------------------------------------------------


async def test_documents_per_knowledge_base(make_engine):
    engine = make_engine(max_documents=2)
    for name, text in DOCS[:2]:
        await engine.ingest("kb", name, text.encode())
    before = fingerprint(engine)
    with pytest.raises(LimitError) as refused:
        await engine.ingest("kb", DOCS[2][0], DOCS[2][1].encode())
    one_sentence(str(refused.value))
    assert "2 documents" in str(refused.value)
    assert fingerprint(engine) == before
    again = await engine.ingest("kb", DOCS[0][0], DOCS[0][1].encode())
    assert again.status == "duplicate"  # the same bytes are a no-op, not a refusal
    await engine.ingest("other", DOCS[2][0], DOCS[2][1].encode())  # the bound is per knowledge base
    await engine.forget("kb", "a.txt")
    await engine.ingest("kb", DOCS[2][0], DOCS[2][1].encode())  # room again after a removal
    assert sorted(d.name for d in engine.documents("kb")) == ["b.txt", "c.txt"]


# ---- tokens per knowledge base ----------------------------------------------------------------------------


async def test_tokens_per_knowledge_base(make_engine, embedder):
    held = sum(embedder.count_tokens(text) for _, text in DOCS[:2])
    engine = make_engine(max_kb_tokens=held + 5)
    for name, text in DOCS[:2]:
        await engine.ingest("kb", name, text.encode())
    assert sum(d.tokens for d in engine.documents("kb")) == held
    before = fingerprint(engine)
    with pytest.raises(LimitError) as refused:
        await engine.ingest("kb", DOCS[2][0], DOCS[2][1].encode())
    message = str(refused.value)
    one_sentence(message)
    assert (
        "c.txt" in message and f"{held:,} already stored" in message and f"limit of {held + 5:,}" in message
    )
    assert fingerprint(engine) == before
    await engine.ingest("kb", "tiny.txt", b"Ok.")  # a document that fits is still taken


async def test_tokens_per_document_bound_one_ingest(make_engine, embedder):
    """A long upload (a base64 blob, a book of 100,000 headings) is refused before it is chunked or
    embedded, so no single ingest runs for many minutes; the refusal names the limit."""
    engine = make_engine(max_document_tokens=300)
    await engine.ingest("kb", DOCS[0][0], DOCS[0][1].encode())
    before = fingerprint(engine)
    blob = "Blob follows. " + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkw" * 400  # base64: no sentences, many tokens
    sections = "".join(f"# Part {i}\nword {i}.\n\n" for i in range(400))
    for name, text in (("blob.txt", blob), ("parts.md", sections)):
        with pytest.raises(LimitError) as refused:
            await engine.ingest("kb", name, text.encode())
        message = str(refused.value)
        one_sentence(message)
        assert name in message and "limit of 300 for one document" in message
        assert fingerprint(engine) == before
    await engine.ingest("kb", "tiny.txt", b"Ok.")  # a document that fits is still taken


def test_the_document_bound_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAPTOR_MAX_DOCUMENT_TOKENS", "4321")
    assert Settings.from_env().max_document_tokens == 4321
    assert Settings().max_document_tokens == 150_000


# ---- questions per user per minute ------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_question_limit_is_a_sliding_window_per_user():
    clock = Clock()
    limiter = QuestionLimiter(3, clock=clock)
    for _ in range(3):  # at 1000, 1010 and 1020
        assert limiter.retry_after("alice") == 0.0
        clock.now += 10
    wait = limiter.retry_after("alice")  # at 1030
    assert wait == pytest.approx(30.0)  # the first question leaves the window 60 s after it was asked
    assert limiter.retry_after("bob") == 0.0  # per user
    clock.now += 30  # 1060
    assert limiter.retry_after("alice") == 0.0  # sliding: one slot came free
    assert limiter.retry_after("alice") == pytest.approx(10.0)  # the next frees at 1070
    assert limiter.remaining("alice") == 0 and limiter.remaining("carol") == 3
    message = limiter.message(wait)
    one_sentence(message)
    assert message == "You have asked 3 questions in the last minute, the most allowed; try again in 30 s."


def test_refused_questions_do_not_count():
    clock = Clock()
    limiter = QuestionLimiter(1, clock=clock)
    assert limiter.retry_after(1) == 0.0
    for _ in range(50):
        clock.now += 1
        assert limiter.retry_after(1) > 0
    clock.now += 10  # 60 s after the only counted question
    assert limiter.retry_after(1) == 0.0


def test_zero_means_no_question_limit_and_memory_stays_bounded(monkeypatch):
    assert all(QuestionLimiter(0).retry_after("u") == 0.0 for _ in range(100))
    import raptor_engine.query.ratelimit as ratelimit

    monkeypatch.setattr(ratelimit, "MAX_TRACKED_USERS", 50)
    clock = Clock()
    limiter = QuestionLimiter(2, clock=clock)
    for user in range(200):
        clock.now += 1
        limiter.retry_after(user)
    assert len(limiter._asked) <= 61  # only users seen within the last window survive a prune


async def test_the_bot_enforces_questions_per_minute(make_harness, bot_settings):  # noqa: F811
    """Through the bot: the (settings.questions_per_minute + 1)-th /ask within a minute is refused."""
    from dataclasses import replace

    from tests.bot.test_bot_flows import add_doc, ask

    settings = replace(bot_settings, questions_per_minute=2, ask_cooldown_seconds=0)
    h = await make_harness(settings=settings)
    await add_doc(h, "box.txt", DOCS[0][1])
    for _ in range(2):
        _, replies = await ask(h, "What was the signal box built of?", user=ALICE)
        assert "red brick" in " ".join(text_of(m) for m in replies)
    token = h.ask("What was the signal box built of?", user=ALICE)
    replies = await h.replies_done(token, what="the third answer")
    said = " ".join(text_of(m) for m in replies)
    assert "questions in the last minute" in said and "try again in" in said and "red brick" not in said
    _, replies = await ask(h, "What was the signal box built of?", user=BOB)  # another user is not limited
    assert "red brick" in " ".join(text_of(m) for m in replies)


@pytest.mark.parametrize(
    ("name", "raw", "says"),
    [
        ("RAPTOR_PARSE_TIMEOUT", "-1", "RAPTOR_PARSE_TIMEOUT must be 0 or more, not '-1'."),
        ("RAPTOR_MAX_FILE_BYTES", "-5", "RAPTOR_MAX_FILE_BYTES must be 0 or more, not '-5'."),
        ("RAPTOR_NODE_MAX_CHARS", "-3", "RAPTOR_NODE_MAX_CHARS must be 0 or more, not '-3'."),
        ("RAPTOR_QUESTION_TIMEOUT", "nan", "RAPTOR_QUESTION_TIMEOUT must be a number, not 'nan'."),
    ],
)
def test_a_negative_or_nan_bound_is_one_sentence_naming_it(monkeypatch, tmp_path, name, raw, says):
    """A bound below zero read as "took longer than -1 s to read" or "Building the tree failed:
    ValueError", and NaN as "took longer than nan seconds": each is refused where it is read."""
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv(name, raw)
    with pytest.raises(ValueError) as refused:
        Settings.from_env()
    assert str(refused.value) == says


def test_settings_that_may_be_negative_still_are(monkeypatch, tmp_path):
    """A niceness below zero (a higher priority, for root) and any seed are meaningful."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAPTOR_BUILD_WORKER_NICE", "-5")
    monkeypatch.setenv("RAPTOR_SEED", "-1")
    settings = Settings.from_env()
    assert (settings.build_worker_nice, settings.seed) == (-5, -1)


def test_file_limit_counts_every_file_of_a_request_per_member_per_hour():
    from raptor_engine.query.ratelimit import FileLimiter

    clock = Clock()
    limiter = FileLimiter(5, clock=clock)
    assert limiter.retry_after("alice", 3) == 0.0  # three files at 1000
    clock.now += 600
    assert limiter.retry_after("alice", 3) == pytest.approx(3000.0)  # 3 + 3 > 5: the first frees at 4600
    assert limiter.retry_after("alice", 2) == 0.0  # refused files were not counted; two more fit
    assert limiter.retry_after("alice", 1) == pytest.approx(3000.0)
    assert limiter.retry_after("alice", 6) == 3600.0  # more than the limit at once never fits
    assert limiter.retry_after("bob", 5) == 0.0  # per member
    clock.now += 3000
    assert limiter.retry_after("alice", 3) == 0.0  # the first three left the window
    message = limiter.message(3000.0)
    one_sentence(message)
    assert message == "You have added 5 files in the last hour, the most one member may; try again in 50 min."
    assert all(FileLimiter(0).retry_after("u", 100) == 0.0 for _ in range(10))
