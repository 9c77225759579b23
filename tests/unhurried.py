"""Settings and waits for tests that must pass on a machine of any speed, however busy.

The engine's deadlines (the build's 60 s, the LLM build's 900 s, the parse's 30 s, the 60 s wait for a
build worker, the question's 120 s) stop work that runs too long on *this* machine: with both cores taken
by other work a test's build can pass one and fail for a reason the test does not check. Tests get them
off (the parse's, which cannot be off, at ten minutes) unless they ask for a deadline themselves:
`unhurried_settings(...)` in the test's process, UNHURRIED_ENV (which tests/conftest.py puts in the
environment) for the bots, CLI runs and workers the tests start, and `patience()` scales the harnesses'
waits for what those processes do.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

from raptor_engine.config import ENV_VARS, Settings

UNHURRIED: dict[str, float] = {
    "build_timeout": 0.0,  # 0: no deadline
    "llm_build_timeout": 0.0,
    "parse_timeout": 600.0,
    "build_worker_wait": 600.0,
    "question_timeout": 600.0,
}

UNHURRIED_ENV: dict[str, str] = {ENV_VARS[name]: f"{value:g}" for name, value in UNHURRIED.items()}


def unhurried_settings(**values: Any) -> Settings:
    """Settings with `values`, and no deadline a test does not set itself."""
    return Settings(**{**UNHURRIED, **values})


def unhurried(settings: Settings) -> Settings:
    """`settings` (from a shared helper, such as raptor_tools' corpus settings) with the deadlines off."""
    return dataclasses.replace(settings, **UNHURRIED)


def patience() -> float:
    """How many times longer than on an idle machine work takes now: runnable processes per core over the
    last minute (1 on an idle or lightly used machine). A harness wait is a guard against a hang, not a
    test of speed, so it allows for the machine's load."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1.0, os.getloadavg()[0] / cores)


def patient(seconds: float) -> float:
    """A guard's `seconds` on an idle machine, stretched by `patience()`."""
    return seconds * patience()


def engine_with(directory: Path, embedder: Any, texts: dict[str, str], kb: str = "harbour") -> Any:
    """An unhurried engine over `directory` with `texts` (name: text) ingested into `kb`, in that order:
    the module-scoped knowledge base of a conversation test. The caller closes it."""
    from raptor_engine.engine import Engine

    engine = Engine(unhurried_settings(data_dir=directory / "data"), embedder=embedder)
    for name, text in texts.items():
        asyncio.run(engine.ingest(kb, name, text.encode()))
    return engine
