"""Issue 22 (uploads): text made mostly of punctuation is split, counted and chunked in linear time, and
ends as an ordinary upload does: ingested in sane chunks, or refused with its sentence and the store
unchanged. Outcomes only; the timings are in `raptor robustness --upload-table` (docs/ROBUSTNESS.md).

The files come from the generators in raptor_tools/hostile.py: every run of PUNCTUATION_RUNS in every
shape of FLOOD_SHAPES, and in every format of FLOOD_FORMATS.
"""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raptor_engine import Engine
from raptor_engine.errors import IngestError, LimitError
from raptor_engine.ingest.chunk import _TERMINATOR, _fenceless, chunk_document, split_sentences
from raptor_engine.ingest.load import load_document
from raptor_engine.types import LoadedDocument, Section
from raptor_tools.hostile import (
    FLOOD_FORMATS,
    FLOOD_SHAPES,
    PUNCTUATION_RUNS,
    SCALING_CLASSES,
    punctuation_file,
    punctuation_text,
    scaling_text,
)
from raptor_tools.robustness import SAFE_TEXT, fingerprint
from tests.unhurried import unhurried_settings

MAX_CHARS = 400

# The terminator pattern before issue 22: the same matches, found by backtracking from every character
# of a run that no whitespace follows (quadratic in the run).
BACKTRACKING_TERMINATOR = re.compile(r"(?:[.!?\u2026]+)[\"'\u201d\u2019\u00bb)\]]*(?=\s|$)")

PIECES = st.sampled_from(
    [
        ".",
        "?",
        "!",
        "\u2026",
        '"',
        "'",
        ")",
        "]",
        "\u201d",
        " ",
        "\n",
        "a",
        "B",
        "-",
        "=",
        "_",
        "\u00b7",
        "\u3002",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=60).map("".join))
def test_the_terminator_pattern_finds_what_the_backtracking_one_found(text):
    found = [m.span() for m in _TERMINATOR.finditer(text)]
    assert found == [m.span() for m in BACKTRACKING_TERMINATOR.finditer(text)]


def _non_space(text: str) -> str:
    return "".join(text.split())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(list(PUNCTUATION_RUNS.values()) + ["word", " ", "\n", "\n\n", "A."]), max_size=80
    )
)
def test_sentences_cover_every_visible_character_of_any_punctuation_mix(pieces):
    text = "".join(piece * 7 for piece in pieces)
    spans = split_sentences(text)
    assert "".join(text[a:b] for a, b in spans).replace(" ", "").replace("\n", "") == _non_space(text)
    assert all(a < b and text[a:b] == text[a:b].strip() for a, b in spans)


def _chunks_of(text: str, embedder) -> list:
    doc = LoadedDocument(name="flood.txt", text=text, sections=[Section(0, len(text))], format="txt")
    return chunk_document(
        doc,
        embedder.count_tokens,
        max_tokens=100,
        hard_limit=embedder.max_tokens,
        count_tokens_batch=embedder.count_tokens_batch,
        max_chars=MAX_CHARS,
    )


def _assert_sane(text: str, chunks: list) -> None:
    """Chunks cover the text in order, each within both limits, and their number follows the text's size."""
    assert "".join(_non_space(c.text) for c in chunks) == _non_space(text)
    assert all(len(c.text) <= MAX_CHARS and 0 < c.tokens <= 100 for c in chunks)
    tokens = sum(c.tokens for c in chunks)
    assert len(chunks) <= 2 * (tokens / 100 + len(text) / MAX_CHARS) + 1


@pytest.mark.parametrize("shape", FLOOD_SHAPES)
@pytest.mark.parametrize("run", PUNCTUATION_RUNS.values(), ids=PUNCTUATION_RUNS.keys())
def test_every_run_in_every_shape_chunks_within_the_limits(embedder, run, shape):
    # a word at the end: a file of punctuation alone is refused as holding no text
    text = load_document("flood.txt", (punctuation_text(run, shape, 6_000) + "\nEnd.").encode()).text
    chunks = _chunks_of(text, embedder)
    _assert_sane(text, chunks)
    for chunk in chunks:
        assert chunk.tokens == embedder.count_tokens(chunk.text)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(list(PUNCTUATION_RUNS.values())),
            st.integers(1, 400),
            st.sampled_from(["", " ", "\n", "\n\n", " word ", "Word", " The keeper slept. "]),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_generated_punctuation_mixes_chunk_within_the_limits(embedder, parts):
    text = "".join(run * count + joint for run, count, joint in parts)
    if not text.strip():
        return
    _assert_sane(text, _chunks_of(text, embedder))


def test_blank_line_runs_split_as_one_boundary():
    """Every newline of a long whitespace run shares one answer (asked once per run: it was quadratic)."""
    text = "The keeper slept." + " \n" * 5_000 + "the lamp burned on."
    assert [text[a:b] for a, b in split_sentences(text)] == ["The keeper slept.", "the lamp burned on."]
    wrapped = "the keeper slept\n\n\nand the lamp burned on"  # a page break inside a sentence
    assert [wrapped[a:b] for a, b in split_sentences(wrapped)] == [wrapped]


# ------------------------------------------------------------------------------------ through the engine

# One run per shape, so every format meets every shape and, across formats, every run.
FORMAT_CASES = [
    (fmt, run, shape)
    for number, fmt in enumerate(FLOOD_FORMATS)
    for shape, run in zip(
        FLOOD_SHAPES,
        list(PUNCTUATION_RUNS.values())[number:] + list(PUNCTUATION_RUNS.values())[:number],
        strict=False,
    )
]


@pytest.fixture(scope="module")
def flood_engine(tmp_path_factory, embedder):
    engine = Engine(
        unhurried_settings(data_dir=tmp_path_factory.mktemp("floods"), node_max_chars=MAX_CHARS), embedder=embedder
    )
    asyncio.run(engine.ingest("kb", "base.txt", SAFE_TEXT.encode()))
    yield engine
    engine.close()


@pytest.mark.parametrize(("fmt", "run", "shape"), FORMAT_CASES, ids=lambda v: repr(v) if len(v) < 3 else v)
def test_each_format_ingests_a_flood_in_sane_chunks_or_refuses_it(flood_engine, fmt, run, shape):
    engine = flood_engine
    filename, data = punctuation_file(run, shape, 2_500, fmt)
    before = fingerprint(engine)
    try:
        result = asyncio.run(engine.ingest("kb", filename, data))
    except (IngestError, LimitError) as error:
        assert "cannot read" in str(error) or "no text" in str(error), error
        assert fingerprint(engine) == before
        return
    assert result.status == "added" and result.chunks >= 1
    rows = engine.store.db.conn.execute(
        "SELECT LENGTH(text), tokens FROM nodes WHERE doc_id = ? AND layer = 0", (result.document.id,)
    ).fetchall()
    assert len(rows) == result.chunks
    assert all(length <= MAX_CHARS and tokens <= 100 for length, tokens in rows)
    assert result.chunks <= 2 * (result.document.tokens / 100 + len(data) / MAX_CHARS) + 1
    asyncio.run(engine.forget("kb", result.document.name))


@pytest.mark.parametrize("fmt", FLOOD_FORMATS)
def test_a_flood_over_the_token_bound_is_refused_with_the_store_unchanged(tmp_path, embedder, fmt):
    engine = Engine(unhurried_settings(data_dir=tmp_path, max_document_tokens=2_000), embedder=embedder)
    asyncio.run(engine.ingest("kb", "base.txt", SAFE_TEXT.encode()))
    before = fingerprint(engine)
    filename, data = punctuation_file("?!", "run glued to words", 12_000, fmt)
    with pytest.raises(LimitError) as caught:
        asyncio.run(engine.ingest("kb", filename, data))
    assert "over the limit of 2,000 for one document" in str(caught.value)
    assert fingerprint(engine) == before
    engine.close()


@pytest.mark.parametrize("kind", SCALING_CLASSES)
def test_the_scaling_table_texts_have_the_size_asked_for(kind):
    text = scaling_text(kind, 20_000)
    assert 17_000 <= len(text.encode()) <= 23_000  # about the size: whole lines and paragraphs
    assert text.strip()


# `chunk._fenceless`'s test before the review: white space of any kind after each cut, then the marks, with
# no line break in it; the match ran over a whole run of blank lines once a cut (quadratic in the run).
def _backtracking_fenceless(text: str, cuts: list[int]) -> list[int]:
    def poses(cut: int) -> bool:
        run = re.compile(r"\s*(?:```|~~~)").match(text, cut)
        return bool(run and "\n" not in text[cut : run.end()] and text[cut - 1 : cut] != "\n")

    return [cut for cut in cuts if not poses(cut)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["```", "~~~", "`", " ", "\t", "\n", "\r", "\x0c", "a", "A.", "?"]), max_size=40).map("".join))
def test_the_fence_check_at_each_cut_keeps_what_the_quadratic_one_kept(text):
    cuts = list(range(len(text) + 1))
    assert _fenceless(text, cuts) == _backtracking_fenceless(text, cuts)


@pytest.mark.parametrize("text", ["```\n" + "\n" * 100_000 + "x", "a." + "\n \t" * 33_000 + "```"])
def test_blank_lines_after_a_fence_split_in_linear_time(text):
    start = time.process_time()
    spans = split_sentences(text)
    print(f"{len(text):,} characters: {time.process_time() - start:.3f}s CPU (42 s and 3.8 s before the review)")
    assert spans and all(text[a:b].strip() for a, b in spans)
