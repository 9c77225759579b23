"""Whether the quotes answer a comparison follow-up: both figures, each of its own time.

'was that more than in Q1?' after 'How many plots were vacant in Q2?' is searched as 'How many plots were
vacant in Q1? (context: How many plots were vacant in Q2?)' (followup.py `_compared`). The grounding
model reads only the rewritten question, whose time no passage says when only the documents' titles
hold it ('Allotment minutes, Q1'): the answer quoted both figures under 'Nothing in the documents
clearly answers this', and a comparison with a year no document has ('... than in 2017?') read
'From the documents:'. Such a question is answered when the quotes hold a figure of each time: a quote
whose document name, headings or own text holds the time, and a number besides it. Deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# a year or a quarter as a number or word of its own, also in a file name ('m2019.md', 'sales_q3.md')
_TIME = re.compile(r"(?<!\d)(?<!\d[.,])(?:1[0-9]{3}|20[0-9]{2})(?![\d]|[.,]\d)|(?<![^\W\d_])[Qq][1-4](?!\d)")
_FIGURE = re.compile(
    r"(?<![\w.])\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|twenty|thirty"
    r"|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozen|half)\b",
    re.IGNORECASE,
)


def _times(text: str) -> set[str]:
    return {t.upper() for t in _TIME.findall(text)}


def compared_times(core: str, context: str) -> tuple[str, str] | None:
    """The time a comparison follow-up asks of and the one it is compared with: the one year or quarter
    the rewritten question names and a different one its context (the last question) names; None for
    any other question (a follow-up without context, a comparison of things, several times in either)."""
    asked, before = _times(core), _times(context)
    if len(asked) != 1 or len(before) != 1 or asked == before:
        return None
    return next(iter(asked)), next(iter(before))


def _holds(time: str, text: str) -> bool:
    return time in _times(text)


def _of_time(time: str, text: str, title: str) -> bool:
    """Whether a quote gives a figure of `time`: its text or its documents' title holds the time, and its
    text a number once the times are out of it."""
    return (_holds(time, text) or _holds(time, title)) and bool(_FIGURE.search(_TIME.sub(" ", text)))


def holds_figures_of(times: tuple[str, str], quotes: Iterable[tuple[str, str]]) -> bool:
    """Whether the quotes (each its text, and the names and headings of the documents it may stand in)
    give a figure of each of the two times: one quote whose own text gives both, or two quotes, one of
    each (a summary's sentence may stand in several documents: it counts for one time only)."""
    quotes = list(quotes)
    first, second = times
    if any(_holds(first, text) and _holds(second, text) and _of_time(first, text, "") for text, _ in quotes):
        return True
    return any(
        _of_time(first, *a) and _of_time(second, *b) for i, a in enumerate(quotes) for j, b in enumerate(quotes) if i != j
    )
