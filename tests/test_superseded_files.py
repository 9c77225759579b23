"""A file posted again under its name with new content: of two versions of one statement the later one is
quoted, whether the earlier one reaches the context in the earlier file's leaf or in a summary across
documents that copied it (the bot test of this is tests/bot/test_bot_outside_pass26.py)."""

from __future__ import annotations

import asyncio

from raptor_engine import Engine
from raptor_engine.query.answer import _candidates
from raptor_engine.types import ContextNode
from tests.unhurried import unhurried_settings

TUESDAY = "Rehearsals are on Tuesday evenings from 7.30 pm in the church hall on Fenwick Road."
WEDNESDAY = TUESDAY.replace("Tuesday", "Wednesday")
LIBRARY = "Tomasz Wojcik runs the music library; scores go back in the blue box by the piano."


def _kept(context: list[ContextNode]) -> list[str]:
    return [c.text for c in _candidates(context)]


def test_a_summary_across_documents_drawing_on_a_reposted_file_is_read_as_its_earlier_version():
    summary = ContextNode(
        9, 1, None, 0.9, f"{TUESDAY} {LIBRARY}", 40, 4, drawn_from=(("handbook.md", 2), ("rota.md", 2)), superseded=True
    )
    leaf = ContextNode(2, 0, "handbook.md", 0.8, WEDNESDAY, 20, 1, start=0, end=len(WEDNESDAY))
    kept = _kept([summary, leaf])
    assert TUESDAY not in kept and WEDNESDAY in kept
    assert LIBRARY in kept  # what only the earlier version says stays
    # a summary not marked (it draws on no reposted file) keeps both sentences
    assert TUESDAY in _kept([ContextNode(9, 1, None, 0.9, TUESDAY, 20, 4, drawn_from=(("handbook.md", 2),)), leaf])
    # a marked summary drawing on other documents only is not read against this file's sentences
    other = ContextNode(9, 1, None, 0.9, TUESDAY, 20, 4, drawn_from=(("rota.md", 2),), superseded=True)
    assert TUESDAY in _kept([other, leaf])


def test_the_engine_marks_the_summaries_that_draw_on_a_reposted_file(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        handbook = f"# Choir handbook\n\n{TUESDAY} {LIBRARY}\n"
        asyncio.run(engine.ingest("k", "handbook.md", handbook.encode()))
        asyncio.run(engine.ingest("k", "rota.md", b"# Tea rota\n\nAnna makes the tea on Thursdays.\n"))
        assert engine.store.reposted_names(engine.store.kb_id("k"), ["handbook.md", "rota.md"]) == set()
        asyncio.run(engine.ingest("k", "handbook.md", handbook.replace("Tuesday", "Wednesday").encode()))
        kb_id = engine.store.kb_id("k")
        assert engine.store.reposted_names(kb_id, ["handbook.md", "rota.md", "absent.md"]) == {"handbook.md"}

        def summary(*names: str) -> ContextNode:
            return ContextNode(99, 1, None, 0.5, TUESDAY, 20, 2, drawn_from=tuple((name, 1) for name in names))

        marked = engine._with_superseded("k", [summary("rota.md", "handbook.md"), summary("rota.md")])
        assert [node.superseded for node in marked] == [True, False]
        answer = asyncio.run(engine.ask("k", "What night does the choir rehearse?"))
        assert "Wednesday evenings" in answer.text and "Tuesday" not in answer.text, answer.text
    finally:
        engine.close()
