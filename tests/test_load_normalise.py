"""The loader's shortcuts give the text the plain formulas give: whitespace and ligatures, Markdown's inline syntax.

`_normalise` skips the ligature table when the text holds no ligature and matches only whitespace runs that
change (a lone plain space is left alone), both for speed; the output must be what translating always and
collapsing every run of horizontal whitespace to one space give (for text outside code fences, whose lines keep
their indentation: tests/test_load.py checks those)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from raptor_engine.ingest import load as load_module

_EVERY_RUN = re.compile(r"[^\S\n]+")


def _plain_normalise(text: str) -> str:
    """The formula `_normalise` implements, written the direct way."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n").replace("\v", "\n")
    text = load_module.strip_invisible(load_module._CONTROL_CHARS.sub("", text)).translate(load_module._LIGATURES)
    text = _EVERY_RUN.sub(" ", text)
    text = "\n".join(line.strip() for line in text.split("\n"))
    return load_module._BLANK_RUNS.sub("\n\n", text).strip()


# Letters, every kind of horizontal and vertical whitespace, ligatures and control characters, densely.
_PIECES = st.sampled_from(
    ["a", "b", "Z", " ", "  ", "\t", "\u00a0", "\u2003", "\u3000", "\n", "\r\n", "\r", "\f", "\v",
     "\ufb01", "\ufb00", "\ufb06", "\x07", "\u200b", "é", "."]
)


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=60))
def test_normalise_equals_the_plain_formula(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert load_module._normalise(text) == _plain_normalise(text)


def test_runs_of_mixed_whitespace_become_one_space() -> None:
    assert load_module._normalise("a \t b\t\u00a0c\u3000d  e f") == "a b c d e f"
    assert load_module._normalise("\ufb01rst \ufb00ort") == "first ffort"
    assert load_module._normalise("plain text, one space each") == "plain text, one space each"


# Markdown's inline syntax in pieces (code, escapes, links, images, notes, autolinks, emphasis, entities),
# and prose around it: the reader skips the inline pattern on a text holding none of its first characters.
_MARKDOWN_PIECES = st.sampled_from(
    ["word", " ", "\n", "`", "``", "\\", "\\*", "!", "[", "]", "(", ")", "<", ">", "*", "**", "_", "__", "~~",
     "&amp;", "&#65;", "&", "[^1]", "http://x.org", "a@b.org", "\ufdd0", "é", ".", ":"]
)


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_MARKDOWN_PIECES, max_size=40), images=st.booleans())
def test_markdown_inline_reading_equals_the_pattern_tried_everywhere(pieces: list[str], images: bool) -> None:
    text = "".join(pieces)
    fast = load_module._md_inline(text, frozenset({"1"}), images=images)
    original = load_module._MD_INLINE_STARTS
    load_module._MD_INLINE_STARTS = re.compile("")  # every text is tried, as before the shortcut
    try:
        tried = load_module._md_inline(text, frozenset({"1"}), images=images)
    finally:
        load_module._MD_INLINE_STARTS = original
    assert fast == tried


def test_prose_without_markdown_reads_as_written_and_markdown_is_still_read() -> None:
    assert load_module.markdown_text("The keeper lit the lamp.\n\nShips passed.") == "The keeper lit the lamp.\n\nShips passed."
    assert load_module.markdown_text("The *keeper* lit [the lamp](http://x.org) &amp; slept.") == (
        "The keeper lit the lamp & slept."
    )
