"""What of an answer may be shown while a model is still writing it.

A model's text arrives a few characters at a time. Shown as it comes, a reader would see "[1" before
"[12]", "(node 6, lay" before the echoed label is removed, and markers numbered as the model numbered
the context rather than as the answer will cite them. `ShownText` shows the text through the same
cleaning and renumbering the finished answer gets (`clean_model_text`, `map_citations`), and holds
back a trailing construct that may still change: an unclosed marker (in any style `clean_model_text`
reads), an unclosed "(node …" label, a partial fence line. What it shows only ever grows, so a terminal can print it as it comes; when the
answer is finished its text (with any markers the fallback adds) replaces what was shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .llm import clean_model_text
from .query.answer import map_citations
from .types import ContextNode, StreamCallback, TextCallback

HOLD_WINDOW = 320  # how far back an unfinished construct is looked for
# A tail made only of what markers are written with: "[", "[1", "[[2]", "[2, 3", "[2] and".
_MARKER_TAIL = re.compile(r"\[[\[\]\s\d,;&\-‐‑–—and]*$")
# The start of a marker in another model's style (`llm._OTHER_MARKER`): "【1†sou", "[^", "[Sour", "[source: 2".
_OTHER_MARKER_TAIL = re.compile(r"【[^】\n]{0,90}$|\[\s*\^?\s*[A-Za-z]{0,8}\s*[:#]?\s*\d{0,4}\s*$")
_LABEL_START = re.compile(r"\(\s*node\b", re.I)
_FENCE_LINE = re.compile(r"(?:^|\n)[ \t]*=[^\n]{0,80}$")


def _open_label_at(text: str) -> int | None:
    """Where an unclosed "(" that opens (or may yet open) an echoed "(node …" label starts, if any."""
    start = text.rfind("(", max(0, len(text) - HOLD_WINDOW))
    if start < 0 or ")" in text[start:] or "\n" in text[start:]:
        return None
    fragment = " ".join(text[start + 1 :].split()).lower()
    if "node".startswith(fragment) or _LABEL_START.match(text[start:]):
        return start
    return None


def settled(text: str) -> str:
    """`text` without a trailing construct whose meaning the next characters may still change."""
    cuts = [len(text)]
    window = len(text) - HOLD_WINDOW
    marker = _MARKER_TAIL.search(text, max(0, window))
    if marker is not None:
        cuts.append(marker.start())
    other = _OTHER_MARKER_TAIL.search(text, max(0, window))
    if other is not None:
        cuts.append(other.start())
    label = _open_label_at(text)
    if label is not None:
        cuts.append(label)
    fence = _FENCE_LINE.search(text, max(0, window))
    if fence is not None:
        cuts.append(fence.start())
    return text[: min(cuts)]


class ShownText:
    """The shown part of a streamed answer: cleaned, markers renumbered as the answer will cite them,
    markers pointing at nothing dropped; only ever growing."""

    def __init__(self, context: Sequence[ContextNode]):
        self.context = list(context)
        self.text = ""

    def update(self, written: str) -> bool:
        """Take the model's text so far; True when the shown text grew."""
        candidate, _ = map_citations(clean_model_text(settled(written)), self.context)
        if candidate == self.text or not candidate.startswith(self.text):
            return False  # nothing new, or a change that would rewrite shown text: wait for more
        self.text = candidate
        return True

    def feeding(self, on_text: TextCallback) -> StreamCallback:
        """The callback an answerer streams into: passes the shown text on whenever it grows."""

        async def take(written: str) -> bool:
            if self.update(written):
                await on_text(self.text)
            return bool(self.text)

        return take
