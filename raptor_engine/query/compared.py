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
from dataclasses import dataclass

from ..ingest.sentences import STOPWORDS, content_terms, stem

# a year or a quarter as a number or word of its own, also in a file name ('m2019.md', 'sales_q3.md')
_TIME = re.compile(r"(?<!\d)(?<!\d[.,])(?:1[0-9]{3}|20[0-9]{2})(?![\d]|[.,]\d)|(?<![^\W\d_])[Qq][1-4](?!\d)")
_FIGURE = re.compile(
    r"(?<![\w.])\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|twenty|thirty"
    r"|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozen|half)\b",
    re.IGNORECASE,
)

# The months, the one table of them every reader of dates uses (verdict's date checks, a table's date cells,
# follow-ups' 'and in March?', the answerer's dates): each full name, lowercase, in order; each month's number
# by its name or the short form a date writes ('Sept', 'dec'); and the patterns of a full name and of either
MONTH_NAMES = tuple(
    "january february march april may june july august september october november december".split()
)
MONTH_NUMBERS = {
    **{name: number for number, name in enumerate(MONTH_NAMES, start=1)},
    **{name[:3]: number for number, name in enumerate(MONTH_NAMES, start=1)},
    "sept": 9,
}
MONTH_NAME = "|".join(MONTH_NAMES)
MONTH_WORD = rf"(?:{MONTH_NAME}|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)"

_Y = r"(?:1[0-9]{3}|20[0-9]{2})"
# a period a figure is given for, the longest first: a quarter of a year ('Q3 2021'), a financial year ('FY24',
# 'FY2023/24'), a year split across two ('2022-23', '2022/23', '2022–2023'), a year, a quarter. Not a date
# ('2022-03-15') nor a version ('2022.1')
PERIOD = re.compile(
    rf"(?<![\w.,/-])(?:(?P<qy>[Qq][1-4]\s+{_Y})|(?P<fy>(?i:fy)\s?(?:\d{{4}}|\d{{2}})(?:\s?[-/\u2013]\s?(?:\d{{4}}|\d{{2}}))?)"
    rf"|(?P<split>{_Y}\s?[-/\u2013]\s?(?:\d{{4}}|\d{{2}}))|(?P<year>{_Y})|(?P<quarter>[Qq][1-4]))"
    r"(?![\w]|[.,]\d|[-/\u2013]\d)"
)


def period_kind(found: re.Match[str]) -> str:
    """'qy', 'fy', 'split', 'year' or 'quarter': which kind of period a PERIOD match is."""
    return next(kind for kind in ("qy", "fy", "split", "year", "quarter") if found.group(kind))


def period_name(found: re.Match[str]) -> str | None:
    """A period as questions are compared by: 'Q3 2021', 'FY24', '2022-23', '2021', 'Q3' ('fy 2024' ->
    'FY24', '2022/2023' -> '2022-23'); None for two years that do not follow each other ('2019-21' is a
    span, not one period)."""
    kind, text = period_kind(found), found.group(0)
    if kind == "qy":
        quarter, year = text.split()
        return f"{quarter.upper()} {year}"
    if kind in ("split", "fy"):
        numbers = re.findall(r"\d+", text)
        if len(numbers) == 2:
            first, second = int(numbers[0][-2:]), int(numbers[1][-2:])
            if second != (first + 1) % 100:
                return None
            return (
                f"FY{numbers[0][-2:]}-{numbers[1][-2:]}"
                if kind == "fy"
                else f"{numbers[0]}-{numbers[1][-2:]}"
            )
        return f"FY{numbers[0][-2:]}"
    return text.upper()


def periods(text: str) -> list[str]:
    """The periods `text` names, each once, in its order, as `period_name` writes them."""
    return list(dict.fromkeys(name for found in PERIOD.finditer(text) if (name := period_name(found))))


def _times(text: str) -> set[str]:
    """The periods of `text`, and every year and quarter it writes, also in a file name ('m2019.md',
    'sales_q3.md') or a period ('Q3 2021' holds 'Q3' too, which a document titled 'Sales review, Q3 2022' is
    asked of by)."""
    return set(periods(text)) | {t.upper() for t in _TIME.findall(text)}


def compared_times(core: str, context: str) -> tuple[str, str] | None:
    """The time a comparison follow-up asks of and the one it is compared with: the one period (a year, a
    quarter, 'Q3 2021', 'FY24', '2022-23') the rewritten question names and a different one its context
    (the last question) names; None for any other question (a follow-up without context, a comparison of
    things, several times in either)."""
    asked, before = set(periods(core)), set(periods(context))
    if len(asked) != 1 or len(before) != 1 or asked == before:
        return None
    return next(iter(asked)), next(iter(before))


def _without_times(text: str) -> str:
    """`text` with its periods, years and quarters blanked out, so none reads as a figure."""
    blank = PERIOD.sub(lambda m: " " * len(m.group(0)), text)
    return _TIME.sub(lambda m: " " * len(m.group(0)), blank)


def _holds(time: str, text: str) -> bool:
    return time in _times(text)


def _of_time(time: str, text: str, title: str) -> bool:
    """Whether a quote gives a figure of `time`: its text or its documents' title holds the time, and its
    text a number once the times are out of it."""
    return (_holds(time, text) or _holds(time, title)) and bool(_FIGURE.search(_without_times(text)))


def holds_figures_of(times: tuple[str, str], quotes: Iterable[tuple[str, str]]) -> bool:
    """Whether the quotes (each its text, and the names and headings of the documents it may stand in)
    give a figure of each of the two times: one quote whose own text gives both, or two quotes, one of
    each (a summary's sentence may stand in several documents: it counts for one time only)."""
    quotes = list(quotes)
    first, second = times
    if any(_holds(first, text) and _holds(second, text) and _of_time(first, text, "") for text, _ in quotes):
        return True
    return any(
        _of_time(first, *a) and _of_time(second, *b)
        for i, a in enumerate(quotes)
        for j, b in enumerate(quotes)
        if i != j
    )


# 'which year was higher?', 'so which one had more?', 'was 2021 or 2020 higher?': a choice between two
# figures, by the comparative that says which way (a 'which' question, or an 'X or Y' one). No 'up' or
# 'down' (the particles of 'what led up to that?', 'what broke down?'), and no comparative right after
# 'what' ('what more can you tell me?' asks for more, not for the larger figure).
_MORE_WORDS = {
    **dict.fromkeys("higher more bigger larger greater".split(), "higher"),
    **dict.fromkeys("lower less fewer smaller".split(), "lower"),
}
_WHICH_MORE = re.compile(
    r"^(?:(?:and|so|ok|okay|then|but)\b[\s,]*)*(?:which|what(?!\s+(?:"
    + "|".join(_MORE_WORDS)
    + r")\b))\b[^?.!]{0,60}?\b("
    + "|".join(_MORE_WORDS)
    + r")\b[^?.!]{0,40}[?.!]*$"
    r"|^(?:(?:and|so)\b[\s,]*)?(?:is|was|were|are|did)\b(?=[^?.!]*\bor\b)[^?.!]{0,60}?\b("
    + "|".join(_MORE_WORDS)
    + r")\b[^?.!]{0,40}[?.!]*$",
    re.IGNORECASE,
)
# 'the highest?', 'and the lowest one?', 'what about the biggest?': a superlative alone, a choice between the
# two things or times the conversation has just asked about; each with its comparative
SUPERLATIVES = {
    "highest": "higher", "lowest": "lower", "biggest": "bigger", "largest": "larger", "smallest": "smaller",
    "greatest": "greater", "most": "more", "least": "less", "fewest": "fewer", "best": "better",
    "worst": "worse", "longest": "longer", "shortest": "shorter", "oldest": "older", "newest": "newer",
    "cheapest": "cheaper", "earliest": "earlier", "latest": "later",
}  # fmt: skip
_SUPERLATIVE_ALONE = re.compile(
    rf"^(?:(?:and|or|but|so)\s+)?(?:(?:what|how)\s+about\s+)?(?:the\s+)?({'|'.join(SUPERLATIVES)})"
    r"(?:\s+one)?\s*[?.!]*$",
    re.IGNORECASE,
)


def superlative_alone(question: str) -> str | None:
    """The comparative of a question that is a superlative alone ('the highest?' -> 'higher'); else None."""
    match = _SUPERLATIVE_ALONE.match(question.strip())
    return None if match is None else SUPERLATIVES[match.group(1).lower()]


MAX_CHOICE_WORDS = 12  # a longer question names its own subject; it is no choice between the last figures


def which_more(question: str) -> str | None:
    """'higher' or 'lower' for a question that asks which of two figures is ('which year was higher?',
    'which had fewer?', 'was Q2 or Q3 bigger?', 'the highest?'); None for any other ('which keeper was older?' is one too:
    the caller asks only after a comparison of two times)."""
    if len(question.split()) > MAX_CHOICE_WORDS:
        return None
    comparative = superlative_alone(question)
    if comparative is not None:  # 'the highest?' of two figures chooses as 'which was higher?' does
        return _MORE_WORDS.get(comparative)
    match = _WHICH_MORE.match(question.strip())
    if match is None:
        return None
    return _MORE_WORDS[(match.group(1) or match.group(2)).lower()]


_WORD_NUMBERS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_SCALES = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "m": 1e6, "bn": 1e9, "billion": 1e9, "k": 1e3}
# a number, its scale and its unit: the word after it ('14 members', '£40 rent'), never a word such as 'in' or
# 'per' ('£4.2 million in 2021' is '£4.2 million', no figure in 'in')
_NUMBER = re.compile(
    r"(?P<currency>[£$€¥])?\s?(?P<value>(?<![\w.])\d[\d,]*(?:\.\d+)?|\b(?:"
    + "|".join(_WORD_NUMBERS)
    + r")\b)"
    r"(?:\s?(?P<scale>hundred|thousand|million|billion|bn|m|k)\b)?(?P<percent>\s?%|\s?per\s?cent)?"
    rf"(?:\s+(?!(?:{'|'.join(sorted(STOPWORDS | {'per'}))})\b)(?P<unit>[^\W\d_]+))?",
    re.IGNORECASE,
)
# where one clause of a sentence ends and another begins: 'Revenue in 2021 was 4.2 million, against 3.6
# million in 2020' gives each year its own figure
_CLAUSES = re.compile(
    r"[;:()]|,(?=\s)|\b(?:against|compared|versus|vs|while|whereas|but|and|up from|down from|from)\b",
    re.IGNORECASE,
)


# a currency's or a percentage's words, as the sign they stand for: '£500' and '500 pounds' are one unit, so
# 'is it more than 500 pounds?' is settled by 'The excess is £1,000' (units as `figures_in` keeps them: 'pounds'
# is 'pound')
_UNIT_SIGNS = {
    **dict.fromkeys(("pound", "quid", "gbp", "sterling"), "£"),
    **dict.fromkeys(("dollar", "usd", "buck"), "$"),
    **dict.fromkeys(("euro", "eur"), "€"),
    **dict.fromkeys(("yen", "jpy"), "¥"),
    **dict.fromkeys(("percent", "pct"), "%"),
}


@dataclass(frozen=True)
class Figure:
    """A number a quote gives, with its unit as written ('4.2 million pounds': 4200000.0, 'pound')."""

    value: float
    unit: str
    shown: str

    @property
    def measure(self) -> str:
        """The unit as figures are compared by: '£' for '£40' and '40 pounds' alike, '$' for '$5' and '5
        dollars', '%' for '35%' and '35 per cent'; any other unit as written."""
        return _UNIT_SIGNS.get(self.unit, self.unit)


def clauses(text: str) -> list[str]:
    """`text` cut into its clauses (`_CLAUSES`: each from the word or mark that opens it), blank ones left out."""
    parts, start = [], 0
    for cut in [*(m.start() for m in _CLAUSES.finditer(text)), len(text)]:
        parts.append(text[start:cut])
        start = cut
    return [part for part in parts if part.strip()]


def figures_in(text: str) -> list[Figure]:
    """The numbers of `text` that are no year or quarter, each with the word after it as its unit."""
    found = []
    for match in _NUMBER.finditer(_without_times(text)):
        raw = match.group("value").lower()
        value = float(_WORD_NUMBERS[raw]) if raw in _WORD_NUMBERS else float(raw.replace(",", ""))
        value *= _SCALES.get((match.group("scale") or "").lower(), 1.0)
        unit = (
            "%" if match.group("percent") else (match.group("currency") or match.group("unit") or "").lower()
        )
        if match.group("currency") and match.group("unit"):
            unit = f"{match.group('currency')}"  # '£40 rent': the currency is the unit
        found.append(
            Figure(value, unit.rstrip("s") if len(unit) > 3 else unit, " ".join(match.group(0).split()))
        )
    return found


def figure_of(time: str, text: str, title: str, asked: set[str]) -> Figure | None:
    """The figure a quote gives for `time`: of the clause that names the time when its text does ('…, against
    3.6 million pounds in 2020'), else of the whole quote when its document's title names the time; the
    one whose unit is a word the question asks about ('moorings'), else the first. None when it gives none."""
    if _holds(time, text):
        text = next((part for part in clauses(text) if _holds(time, part) and figures_in(part)), "")
    elif not _holds(time, title):
        return None
    figures = figures_in(text)
    wanted = [f for f in figures if f.unit and (f.unit in asked or f"{f.unit}s" in asked)]
    return (wanted or figures or [None])[0]


def chosen(
    times: tuple[str, str], way: str, quotes: Iterable[tuple[str, str]], asked: set[str]
) -> str | None:
    """The lead line of a choice between the figures of two times ('which year was higher?'): the time whose
    figure is higher (or lower), with both figures, when the quotes (text and title) give one of each in the
    same unit; else a line saying which is missing or that the units differ (`unanswered_lead` reads both as
    unanswered); None when they give neither."""
    quotes = list(quotes)
    asked_stems = {stem(term) for term in asked}
    # of the quotes giving a time's figure, the one sharing most of what is asked ('revenue', not 'costs');
    # one sharing none gives no figure of it
    shared = [
        (len(asked_stems & {stem(t) for t in content_terms(text.lower())}), text, title)
        for text, title in quotes
    ]
    ranked = [
        (text, title)
        for count, text, title in sorted(shared, key=lambda s: -s[0])
        if count or not asked_stems
    ]
    found = {
        t: next((f for text, title in ranked if (f := figure_of(t, text, title, asked))), None) for t in times
    }
    first, second = times
    a, b = found[first], found[second]
    if a is None and b is None:
        return None
    if a is None or b is None:
        have, missing = (first, second) if a is not None else (second, first)
        return ONE_SIDE.format(found=have, figure=(a or b).shown, missing=missing, way=way)  # type: ignore[union-attr]
    if a.measure != b.measure:
        return UNLIKE_UNITS.format(first=first, a=a.shown, second=second, b=b.shown, way=way)
    if a.value == b.value:
        return SAME.format(first=first, second=second, figure=a.shown)
    (pick, shown), (other, against) = sorted(
        ((first, a), (second, b)), key=lambda p: p[1].value, reverse=way == "higher"
    )
    return CHOSEN.format(time=pick, way=way, a=shown.shown, other=other, b=against.shown)


CHOSEN = "From the documents: {time} was {way} ({a} in {time}, against {b} in {other})."
SAME = "From the documents: {first} and {second} were the same ({figure} each)."
ONE_SIDE = (
    "The documents give a figure for {found} ({figure}) but none I can find for {missing}, so I cannot say "
    "which was {way}; the closest passages are:"
)
# the lines that say a choice cannot be made, for `followup.unanswered_lead`
CANNOT_CHOOSE = re.compile(
    r"^The documents give a figure for .{1,120}? but none I can find for |^The figures are in different units \("
)
UNLIKE_UNITS = (
    "The figures are in different units ({a} in {first}, {b} in {second}), so I cannot say which was "
    "{way}; the passages are:"
)
