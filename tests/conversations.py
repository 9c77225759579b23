"""Conversations for follow-up tests: the questions asked, each answered with one quote."""

from __future__ import annotations

from raptor_engine.types import Turn


def asked_turns(*questions: str, quote: str) -> list[Turn]:
    """The questions, each followed by an extractive answer of `quote` (a quote that names no person or
    thing, so only the questions give a follow-up something to refer to)."""
    turns: list[Turn] = []
    for question in questions:
        turns += [Turn("user", question), Turn("assistant", f"From the documents:\n- \u201c{quote}\u201d [1]")]
    return turns
