"""What of the bot's own records quotes text removed for privacy (a message deleted in Discord, the
messages of a member who ran /kb forget-me), so it can be redacted (bot/state.py `Redaction.apply`).

An exchange in a thread (the question and the answer, the memory a follow-up is given) and a saved answer
('Show context') quote a removed message when the answer drew on one of its leaves (its context held the
message), or when their text shares a mark of the message's text: a run of five words, or a code-like
word (letters and digits mixed, six characters or more). A summary in the context is not traced to the
messages under it (a cross-document summary covers them all, so every answer would go); when the answer
repeats words of the message that a summary carried, the marks catch it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

RUN = 5  # words in a row that mark a quote (fewer would match common phrases)
CODE_CHARS = 6  # a word mixing letters and digits this long marks a quote by itself

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _runs(words: list[str]) -> set[str]:
    return {" ".join(words[i : i + RUN]) for i in range(len(words) - RUN + 1)}


def _codes(words: list[str]) -> set[str]:
    return {
        w
        for w in words
        if len(w) >= CODE_CHARS and any(c.isdigit() for c in w) and any(c.isalpha() for c in w)
    }


def quote_marks(texts: Iterable[str]) -> set[str]:
    """The marks of the removed texts: their five-word runs and their code-like words."""
    marks: set[str] = set()
    for text in texts:
        words = _words(text)
        marks |= _runs(words) | _codes(words)
    return marks


def quotes(text: str, marks: set[str]) -> bool:
    """Whether `text` carries one of the marks."""
    if not marks or not text:
        return False
    words = _words(text)
    return not marks.isdisjoint(_runs(words)) or not marks.isdisjoint(words)
