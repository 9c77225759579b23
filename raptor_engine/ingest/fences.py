"""Fenced code blocks read line by line as CommonMark reads them, list items included.

A fence (```` ``` ```` or `~~~`) opens a block when it is indented at most three columns past the content of
the list item it stands in (CommonMark 4.5 and 5.2): "1. step" / "" / "    ```bash" is a fence four columns
in, yet a line four columns in outside any list is code. The loader (`load._normalise` and the Markdown
passes) and the chunker (`chunk.code_lines`) read fences with the same `FenceReader`, so a block the loader
writes as code is code to the chunker.
"""

from __future__ import annotations

import re

FENCE_MAX_INDENT = 3  # columns past the list item's content a fence may stand (CommonMark 4.5)
_INDENTED_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_LIST_MARKER = re.compile(r"([-+*]|\d{1,9}[.)])(?:([ \t]+)(.?)|$)")
_THEMATIC_BREAK = re.compile(r"([-*_])(?:[ \t]*\1){2,}[ \t]*")
_BLOCK_STARTS = "`~-*_+"  # what a fence, a thematic break or a list item opens with (or a digit)
# A line the loader writes for itself (`load._CODE_MARK`, a noncharacter): no line of the document.
_OWN_MARK = "\ufdd1"


def closes(run: str, rest: str, fence: str) -> bool:
    """Whether a fence line (its marks `run`, then `rest`) closes the block `fence` opened: the same
    character, at least as many times, and nothing else on the line ('```python' inside a block is code)."""
    return run[0] == fence[0] and len(run) >= len(fence) and not rest.strip()


class FenceReader:
    """Reads a text's lines in order and says what each is: "open" or "close" (a fence line), "code" (a
    line inside a block) or "text". It keeps the content columns of the open list items, so a fence
    inside one is measured from the item's text, not from the margin; a block inside an item also ends
    where a line is indented less than the item's text (the item ends there)."""

    def __init__(self, fence: str | None = None) -> None:
        self.fence = fence  # the marks of the open block, or None outside code
        self.base = 0  # the content column of the list item the open block stands in
        self.items: list[int] = []  # content columns of the open list items, innermost last
        self.paragraph = False  # the last line outside code was a paragraph's (a next line may be lazy)
        self.ended: str | None = None  # the marks of a block the last line ended by ending its list item

    def read(self, line: str) -> str:
        """The role of the next line: "open", "close", "code" or "text"."""
        self.ended = None
        text = line.lstrip(" \t")
        if not text:
            if self.fence is None:
                self.paragraph = False
                return "text"
            return "code"
        if _OWN_MARK in text:  # the loader's own marks around indented code: fences that hold no list
            return self._own_mark(line)
        width = len(line) - len(text)
        if width and "\t" in line[:width]:
            width = len(line[:width].expandtabs(4))
        if self.fence is not None:
            if width < self.base:  # the list item ends, and the block inside it with it
                self.ended, self.fence = self.fence, None
            elif text[0] == self.fence[0] and width - self.base <= FENCE_MAX_INDENT:
                marker = _INDENTED_FENCE.match(line)
                if marker and closes(marker.group(1), line[marker.end() :], self.fence):
                    self.fence, self.paragraph = None, False
                    return "close"
                return "code"
            else:
                return "code"
        if not self.items and text[0] not in _BLOCK_STARTS and not text[0].isdigit():
            self.paragraph = width < 4 or self.paragraph  # prose outside any list: the common line
            return "text"
        return self._outside(line, text, width)

    def _own_mark(self, line: str) -> str:
        if self.fence is None:
            self.fence, self.base = line.strip(), 0
            return "open"
        if line.strip() == self.fence:
            self.fence = None
            return "close"
        return "code"

    def _outside(self, line: str, text: str, width: int) -> str:
        first = text[0]
        marker = _INDENTED_FENCE.match(line) if first in "`~" else None
        starts_block = marker is not None or (first in "-*_" and _THEMATIC_BREAK.fullmatch(text) is not None)
        if self.items and (not self.paragraph or starts_block):  # a lazy line continues its paragraph
            while self.items and width < self.items[-1]:
                self.items.pop()
        base = self.items[-1] if self.items else 0
        if marker and 0 <= width - base <= FENCE_MAX_INDENT:
            self.fence, self.base, self.paragraph = marker.group(1), base, False
            return "open"
        listed = first in "-+*" or first.isdigit()
        item = _LIST_MARKER.match(text) if listed and width - base <= FENCE_MAX_INDENT else None
        if item:
            while self.items and self.items[-1] > width:
                self.items.pop()
            spaces = len(item.group(2) or "")
            self.items.append(width + len(item.group(1)) + (spaces if 0 < spaces <= 4 and item.group(3) else 1))
        self.paragraph = width - base < 4 or self.paragraph  # an indented code line is no paragraph
        return "text"

