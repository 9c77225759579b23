"""Issue 22: a question's cost is bounded whatever it and the conversation hold, and it never holds up
the event loop. Adversarial follow-ups of many shapes are generated (hypothesis) and judged by outcome:
a rewrite comes back, bounded in length, resolving what it should; the answer comes back; a concurrent
coroutine gets to run while a question is worked on. Times are the benchmark's
(raptor_tools/benchmarks/question_time.py), never asserted here."""

from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import raptor_engine.engine as engine_module
from raptor_engine.engine import MAX_QUESTION_CHARS, QuestionTimeoutError
from raptor_engine.errors import RaptorError
from raptor_engine.ingest.sentences import words
from raptor_engine.query.followup import (
    CONTEXT_CLOSE,
    CONTEXT_OPEN,
    GENDER,
    MAX_CONTEXT_CHARS,
    MAX_TURN_CHARS,
    names_in,
    split_standalone,
    standalone_question,
)
from raptor_engine.types import Turn
from tests.sample_texts import RAILWAY
from tests.test_engine import make_engine

LONGEST_REWRITE = MAX_TURN_CHARS + len(CONTEXT_OPEN) + MAX_CONTEXT_CHARS + len(CONTEXT_CLOSE)

FLOOD_UNITS = [
    "?",
    "? ",
    "?!",
    "\u2026",
    "he ",
    "she ",
    "her? ",
    "his ",
    "it ",
    "there ",
    "then ",
    "that ",
    "they ",
]
PHRASINGS = [
    "and when did she leave?",
    "what about Thomas Reid?",
    "what about the second one?",
    "why?",
    "and why?",
    "how come?",
    "tell me more",
    "what did he do there?",
    "was it open then?",
    "and her brother?",
    "and in 1975?",
    "what else?",
]
NAMES = [
    "Margaret Hale",
    "Dr. Watson",
    "Bay of Fundy",
    "Captain Reuben Hale",
    "the Margaret Ellen",
    "Hester's",
]

floods = st.builds(lambda unit, n: unit * n, st.sampled_from(FLOOD_UNITS), st.integers(1, 1000))
long_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", min_size=30, max_size=400)
many_names = st.builds(lambda name, n: " and ".join([name] * n), st.sampled_from(NAMES), st.integers(1, 150))
pieces = st.one_of(st.sampled_from(PHRASINGS), floods, long_words, many_names, st.sampled_from(NAMES))
questions = (
    st.lists(pieces, min_size=1, max_size=6)
    .map(lambda parts: " ".join(parts)[:MAX_QUESTION_CHARS])
    .filter(lambda q: q.strip())
)
ANSWER_UNITS = [
    "\u201cIn 1962 the council appointed Margaret Hale as keeper of the archive in Halifax.\u201d [1] ",
    "Captain Hale of Halbeck met Dr. Kittow in Trewin, and Walter Dunstan rowed to the Margaret Ellen. ",
    "\u201cunclosed quote ",
    "She said that he did it there then. ",
    "Aaaa Bbbb Cccc Dddd Eeee Ffff Gggg Hhhh Iiii Jjjj ",
]
answers = st.builds(lambda unit, n: unit * n, st.sampled_from(ANSWER_UNITS), st.integers(1, 700))
turns = st.lists(st.tuples(questions, answers), max_size=8).map(
    lambda pairs: [t for q, a in pairs for t in (Turn("user", q), Turn("assistant", a))]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(question=questions, history=turns)
def test_any_follow_up_after_any_history_gets_a_bounded_rewrite(question, history):
    rewritten = standalone_question(question, history)
    assert rewritten.strip()
    assert len(rewritten) <= LONGEST_REWRITE
    assert split_standalone(rewritten).core


ARCHIVE = [
    Turn("user", "When did Margaret Hale arrive in Halifax in 1962?"),
    Turn("assistant", "From the documents:\n- \u201cMargaret Hale came to Halifax in 1962.\u201d [1]"),
]


@settings(max_examples=60, deadline=None)
@given(
    pronoun=st.sampled_from(["she", "her", "hers", "herself"]),
    n=st.integers(1, 400),
    sep=st.sampled_from([" ", " ? ", "? "]),
)
def test_a_pronoun_flood_is_resolved_throughout(pronoun, n, sep):
    question = ("and " + sep.join([pronoun] * n) + "?")[:MAX_QUESTION_CHARS]
    core = split_standalone(standalone_question(question, ARCHIVE)).core
    assert "Margaret Hale" in core
    assert not set(words(core)) & set(GENDER)  # every gendered pronoun became the person


@pytest.mark.parametrize(
    ("phrasing", "expected"),
    [
        ("and when did she leave", "When did Margaret Hale leave"),
        ("what did she do there", "in Halifax"),
        ("was it open then", "in 1962"),
        ("why", "Why did Margaret Hale arrive in Halifax in 1962"),
        ("what about Thomas Reid", "When did Thomas Reid arrive in Halifax in 1962"),
    ],
)
@settings(max_examples=25, deadline=None)
@given(marks=st.integers(1, 1900))
def test_each_phrasing_is_rewritten_whatever_flood_of_question_marks_ends_it(phrasing, expected, marks):
    question = (phrasing + "?" * marks)[:MAX_QUESTION_CHARS]
    assert expected in standalone_question(question, ARCHIVE)


@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(1, 3000), unit=st.sampled_from(["Aaaa ", "Bay of ", "Dr. Ab ", "the Xy ", "In Zz, "])
)
def test_names_in_a_flood_of_capitals_come_back_each_once(count, unit):
    text = "They met " + unit * count + "at noon."
    found = names_in(text)
    assert len(found) == len({name.lower() for name in found})
    assert all(len(name.split()) <= 6 for name in found)


@pytest.fixture
async def railway(tmp_path, embedder):
    engine = make_engine(tmp_path, embedder)
    await engine.ingest("kb", "railway.md", RAILWAY.encode(), added_by="alice")
    yield engine
    engine.close()


SHAPES = [
    ("he ? she ? him ? " * 120)[:MAX_QUESTION_CHARS],
    ("? " * 1000)[:MAX_QUESTION_CHARS],
    ("and why did Captain Reuben Hale of Halbeck do it there then? " * 40)[:MAX_QUESTION_CHARS],
    "where does it say that?",
    "and when was it opened?",
]


async def test_adversarial_follow_ups_after_huge_turns_are_answered(railway):
    history = []
    for _ in range(6):
        history += [Turn("user", SHAPES[0]), Turn("assistant", ANSWER_UNITS[1] * 300)]  # 30 KB answers
    for question in SHAPES:
        answer = await railway.ask("kb", question, history=history)
        assert answer.text
        assert len(answer.query) <= LONGEST_REWRITE


async def test_the_loop_runs_while_a_follow_up_is_rewritten(railway, monkeypatch):
    """The rewrite waits for a coroutine to run: possible only if it runs off the event loop."""
    ran, outcomes = gate(monkeypatch, engine_module, "standalone_question")  # without a model the engine rewrites

    async def meanwhile():
        ran.set()

    asked = asyncio.create_task(railway.ask("kb", "and when was it opened?", history=ARCHIVE))
    await asyncio.sleep(0)
    await meanwhile()
    answer = await asked
    assert outcomes == [True] and answer.text


def gate(monkeypatch, module, name: str) -> tuple[threading.Event, list[bool]]:
    """Make `module.name` wait until the returned event is set; each call records whether it was let
    through (False: it gave up waiting, as it would if it ran on the loop that must set the event)."""
    released = threading.Event()
    outcomes: list[bool] = []
    original = getattr(module, name)

    def gated(*args):
        outcomes.append(released.wait(timeout=30))
        return original(*args)

    monkeypatch.setattr(module, name, gated)
    return released, outcomes


def gate_the_question(monkeypatch) -> tuple[threading.Event, list[bool]]:
    """Hold every question inside the engine's first step (the small-talk scan) until the event is set."""
    return gate(monkeypatch, engine_module, "_conversation")


async def test_a_question_past_its_deadline_is_given_up_with_one_sentence(tmp_path, embedder, monkeypatch):
    engine = make_engine(tmp_path, embedder, question_timeout=0.2)
    await engine.ingest("kb", "railway.md", RAILWAY.encode())
    released, _ = gate_the_question(monkeypatch)
    try:
        with pytest.raises(QuestionTimeoutError) as refused:
            await engine.ask("kb", "When was the viaduct opened?")
    finally:
        released.set()
        engine.close()
    assert str(refused.value) == (
        "Answering took longer than 0.2 seconds, so it was stopped; try again, or ask a shorter question."
    )


async def test_a_budget_beyond_what_a_knowledge_base_holds_is_refused_but_the_configured_one_goes(
    tmp_path, embedder
):
    """With RAPTOR_MAX_KB_TOKENS below the default budget, questions at the default budget still work."""
    engine = make_engine(tmp_path, embedder, max_kb_tokens=1500)
    await engine.ingest("kb", "note.txt", b"The keeper trims the lamp every evening at sunset.")
    assert "sunset" in (await engine.ask("kb", "When is the lamp trimmed?")).text
    beyond = r"^A context budget of 2,001 tokens is more than a knowledge base may hold \(2,000\)"
    with pytest.raises(RaptorError, match=beyond):
        await engine.ask("kb", "When is the lamp trimmed?", budget=2001)
    engine.close()
