"""A leaf wholly inside a block of code holds no fence to tell it by; it carries that it is code
(`Chunk.code`, stored as `nodes.code`), so its unindented lines are read as code, one sentence a line."""

from __future__ import annotations

import asyncio
import sqlite3

from raptor_engine import Engine
from raptor_engine.ingest.chunk import chunk_document, code_lines, split_sentences
from raptor_engine.ingest.load import load_document
from raptor_engine.ingest.sentences import sentences_of
from tests.unhurried import unhurried_settings

CODE = "\n".join(f"result_{i} = step_{i}(LAMP)\nLAMP.turn({i}). check()" for i in range(40))
DOC = f"# Lamp steps\n\nThe driver turns the lamp in forty steps.\n\n```python\n{CODE}\n```\n\nThe driver stops after step 39.\n"
INDENTED = "# Lamp steps\n\nThe driver turns the lamp.\n\n" + "\n".join(f"    x_{i} = turn({i}). done()" for i in range(60)) + "\n\nIt stops.\n"


def _words(text: str) -> int:
    return len(text.split())


def _chunks(source: str):  # type: ignore[no-untyped-def]
    return chunk_document(load_document("steps.md", source.encode()), _words, max_tokens=30)


def test_a_leaf_wholly_inside_a_fenced_block_is_code_and_the_others_are_not() -> None:
    chunks = _chunks(DOC)
    inside = [c for c in chunks if "```" not in c.text and "result_" in c.text]
    assert inside and all(c.code for c in inside)
    assert not any(c.code for c in chunks if "```" in c.text or "driver" in c.text)
    for chunk in inside:
        lines = [line for line in chunk.text.split("\n") if line.strip()]
        assert not code_lines(chunk.text)  # read alone, nothing says it is code ...
        assert len(split_sentences(chunk.text, chunk.code)) == len(lines)  # ... but it knows: a sentence a line
        assert [s.text for s in sentences_of(chunk.text, chunk.code)] == [" ".join(line.split()) for line in lines]


def test_a_leaf_inside_an_indented_block_whose_first_line_was_trimmed_is_code() -> None:
    chunks = _chunks(INDENTED)
    inside = [c for c in chunks if "x_" in c.text and "driver" not in c.text and "stops" not in c.text]
    assert inside and all(c.code for c in inside)
    assert not any(c.code for c in chunks if "driver" in c.text or "stops" in c.text)


def test_the_store_keeps_that_a_leaf_is_code(tmp_path, embedder) -> None:
    data = tmp_path / "data"
    engine = Engine(unhurried_settings(data_dir=data, chunk_tokens=30), embedder=embedder)
    try:
        asyncio.run(engine.ingest("kb", "steps.md", DOC.encode()))
        stored = engine.store.nodes_by_ids([row[0] for row in sqlite3.connect(data / "raptor.db").execute(
            "SELECT id FROM nodes WHERE layer = 0").fetchall()])
    finally:
        engine.close()
    code = [node for node in stored.values() if node.code]
    assert code and all("```" not in node.text for node in code)
    assert not any(node.code for node in stored.values() if "driver" in node.text)
