"""Questions over a table's rows: a superlative on a column, a threshold, a count.

A spreadsheet's rows reach the answerer as labelled lines ('Name: Ben Carter; Joined: 2021; City: Leeds',
`load._read_csv`, and Markdown, HTML and Word tables as `answer._table_row` reads them). Ranked by meaning,
every row of a table looks alike to the question: 'who joined most recently?' quoted the 2017 row before
the 2021 one, 'what is the cheapest item?' a £12.50 row first, and 'which items cost more than £10?' a
£4.99 one. Here the asked column is found (named by the question, 'points', 'joined'; or implied by its
adjective, 'cheapest' a money column, 'most recent' a column of years or dates) and the rows are chosen
by its values: the top rows in the asked order, the rows past a threshold, or the rows holding a named
value ('in 2020', 'in Leeds'), counted when the question asks how many and every row of the table is in
the context. Nothing is computed that the rows do not hold: a count is a count of quoted rows, an order
is the order of the cells' own values, and a sum or an average ('how much did Alice spend in total?') is of
the named rows' own figures, stated with them, and only of a table wholly in the context. Deterministic.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date

from ..ingest.chunk import LABELLED_ROW_LINE, MAX_LABEL_CHARS
from ..ingest.sentences import STOPWORDS, content_terms, stem
from ..types import ContextNode
from .compared import MONTH_NUMBERS
from .retrieve import ELISION
from .verdict import CHECKS_LAST_ANSWER

# a labelled row: 'Label: value; Label: value' (two cells at least), with its closing full stop; a label may
# hold a colon with no space after it ('Time (hh:mm): 06:45')
_CELL = re.compile(rf"^((?:[^:;]|:(?! )){{1,{MAX_LABEL_CHARS}}}?): (.*)$", re.DOTALL)
MAX_ROWS_QUOTED = 10  # the rows a threshold, a filter or a count quotes at most
SPAN_GAP = 2  # characters between one leaf's end and the next one's start (a line break) in a whole document


def holds_rows(nodes: Sequence[ContextNode]) -> bool:
    """Whether a context holds a leaf of labelled table rows ('- Name: Ann; Joined: 2017.'): then the engine
    marks its leaves' document edges, so a count can be stated of a table wholly in the context."""
    return any(node.layer == 0 and LABELLED_ROW_LINE.search(node.text) for node in nodes)


# A table read whole for a question over all its rows (`asks_whole_table`): at most this many rows, held in at
# most this many characters of its leaves. Under MAX_SENTENCES (200, `answer`), the sentences of context
# an answer reads, so every row of it is read and counted, with room for the rest of the context.
MAX_WHOLE_TABLE_ROWS = 150
MAX_WHOLE_TABLE_CHARS = 40_000
# 'list all boats', 'show every member', 'what are all the items?': every row, not the rows ranked first
_LISTS_ALL = re.compile(
    r"^\W*(?:(?:please|can\s+you|could\s+you)\s+)?(?:(?:list|show|name|give)\s+(?:me\s+)?(?:all|every|each)\b"
    r"|(?:what|which|who)\s+are\s+all\b)",
    re.IGNORECASE,
)
# 'which boats are in Oban?', 'who are the members in Leeds?': the rows holding a value
_WHICH_ROWS = re.compile(r"^\W*(?:and\s+|so\s+)?(?:which|who)\b.*\b(?:are|were|have|had)\b", re.IGNORECASE)


def asks_whole_table(question: str) -> bool:
    """Whether a question is asked of every row of a table: a count ('how many boats are there?'), a
    superlative or a threshold on a column ('which boat is the longest?', 'built before 1950?'), a total or an
    average, a listing ('list all boats'), the rows holding a value ('which boats are in Oban?'). Its table is
    then read whole where it is small enough (`MAX_WHOLE_TABLE_ROWS`): the rows a search happens to return are
    not the table. A question about one row ('what is Kittiwake's home port?') is not."""
    asks = (_HOW_MANY, _SUPERLATIVE, _THRESHOLD, _AVERAGE, _TOTAL, _LISTS_ALL, _WHICH_ROWS)
    return any(pattern.search(question) for pattern in asks)


def asks_which_rows(question: str) -> bool:
    """Whether a question opens as one asking for rows ('who joined in 2020?', 'which boat is in Oban?'): over
    every row when it names a value of the table (`names_row_values`), which only its rows can say."""
    return bool(_WHICH.match(question))


def names_row_values(question: str, texts: Sequence[str]) -> bool:
    """Whether a question names a whole cell of these leaves' rows other than a key ('2020' of Joined, 'tea
    urn' and 'Thursday' of Duty and Day; not 'Ann Li' of Name): it asks for the rows holding it, of every
    row ('who is on tea urn duty on Thursday?'), not one row to look up."""
    lines = [line.group(0).strip()[2:] for text in texts for line in LABELLED_ROW_LINE.finditer(text)]
    rows = [Row(i, "table", i, cells) for i, line in enumerate(lines) if (cells := row_cells(line)) is not None]
    rows = joined_rows(rows)
    return any(not _is_key(rows, column) for column in _named_values(question, rows))


def table_leaf(nodes: Sequence[ContextNode]) -> ContextNode | None:
    """The context's best-scored leaf holding labelled table rows: the table a question over rows is about."""
    leaves = [n for n in nodes if n.layer == 0 and n.document and LABELLED_ROW_LINE.search(n.text)]
    return max(leaves, key=lambda node: node.score, default=None)


def rows_in(texts: Sequence[str]) -> int:
    """How many labelled table rows these leaves' texts hold (a long row written as several lines: each)."""
    return sum(len(LABELLED_ROW_LINE.findall(text)) for text in texts)


def whole_documents(nodes: Sequence[ContextNode]) -> set[str | None]:
    """The documents every leaf of which is in the context, untrimmed: their first leaf and their last (as
    the engine marked them), and between them leaves whose spans meet. A count of a table's rows is stated
    only of such a document."""
    leaves: dict[str | None, list[ContextNode]] = {}
    for node in nodes:
        if node.layer == 0 and node.document is not None:
            leaves.setdefault(node.document, []).append(node)
    whole: set[str | None] = set()
    for document, held in leaves.items():
        held.sort(key=lambda node: node.start if node.start is not None else -1)
        if not (held[0].opens_document and held[-1].ends_document) or any(ELISION in node.text for node in held):
            continue
        spans = [(node.start, node.end) for node in held]
        if all(s is not None and e is not None for s, e in spans) and all(
            nxt[0] <= prev[1] + SPAN_GAP for prev, nxt in zip(spans, spans[1:], strict=False)  # type: ignore[operator]
        ):
            whole.add(document)
    return whole


def row_cells(text: str) -> dict[str, str] | None:
    """A labelled row's cells by their column ('Item: Trowel; Price: £4.99.' -> {'Item': 'Trowel', 'Price':
    '£4.99'}); None for any other sentence (fewer than two labelled cells, a first part without a label). A
    part without a label of its own is the cell before it going on: a value holding '; ' ('Notes: Steel blade;
    ash handle') made the whole row no row, so no question over the table counted, ordered or summed it."""
    parts = text.strip().removesuffix(".").split("; ")
    cells: dict[str, str] = {}
    last = ""
    for part in parts:
        match = _CELL.match(part)
        if match is None and last:
            cells[last] = f"{cells[last]}; {part.strip()}"
            continue
        if match is None or match.group(1).strip() in cells:
            return None
        last = match.group(1).strip()
        cells[last] = match.group(2).strip()
    return cells if len(cells) >= 2 else None


_AMOUNT = re.compile(
    r"^(?P<sign>-)?(?P<currency>[£$€¥])?\s?(?P<number>\d[\d,]*(?:\.\d+)?)\s?(?P<scale>k|m|bn)?\s?(?P<unit>%|¢|[^\W\d_]{1,12})?$",
    re.IGNORECASE,
)
_ISO_DATE = re.compile(r"^(\d{4})-(\d{1,2})(?:-(\d{1,2}))?$")
_SLASH_DATE = re.compile(r"^(\d{1,2})[/.](\d{1,2})[/.](\d{4})$")
_WORD_DATE = re.compile(r"^(?:(\d{1,2})(?:st|nd|rd|th)?\s+)?([A-Za-z]{3,9})\.?,?\s+(?:(\d{1,2})(?:st|nd|rd|th)?,?\s+)?(\d{4})$")
_SCALE = {"k": 1e3, "m": 1e6, "bn": 1e9}
_CLOCK = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")  # a time of day, as a timetable writes it


@dataclass(frozen=True)
class Value:
    """A cell read as a figure: its value, and its kind ('date' for a year or date, 'time' for a time of day,
    'money' with a currency sign, 'number' for any other), so one column's cells compare only with each
    other."""

    value: float
    kind: str


def cell_value(cell: str) -> Value | None:
    """A cell's figure: an amount ('£12.50', '1,040', '35%', '4.2m'), a year or a date ('2021', '2021-03-04',
    '4/3/2021' day first, '4 March 2021', 'March 2021'); None for text."""
    cell = cell.strip()
    if clock := _CLOCK.fullmatch(cell):  # '06:45', '18:55': minutes into the day
        return Value(int(clock.group(1)) * 60 + int(clock.group(2)), "time")
    if re.fullmatch(r"(?:1[5-9]|20)\d{2}", cell):
        return Value(float(cell), "date")
    found = _date(cell)
    if found is not None:
        return Value(found.year + (found.toordinal() - date(found.year, 1, 1).toordinal()) / 366, "date")
    match = _AMOUNT.match(cell)
    if match is None:
        return None
    written = match.group("number")
    if re.fullmatch(r"\d+,\d{1,2}", written):  # a decimal comma ('1,50' in a semicolon export), not thousands
        written = written.replace(",", ".")
    number = float(written.replace(",", ""))
    number *= _SCALE.get((match.group("scale") or "").lower(), 1.0)
    if match.group("sign"):
        number = -number
    if _subunit(match) is not None:  # '45p' is £0.45: beside '£1.20' in a column of prices, not 45 of them
        return Value(number / 100, "money")
    return Value(number, "money" if match.group("currency") else "number")


# a hundredth of a currency, as a cell writes it after its number, and the currency's sign ('' for cents:
# of dollars or euros, the other cells say which); not a bare 'c', which is as often degrees ('30c'), and
# 'p' in small letters only
_SUBUNITS = {"p": "£", "pence": "£", "penny": "£", "¢": "", "cent": "", "cents": ""}


def _subunit(amount: re.Match[str]) -> str | None:
    """The currency sign of an amount (`_AMOUNT`) written in pence or cents ('45p', '45 pence', '99¢',
    '99 cents'; '' for cents), with no currency sign of its own; None for any other amount."""
    unit = amount.group("unit") or ""
    if amount.group("currency") or not unit or (len(unit) == 1 and unit.isupper()):
        return None
    return _SUBUNITS.get(unit.lower())


def _date(cell: str) -> date | None:
    """A date as written in a cell, or None."""
    try:
        if match := _ISO_DATE.match(cell):
            return date(int(match.group(1)), int(match.group(2)), int(match.group(3) or 1))
        if match := _SLASH_DATE.match(cell):
            return date(int(match.group(3)), int(match.group(2)), int(match.group(1)))
        if (match := _WORD_DATE.match(cell)) and match.group(2).lower() in MONTH_NUMBERS:
            day = match.group(1) or match.group(3) or 1
            return date(int(match.group(4)), MONTH_NUMBERS[match.group(2).lower()], int(day))
    except ValueError:  # '31/02/2021'
        return None
    return None


# the superlatives a question asks a column by, each with its way ('max' or 'min') and the kind of column
# it implies when it names none ('date' for 'most recent', 'money' for 'cheapest', '' for any figure)
_SUPERLATIVES: list[tuple[str, str, str]] = [
    (r"most\s+recent(?:ly)?|latest|newest|last|youngest", "max", "date"),
    (r"oldest|earliest|first|longest[-\s]serving|least\s+recent(?:ly)?", "min", "date"),
    (r"cheapest|least\s+expensive|lowest[-\s]priced", "min", "money"),
    (r"most\s+expensive|dearest|priciest|costliest|highest[-\s]priced", "max", "money"),
    (r"top|bottom", "min", "rank"),
    (r"highest|most|biggest|largest|greatest|maximum|best[-\s]selling|best|longest|tallest|heaviest|widest"
     r"|deepest|fastest", "max", ""),
    (r"lowest|least|fewest|smallest|minimum|worst|shortest|lightest|narrowest|shallowest|slowest", "min", ""),
]


def _degrees(degrees: list[tuple[str, str, str]]) -> re.Pattern[str]:
    """One pattern of a list of superlatives or comparatives, the words found its group 1."""
    return re.compile(r"\b(" + "|".join(f"(?:{words})" for words, _, _ in degrees) + r")\b", re.IGNORECASE)


def _degree_of(words: str, degrees: list[tuple[str, str, str]]) -> tuple[str, str]:
    """The way and the implied kind of column of the degree `words` (found by `_degrees(degrees)`)."""
    return next((way, kind) for pattern, way, kind in degrees if re.fullmatch(pattern, words, re.IGNORECASE))


_SUPERLATIVE = _degrees(_SUPERLATIVES)
_ORDINALS = {"second": 1, "third": 2, "fourth": 3, "fifth": 4, "2nd": 1, "3rd": 2, "4th": 3, "5th": 4}
_ORDINAL = re.compile(r"\b(" + "|".join(_ORDINALS) + r")\b", re.IGNORECASE)
# a threshold: 'more than £10', 'over 20', 'at least 5', 'under £5', 'fewer than 3'
_THRESHOLD = re.compile(
    r"\b(?P<way>more\s+than|greater\s+than|higher\s+than|larger\s+than|bigger\s+than|over|above|exceeding|at\s+least"
    r"|less\s+than|fewer\s+than|lower\s+than|smaller\s+than|cheaper\s+than|under|below|at\s+most|up\s+to"
    r"|after|since|later\s+than|before|earlier\s+than)"
    r"\s+(?P<amount>(?:[01]?\d|2[0-3]):[0-5]\d|[£$€¥]?\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:p|pence|cents?)\b|\s?¢)?)",
    re.IGNORECASE,
)
# 'no' or 'not' just before a threshold turns it round ('no more than £5', 'not before 2020')
_NEGATED_THRESHOLD = re.compile(r"\b(no|not)\s+$", re.IGNORECASE)
_ABOVE = ("more", "greater", "higher", "larger", "bigger", "over", "above", "exceeding", "after", "since", "later")
_HOW_MANY = re.compile(r"^\W*(?:and\s+|so\s+)?how\s+many\b", re.IGNORECASE)
# 'how many points does ...', 'how many units did ...': a count the table gives as a cell
_HOW_MANY_WHAT = re.compile(
    r"^\W*(?:and\s+|so\s+)?how\s+many\s+([^\W\d_]+)\s+(?:does|do|did|has|have|had|is|are|was|were|will|can)\b",
    re.IGNORECASE,
)
_WHICH = re.compile(r"^\W*(?:and\s+|so\s+)?(?:which|who|what|list|show|name)\b", re.IGNORECASE)
# words of a question that ask for every row ('how many teams are there?', 'how many rows in total?')
_ALL_ROWS_WORDS = frozenset(
    "there total altogether listed list table sheet file spreadsheet row rows entry entries record records "
    "line lines".split()
)
# a column's name that implies money ('Price', 'Cost (£)') or time ('Joined', 'Date of birth'), for a
# superlative that names no column
# (stemmed, as `_column_words` gives a column's name: 'Price' is 'pric')
_MONEY_NAMES = frozenset(stem(w) for w in "price cost fee fees amount charge rate salary pay wage total value".split())
_AGE_NAMES = frozenset({stem("age")})
_RANK_NAMES = frozenset(stem(w) for w in "position pos rank ranking place standing".split())


@dataclass(frozen=True)
class Row:
    """One labelled row of the context, by its place among the answer's candidates."""

    index: int
    document: str | None
    place: int  # where it stands in its document, so a table's rows are listed in their order
    cells: dict[str, str]


@dataclass(frozen=True)
class TablePick:
    """The rows a table question quotes, best first, and the answer's first line where it states more
    than 'From the documents:' (a count, the order the rows are in); `lead` is None for the usual line."""

    picked: list[int]
    lead: str | None


def _column_words(column: str) -> set[str]:
    """A column's name as stemmed terms ('Points' -> {'point'}, 'Pts' -> {'point'})."""
    words = {stem(term) for term in content_terms(column.lower())}
    return words | ({"point"} if "pts" in words else set())


# a cell that is a year as much as a count ('1850' of Built or of Mileage), and the names of columns that hold
# one or the other (stemmed, as `_column_words` gives them)
_BARE_YEAR = re.compile(r"(?:1[5-9]|20)\d{2}")
_TIME_NAMES = frozenset(
    stem(w) for w in "year years yr date dated born died founded established built opened closed joined since "
    "season start started end ended".split()
)
_QUANTITY_NAMES = _MONEY_NAMES | frozenset(
    stem(w) for w in "quantity qty stock count number units sold mileage miles km distance weight height length "
    "size population score points goals runs attendance capacity visitors members sales revenue rooms seats pages "
    "words calories elevation altitude depth area acres hours minutes tonnage".split()
)


def _holds_years(column: str, read: dict[int, Value], bare: set[int]) -> bool:
    """Whether a column's bare four-digit cells ('1850', '2040') are years: its name says a time ('Year',
    'Joined'), or every other figure in it is a date and its name names no quantity or price. A column of
    mileages, stock or prices between 1500 and 2099 ('Mileage: 1650') is of numbers: read as years it was
    ordered 'latest first', hid the Year beside it from 'which is the newest?' and was never added up."""
    words = _column_words(column)
    if words & _TIME_NAMES:
        return True
    return all(value.kind == "date" for index, value in read.items() if index not in bare) and not words & _QUANTITY_NAMES


def _figures(rows: Sequence[Row], column: str) -> dict[int, Value]:
    """The rows' values in `column` (by row index), where most of the rows holding it read as figures of
    one kind; empty for a column of text. Its bare four-digit cells are years only where `_holds_years`."""
    cells = {row.index: row.cells[column].strip() for row in rows if column in row.cells}
    values = {index: cell_value(cell) for index, cell in cells.items()}
    read = {index: value for index, value in values.items() if value is not None}
    if not read or len(read) < 0.8 * len(values):
        return {}
    bare = {index for index in read if _BARE_YEAR.fullmatch(cells[index])}
    if bare and not _holds_years(column, read, bare):
        read = {index: Value(value.value, "number") if index in bare else value for index, value in read.items()}
    kinds = {value.kind for value in read.values()}
    if len(kinds) > 1:
        kinds -= {"number"}  # '2021' beside '4 March 2021': dates; '12' beside '£12': money
    if len(kinds) != 1:
        return {}
    kind = next(iter(kinds))
    return {index: value for index, value in read.items() if value.kind == kind or value.kind == "number"}


def _column_kind(rows: Sequence[Row], column: str) -> str:
    """The kind of a column of figures: 'date', 'time' or 'money' when any of its figures is one (a plain
    '12' may stand beside '£4.99' in a column of prices), else 'number'."""
    kinds = {value.kind for value in _figures(rows, column).values()}
    return next((kind for kind in ("date", "time", "money") if kind in kinds), "number")


def _columns(rows: Sequence[Row]) -> list[str]:
    """The table's columns, in the order its rows name them."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row.cells))
    return list(seen)


def _named_column(question: str, rows: Sequence[Row], near: int) -> str | None:
    """The column of figures the question names ('most points', 'joined', 'in stock'); of several, the one
    named nearest to `near` (where its superlative or threshold stands); a column a word only opens ('miles'
    of Mileage) where no column is named by a whole word. None when it names none."""
    named: list[tuple[bool, int, str]] = []
    lowered = question.lower()
    for column in _columns(rows):
        if not _figures(rows, column):
            continue
        words = _column_words(column)
        for match in re.finditer(r"[^\W_]+", lowered):
            if (how := _names_column(match.group(0), words)) is not None:
                named.append((how == "opens", abs(match.start() - near), column))
    return min(named)[2] if named else None


def _names_column(word: str, words: set[str]) -> str | None:
    """How a word of a question names a column of these stemmed `words`: 'whole' by its stem ('won' or
    'wins' of Won too), 'opens' by a stem of four letters or more that a column's word opens with ('miles'
    of Mileage); None when it does not."""
    stemmed = stem(word)
    if stemmed in words or (word in {"won", "win", "wins"} and "win" in words):
        return "whole"
    if word in STOPWORDS:
        return None
    forms = {form for form in (stemmed, word.removesuffix("s")) if len(form) >= 4}  # 'miles': 'mil' and 'mile'
    return "opens" if any(w.startswith(form) for w in words for form in forms) else None


def _implied_column(kind: str, way: str, question: str, rows: Sequence[Row]) -> tuple[str, str] | None:
    """The column a superlative naming none implies, with its way: 'cheapest' a money column (or one named
    as a price), 'most recent' a column of years or dates, 'oldest' an Age column (its highest)."""
    columns = [column for column in _columns(rows) if _figures(rows, column)]
    if not kind and _MONEY_ASKED.search(question):  # 'which costs more, the spade or the hoe?', 'who paid the most?'
        money = _implied_column("money", way, question, rows)
        if money is not None:
            return money
    if kind == "rank":  # 'who is top of the league?': the first place; 'bottom', the last
        ranks = [c for c in columns if _column_words(c) & _RANK_NAMES]
        bottom = re.search(r"\bbottom\b", question, re.IGNORECASE)
        return (ranks[0], "max" if bottom else "min") if ranks else None
    if kind == "date" and re.search(r"\b(?:old|young)(?:er|est)\b", question, re.IGNORECASE):
        ages = [c for c in columns if _column_words(c) & _AGE_NAMES]
        if ages:  # the oldest person has the highest age
            return ages[0], "min" if way == "max" else "max"
    if kind == "money":
        found = [c for c in columns if _column_kind(rows, c) == "money"]
        found = found or [c for c in columns if _column_words(c) & _MONEY_NAMES]
    elif kind == "date":  # of several times of day (Departs, Arrives), the first: a start comes before its end
        found = [c for c in columns if _column_kind(rows, c) == "date"]
        found = found or [c for c in columns if _column_kind(rows, c) == "time"][:1]
    else:  # 'the biggest expense': the one column of figures, leaving out times (a Date beside an Amount)
        found = columns if len(columns) == 1 else [c for c in columns if _column_kind(rows, c) not in _TIMES]
    return (found[0], way) if len(found) == 1 else None


# 'Which mulch reduced weeds the most?': a verb of lowering before a plain superlative asks for the row whose
# figure is lowest (the fewest weeds), not the highest
_LOWERS = re.compile(
    r"\b(?:reduc(?:e|es|ed|ing)|cut(?:s|ting)?|lower(?:s|ed|ing)?|decreas(?:e|es|ed|ing)|drop(?:s|ped|ping)?"
    r"|shr[iau]nk|shrinks?|minimi[sz](?:e|es|ed|ing)|fell|falls?)\b",
    re.IGNORECASE,
)


def _superlative(question: str) -> tuple[str, str, int] | None:
    """The question's superlative: its way ('max'/'min'), the column kind it implies, and where it stands. A
    plain 'the most' / 'the least' after a verb of lowering turns the way round ('reduced weeds the most':
    the lowest Weeds)."""
    match = _SUPERLATIVE.search(question)
    if match is None:
        return None
    way, kind = _degree_of(match.group(1), _SUPERLATIVES)
    if not kind and _LOWERS.search(question, 0, match.start(1)):
        way = "min" if way == "max" else "max"
    return way, kind, match.start(1)


def joined_rows(rows: list[Row]) -> list[Row]:
    """The rows with each long row's later lines joined to its first: the loaders write a row longer than a
    leaf as several lines cut between cells, each opening with the row's first cell ('Boat: Kittiwake'), so a
    line that follows one of its document with that first cell and none of its other columns goes on that
    row (two rows of a table alike in their first cell share their columns). So a count counts it once, and
    its cells are all its own. Its line of the most cells stands for it where it is quoted (a long cell's
    line shows least of the rest), in its first line's place."""
    joined: list[Row] = []
    standing: list[int] = []  # the cells of the line that stands for each joined row
    for row in sorted(rows, key=lambda row: (row.document is None, row.document or "", row.place)):
        previous = joined[-1] if joined else None
        if previous is None or previous.document is None or not _continues(previous, row):
            joined.append(row)
            standing.append(len(row.cells))
            continue
        index = row.index if len(row.cells) > standing[-1] else previous.index
        joined[-1] = replace(previous, index=index, cells={**previous.cells, **row.cells})
        standing[-1] = max(standing[-1], len(row.cells))
    return sorted(joined, key=lambda row: row.index)


def _continues(previous: Row, row: Row) -> bool:
    """Whether `row` is a later line of `previous` (`joined_rows`)."""
    first = next(iter(row.cells))
    return (
        row.document == previous.document
        and next(iter(previous.cells)) == first
        and previous.cells[first] == row.cells[first]
        and not (set(row.cells) - {first}) & set(previous.cells)
    )


def _tables(rows: list[Row]) -> dict[str | None, list[Row]]:
    """The rows grouped by their document, in order; a row of no known document (a summary's copy of a row
    whose leaf is not in the context) joins the table whose columns hold all of its labels."""
    tables: dict[str | None, list[Row]] = {}
    for row in sorted(rows, key=lambda row: row.place):
        if row.document is not None:
            tables.setdefault(row.document, []).append(row)
    for row in rows:
        if row.document is None:
            home = next((d for d, held in tables.items() if d is not None and set(row.cells) <= set(_columns(held))), None)
            tables.setdefault(home, []).append(row)
    return tables


def _ranked_table(tables: dict[str | None, list[Row]], first: int | None) -> list[Row] | None:
    """The table the question is about: the one holding the best-ranked sentence (`first`). None when that
    sentence is no row: the question is about the prose ('what was the largest ship wrecked?' beside a
    table of keepers' years), and is ranked as any question is."""
    return next((rows for rows in tables.values() if any(row.index == first for row in rows)), None)


def _said(named: dict[str, set[str]]) -> str:
    """The values a question names, by column ('Class 10A and Grade A or B')."""
    return " and ".join(f"{column} {' or '.join(sorted(cells))}" for column, cells in named.items())


def _shown(value: str) -> str:
    return " ".join(value.split())


def _ordered(rows: list[Row], column: str, way: str) -> list[Row]:
    figures = _figures(rows, column)
    held = [row for row in rows if row.index in figures]
    return sorted(held, key=lambda row: figures[row.index].value, reverse=way == "max")


# what a lead says of a table not shown to be wholly in the context (more rows than the budget, or rows left out)
_NOT_WHOLE = "the context may not hold every row of {name}"
# how such a lead opens: it answers, with the rows found, though it says that the context may "not" hold them all
PARTIAL_TABLE_LEAD = re.compile(r"^From the documents \([^\n]{0,400}?the context may not hold every row of ")
_TIMES = frozenset({"date", "time"})  # the kinds of figure that are times: 'latest', 'earliest', 'after'
_WAY_SHOWN = {("max", "date"): "latest first", ("min", "date"): "earliest first", ("max", ""): "highest first",
              ("min", ""): "lowest first"}  # fmt: skip


# what a lead says of a table the engine found too big to read whole (`asks_whole_table`), before _NOT_WHOLE
_TOO_BIG = (
    f"{{name}} is too big to read whole, more than {MAX_WHOLE_TABLE_ROWS} rows or {MAX_WHOLE_TABLE_CHARS:,} "
    "characters; "
)


def said_too_big(picked: TablePick | None, too_big: frozenset[str | None]) -> TablePick | None:
    """`table_pick`'s answer, its lead saying so of a table `too_big` to read whole (the engine marks its
    leaves), where it says the context may not hold every row: the user learns why no count is given."""
    if picked is None or picked.lead is None:
        return picked
    lead = picked.lead
    for name in too_big - {None}:
        partial = _NOT_WHOLE.format(name=name)
        lead = lead.replace(partial, _TOO_BIG.format(name=name) + partial)
    return replace(picked, lead=lead)


def table_pick(
    question: str,
    rows: list[Row],
    ranked: Sequence[int],
    complete: set[str | None],
    quotes: int,
    earlier: Sequence[str] = (),
) -> TablePick | None:
    """The rows to quote for a question over a table's rows, and the first line of the answer, or None
    for a question of another kind (a lookup, 'what is Ann's phone?', is ranked as any question is).

    `rows` are the context's labelled rows, `ranked` the candidates' indices as ranked (best first), `complete` the
    documents every row of which is in the context (a count is stated only of those), `earlier` the
    conversation's earlier questions, the latest first, for a follow-up that leans on one ('and the
    fewest?' after 'which team has the most points?', 'and the second?')."""
    if not rows:
        return None
    if CHECKS_LAST_ANSWER.match(question):  # 'is that before 2020?': the rows the last question was answered by
        at = next((i for i, asked in enumerate(earlier) if not CHECKS_LAST_ANSWER.match(asked)), None)
        return None if at is None else table_pick(earlier[at], rows, ranked, complete, quotes, earlier[at + 1 :])
    if earlier and LISTS_COUNTED_ROWS.match(question):  # 'which ones?' after 'how many products are in Power tools?'
        return table_pick(earlier[0], rows, ranked, complete, quotes, earlier[1:])
    picked = _pick(question, rows, ranked, complete, quotes, earlier)
    if picked is None and earlier and _ROW_PRONOUN.search(question):
        # 'who claimed it?' after 'what was the most expensive expense?': of the row that answer gave first
        before = table_pick(earlier[0], rows, ranked, complete, quotes, earlier[1:])
        if before is not None:  # 'it' is the row that answer gave first; 'they', its rows
            plural = re.search(r"\b(?:they|them|their)\b", question, re.IGNORECASE)
            return TablePick(before.picked[: quotes if plural else 1], "From the documents:")
    return picked


# a follow-up asking for the rows a count counted ('which ones?', 'who are they?', 'list them')
LISTS_COUNTED_ROWS = re.compile(
    r"^\W*(?:(?:and|so|ok|okay)\W+)?(?:(?:which|what)\s+ones?|(?:who|which|what)\s+(?:are|were)\s+(?:they|those|these)"
    r"|(?:list|show|name)\s+(?:them|those|these|the\s+rows)(?:\s+all)?)\W*$",
    re.IGNORECASE,
)
# a pronoun standing for the row the last answer gave ('who claimed it?', 'what is its price?')
_ROW_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|he|him|his|she|her|that\s+one|this\s+one)\b", re.IGNORECASE)


def _pick(
    question: str, rows: list[Row], ranked: Sequence[int], complete: set[str | None], quotes: int, earlier: Sequence[str]
) -> TablePick | None:
    """`table_pick` of a question read on its own (a follow-up's earlier questions only for 'and the second?'
    and 'and the fewest?')."""
    tables = _tables(rows)
    table = _ranked_table(tables, ranked[0] if ranked else None)
    if table is None and (_SUPERLATIVE.search(question) or _THRESHOLD.search(question)):
        # 'who has the highest salary?' ranked a sentence saying 'highest' first: the one table with a Salary
        # column, when one of its rows is quoted too
        top = set(ranked[:quotes])
        naming = [
            held for held in tables.values()
            if _named_column(question, held, 0) is not None and any(row.index in top for row in held)
        ]  # fmt: skip
        table = naming[0] if len(naming) == 1 else None
    if table is None:
        return None
    document = table[0].document
    name = document or "the table"
    superlative = _superlative(question)
    ordinal = _ORDINAL.search(question)
    ordinal_at = _ORDINALS[ordinal.group(1).lower()] if ordinal else 0
    if superlative is None and ordinal is not None:  # 'and the second?': of the last superlative asked
        asked = next((q for q in earlier if _superlative(q) is not None), None)
        if asked is None:
            return None
        question, superlative = asked, _superlative(asked)
    threshold = _THRESHOLD.search(question)
    if threshold is not None:
        return _over_threshold(question, threshold, table, name, document in complete)
    if superlative is None:
        aggregate = _aggregated(question, table, name, document in complete)
        if aggregate is not None:
            return aggregate
        compared = _compared_rows(question, table)
        if compared is not None:
            return compared
    if superlative is None or _HOW_MANY.match(question):
        return _holding(question, table, name, document in complete) or _looked_up(question, table, ranked, quotes)
    way, kind, at = superlative
    column = _named_column(question, table, at)
    values_of = question  # the question whose named values keep the rows ('in 10A')
    if column is None and not _mentions_a_column(question, table):
        # 'and the fewest?' after 'which team has the most points?': the column the conversation asked by, and
        # after 'the highest Maths mark in 10A', its rows
        asked = next((q for q in earlier if _named_column(q, table, len(q)) is not None), None)
        if asked is not None:
            column, values_of = _named_column(asked, table, len(asked)), asked
    if column is not None and kind == "rank":  # 'top on points': the most of them
        way = "min" if re.search(r"\bbottom\b", question, re.IGNORECASE) else "max"
    implied = _implied_column(kind, way, question, table) if column is None else (column, way)
    if implied is None:
        return None
    column, way = implied
    # 'who got the highest Maths mark in 10A?': of the rows holding the values it names (not a key's)
    # ... named as the cell writes it ('10A', 'Alice'): 'the longest-serving member' names no Role 'Member'
    grouped = {
        c: written for c, cells in _named_values(values_of, table).items()
        if not _is_key(table, c) and c != column and (written := {v for v in cells if v.strip() in values_of})
    }  # fmt: skip
    within = [row for row in table if all(row.cells.get(c) in cells for c, cells in grouped.items())]
    ordered = _ordered(within, column, way) if grouped else _ordered(table, column, way)
    if len(ordered) < (1 if grouped else 2) or ordinal_at >= len(ordered):  # 'the fifth' of three rows: none
        return None
    dated = _column_kind(table, column) in _TIMES
    shown_way = _WAY_SHOWN[(way, "date" if dated else "")]
    rows_of = f"{name}'s rows with {_said(grouped)}" if grouped else f"{name}'s rows"
    if document in complete:
        lead = f"From the documents ({rows_of} by {column}, {shown_way}):"
    else:  # a table larger than the context: the order is of the rows retrieved, and the answer says so
        lead = f"From the documents ({rows_of} found by {column}, {shown_way}; {_NOT_WHOLE.format(name=name)}):"
    return TablePick([row.index for row in ordered[ordinal_at : ordinal_at + quotes]], lead)


# a comparative between two rows ('did Mill Lane FC or Quarry United win more games?', 'which is cheaper, the
# trowel or the seed tray?'), each with its way and the kind of column it implies when it names none
_COMPARATIVES: list[tuple[str, str, str]] = [
    (r"more\s+recent(?:ly)?|later|newer|younger", "max", "date"),
    (r"earlier|older|sooner", "min", "date"),
    (r"cheaper|less\s+expensive", "min", "money"),
    (r"more\s+expensive|dearer|pricier|costlier", "max", "money"),
    (r"more|higher|bigger|larger|greater", "max", ""),
    (r"fewer|less|lower|smaller", "min", ""),
]
_COMPARATIVE = _degrees(_COMPARATIVES)


def _compared_rows(question: str, table: list[Row]) -> TablePick | None:
    """Two rows the question names by a key ('Mill Lane FC', 'the trowel') and compares by a comparative: the
    two in the asked order by the asked column; None for any other question."""
    match = _COMPARATIVE.search(question)
    if match is None:
        return None
    way, kind = _degree_of(match.group(1), _COMPARATIVES)
    named = _key_rows(question, table)
    if len(named) != 2:
        return None
    column = _named_column(question, table, match.start(1))
    implied = (column, way) if column is not None else _implied_column(kind, way, question, table)
    if implied is None:
        return None
    column, way = implied
    ordered = _ordered(named, column, way)
    if len(ordered) != 2:
        return None
    key = next(c for c in ordered[0].cells if _is_key(table, c))
    first, second = (row.cells.get(key, "") for row in ordered)
    dated = _column_kind(table, column) in _TIMES
    lead = f"From the documents ({first} and {second} by {column}, {_WAY_SHOWN[(way, 'date' if dated else '')]}):"
    return TablePick([row.index for row in ordered], lead)


def _mentions_a_column(question: str, table: list[Row]) -> bool:
    """Whether the question names any column of the table, of figures or of text ('the cheapest item')."""
    words = {stem(t) for t in content_terms(question.lower())}
    return any(words & _column_words(column) for column in _columns(table))


def _over_threshold(question: str, threshold: re.Match[str], table: list[Row], name: str, whole: bool) -> TablePick | None:
    """'Which items cost more than £10?': the rows whose figure in the asked column passes the threshold."""
    amount = cell_value(threshold.group("amount").replace(" ", ""))
    if amount is None:
        return None
    column = _named_column(question, table, threshold.start())
    if column is None:
        kind = "money" if amount.kind == "money" or re.search(r"\b(?:cost|price|pay|spend)", question, re.I) else ""
        if amount.kind in _TIMES and kind != "money":  # 'who joined after 2019?': a column of years or dates;
            kind = "date"  # 'which cars cost more than 2000?' asks a price, not a year
        implied = _implied_column(kind, "max", question, table)
        if implied is None:
            return None
        column = implied[0]
    figures = _figures(table, column)
    said_way = " ".join(threshold.group("way").lower().split())
    above = said_way.split()[0] in _ABOVE or said_way == "at least"
    inclusive = said_way in {"at least", "at most", "up to", "since"}
    negation = _NEGATED_THRESHOLD.search(question[: threshold.start()])
    negated = f"{negation.group(1).lower()} " if negation else ""
    if negated:  # 'no more than £5' is at most £5; 'not under 10', at least 10
        above, inclusive = not above, not inclusive
    way = "max" if above else "min"

    def passes(value: float) -> bool:
        if inclusive:
            return value >= amount.value if above else value <= amount.value
        return value > amount.value if above else value < amount.value

    held = [row for row in _ordered(table, column, way) if passes(figures[row.index].value)]
    said = f"{negated}{_shown(threshold.group('way'))} {_shown(threshold.group('amount'))}"
    if not held:
        if not whole:
            return None
        return TablePick([row.index for row in _ordered(table, column, way)[:1]], (
            f"No row of {name} has {column} {said}; the nearest is:"))
    if whole:
        first = f"; the first {MAX_ROWS_QUOTED} are quoted" if len(held) > MAX_ROWS_QUOTED else ""
        counted = f"{len(held)} of the {len(table)} rows of {name}"
        lead = f"From the documents: {counted} with {column} {said}{first}:"
    else:
        lead = f"From the documents ({_NOT_WHOLE.format(name=name)}): the rows found of {name} with {column} {said}:"
    return TablePick([row.index for row in held[:MAX_ROWS_QUOTED]], lead)


def _holding(question: str, table: list[Row], name: str, whole: bool) -> TablePick | None:
    """'How many members joined in 2020?', 'which members are in Leeds?', 'how many teams are there?': the
    rows holding every value the question names as a whole cell (of two columns, both: 'the North in Q3'),
    counted when every row is in the context; every row for a count that names no value. None when the
    question is no such question, asks a cell ('how many points does Quarry United have?'), or (not a count)
    fewer than two rows hold its values: a lookup is ranked as any question is."""
    how_many = bool(_HOW_MANY.match(question))
    if not how_many and not _WHICH.match(question):
        return None
    asked = {stem(t) for t in content_terms(question.lower())} - {"many"}
    counted = _HOW_MANY_WHAT.match(question)
    if counted and any(
        stem(counted.group(1).lower()) in _column_words(column) for column in _columns(table) if _figures(table, column)
    ):
        return None  # 'how many points does Quarry United have?' asks a cell, not a count of rows
    # a key ('Quarry United' of Team, a column of text naming each row once) picks a row to look up, not rows
    # to count: 'how many goals for Quarry United?' is ranked as any question is
    named = {column: cells for column, cells in _named_values(question, table).items() if not _is_key(table, column)}
    period = _in_period(question, table, named)
    if period is None:
        return None  # 'which of Carol's expenses were in March?' with no column of dates to place March
    dated, period_said = period
    if named or period_said:
        held = [row for row in table if all(row.cells.get(column) in cells for column, cells in named.items())]
        held = [row for row in held if dated is None or row.index in dated]
        if not held or (not how_many and len(held) < 2):
            return None
        said = " and ".join([f"{column} {' or '.join(sorted(cells))}" for column, cells in named.items()] + period_said)
        if not whole:  # 'which …?' too: 'N of the M rows' would give the context's M as the table's size
            lead = f"From the documents ({_NOT_WHOLE.format(name=name)}): the rows found of {name} with {said}:"
        else:
            verb = "has" if len(held) == 1 else "have"
            first = f"; the first {MAX_ROWS_QUOTED} are quoted" if len(held) > MAX_ROWS_QUOTED else ""
            lead = f"From the documents: {len(held)} of the {len(table)} rows of {name} {verb} {said}{first}:"
        return TablePick([row.index for row in held[:MAX_ROWS_QUOTED]], lead)
    lists_all = bool(_LISTS_ALL.match(question))
    if not (how_many or lists_all):
        return None
    table_words = {stem(t) for t in content_terms(re.sub(r"[._-]", " ", name.lower()))}
    if len(asked - _ALL_ROWS_WORDS - table_words - _holder_words(question)) > 1:
        return None  # 'how many keepers married?' asks what no value of the table names
    if not whole:  # 'how many orders are there?' of a table larger than the context: no count, and it says so
        if lists_all:
            lead = f"From the documents ({_NOT_WHOLE.format(name=name)}): the rows found of {name}:"
            return TablePick([row.index for row in table[:MAX_ROWS_QUOTED]], lead)
        return TablePick([row.index for row in table[:3]], f"From the documents ({_NOT_WHOLE.format(name=name)}, so "
                         f"no count is given): the first rows found of {name}:")  # fmt: skip
    first = f"; the first {MAX_ROWS_QUOTED} are quoted" if len(table) > MAX_ROWS_QUOTED else ""
    lead = f"From the documents: {name} has {len(table)} rows{first}:"
    return TablePick([row.index for row in table[:MAX_ROWS_QUOTED]], lead)


# 'how many boats does the club have?', 'how many boats are in the fleet?': who or what holds the rows (not a
# value of them), which the count does not ask about
_HOLDER = re.compile(
    r"^\W*(?:and\s+|so\s+)?how\s+many\s+[^\W\d_]+\s+(?:"
    r"(?:does|do|did)\s+(?P<owner>.+?)\s+(?:have|own|hold|keep|possess|run|operate|use)"
    r"|(?:has|have)\s+(?P<got>.+?)\s+got"
    r"|(?:are|were|is|was)\s+(?:there\s+)?(?:in|on|at)\s+(?P<place>.+?)"
    r")\s*[?.!]*\s*$",
    re.IGNORECASE,
)


def _holder_words(question: str) -> set[str]:
    """The stemmed words of what holds the counted rows ('the club' of 'how many boats does the club have?')."""
    found = _HOLDER.match(question)
    if found is None:
        return set()
    holder = found.group("owner") or found.group("got") or found.group("place")
    verb = found.group(0).rstrip(" ?.!").rsplit(None, 1)[-1]  # 'have', 'own', 'got': no word of what is counted
    return {stem(t) for t in content_terms(f"{holder} {verb}".lower())}


def _is_key(table: list[Row], column: str) -> bool:
    """Whether a column names each row once: text (not figures), a different value in every row of three or
    more."""
    values = [row.cells[column] for row in table if column in row.cells]
    return len(values) >= 3 and len(set(values)) == len(values) and not _figures(table, column)


def _folded(text: str) -> str:
    """Text with its case and accents set aside ('José' -> 'jose'), so a question typed without them meets
    the cell."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _words(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+|[£$€¥]", _folded(text)))


def _named_values(question: str, table: list[Row]) -> dict[str, set[str]]:
    """The cells the question names whole ('2020', 'Leeds', '2022-23 Q3'), by column."""
    spoken = f" {_words(question)} "
    found: dict[str, set[str]] = {}
    for row in table:
        for column, cell in row.cells.items():
            words = _words(cell)
            if len(words) == 1 and words.isalpha() and not re.search(rf"\b{words.upper()}\b", question):
                continue  # a one-letter cell ('A' of Grade) is named only as written: not the article 'a'
            if words and f" {words} " in spoken:
                found.setdefault(column, set()).add(cell)
    # a value of several columns ('Ashford' of From and To): the column the question names before it ('from
    # Ashford'), where it names one
    for column in list(found):
        for cell in list(found.get(column, ())):
            holders = [c for c in found if any(_words(held) == _words(cell) for held in found[c])]
            said = [c for c in holders if f" {_words(c)} {_words(cell)} " in spoken]
            if len(holders) > 1 and len(said) == 1:
                for other in holders:
                    if other != said[0]:
                        found[other] = {held for held in found[other] if _words(held) != _words(cell)}
    return {column: cells for column, cells in found.items() if cells}


def _key_rows(question: str, table: list[Row]) -> list[Row]:
    """The rows the question names by a key cell ('Ann Li' of Name, 'the trowel' of Item), case and accents
    aside ('jose' for 'José Martínez'); where it names none whole, by a word of one that no other row's key
    holds (a first name alone, 'Ann', or a surname, 'Li'), so 'what is Ann's phone?' finds Ann Li's row. A
    word that names a column ('level' of 'Reorder level') names no row."""
    spoken = f" {_words(question)} "
    keys = [column for column in _columns(table) if _is_key(table, column)]
    whole = [row for row in table if any((w := _words(row.cells.get(c, ""))) and f" {w} " in spoken for c in keys)]
    if whole:
        return whole
    # a word that names a column, or is a whole cell of another column ('Glasgow' of Office, beside the Name
    # 'Jack King, Glasgow'), names no row
    cells = {_words(cell) for row in table for column, cell in row.cells.items() if column not in keys}
    asked = set(content_terms(_words(question))) - {w for c in _columns(table) for w in content_terms(_words(c))} - cells
    named: list[Row] = []
    for column in keys:
        parts = {row.index: set(content_terms(_words(row.cells.get(column, "")))) for row in table}
        held = Counter(part for row_parts in parts.values() for part in row_parts)
        named += [
            row for row in table
            if row not in named and any(held[part] == 1 and not part.isdigit() for part in parts[row.index] & asked)
        ]  # fmt: skip
    return named


def _looked_up(question: str, table: list[Row], ranked: Sequence[int], quotes: int) -> TablePick | None:
    """'What is Ann's phone?', 'what grade did jose get?': the one row the question names by its key (whole,
    or by a first name or surname alone) quoted first, the ranked quotes after it; None when it names no
    row or several."""
    named = _key_rows(question, table)
    if len(named) != 1:
        return None
    first = named[0].index
    keys = {column for column in _columns(table) if _is_key(table, column)}
    words = {stem(t) for t in content_terms(_words(question))}
    # the row answers when the question asks one of its other columns ('what grade did jose get?'); else the
    # grounding model judges it ('what is Jose's email?' of a table without one)
    asks_a_column = any(words & _column_words(column) for column in _columns(table) if column not in keys)
    lead = "From the documents:" if asks_a_column else None
    return TablePick([first, *[index for index in ranked if index != first][: quotes - 1]], lead)


# a sum or an average asked of rows: 'how much did Alice spend in total?', 'the average score of team B'
_AVERAGE = re.compile(r"\b(?:average|mean|avg)\b", re.IGNORECASE)
_TOTAL = re.compile(r"\b(?:total|sum|altogether|combined|in\s+all|add(?:s|ed)?\s+up)\b", re.IGNORECASE)
_HOW_MUCH = re.compile(
    r"^\W*(?:and\s+|so\s+)?(?:how\s+much\b|what\s+did\b.*\b(?:spend|pay|earn|claim|cost)\b)", re.IGNORECASE
)
# words that ask an amount of money when no column is named ('how much did Alice spend?')
_MONEY_ASKED = re.compile(r"\b(?:spen[dt]|spending|cost|costs|paid|pay|owe[sd]?|claimed|charged|earn(?:s|ed|t)?)\b", re.I)
_TOTAL_ROW = frozenset({"total", "totals", "grand total", "subtotal", "sub total", "sum", "all"})
_CURRENCY = re.compile(r"[£$€¥]")


def _aggregated(question: str, table: list[Row], name: str, whole: bool) -> TablePick | None:
    """'How much did Alice spend in total?', 'what is the average Maths of class 10A?', 'total sales in Q3?':
    the sum or the average of the asked column over the rows holding every value the question names (every
    row when it names none), stated only when every row of the table is in the context, with the figures
    added; otherwise the rows found, and no figure. 'How much did Alice spend?' is a sum when two rows or
    more are Alice's. None for any other question, or when the column or the figures are unclear (a column
    of dates, two currencies, a row without a figure)."""
    average = _AVERAGE.search(question)
    total = _TOTAL.search(question)
    how_much = _HOW_MUCH.match(question)
    if not (average or total or how_much):
        return None
    counted = _HOW_MANY_WHAT.match(question) or re.match(r"^\W*(?:and\s+|so\s+)?how\s+many\s+([^\W\d_]+)", question, re.I)
    if _HOW_MANY.match(question) and not (counted and _figure_column_named(counted.group(1), table)):
        return None  # 'how many expenses in total?' counts rows ('how many units in total?' adds Units)
    named = {column: cells for column, cells in _named_values(question, table).items() if not _is_key(table, column)}
    held = [row for row in table if all(row.cells.get(column) in cells for column, cells in named.items())]
    held = [row for row in held if not any(_folded(cell).strip(" :") in _TOTAL_ROW for cell in row.cells.values())]
    period = _in_period(question, table, named)
    if period is None:
        return None  # 'what did Carol spend in March?' over a table with no column of dates: not a total of hers
    dated, period_said = period
    held = [row for row in held if dated is None or row.index in dated]
    if not held or (not (average or total) and not (named or period_said)):
        return None
    columns = _summed_columns(question, table, set(named), (average or total or how_much).start())  # type: ignore[union-attr]
    if not columns or any(not _adds_up(table, held, column) for column in columns):
        return None
    if re.search(r"\b(?:value|worth)\b", question, re.I) and any(
        next(iter(_figures(table, c).values())).kind != "money" for c in columns
    ):
        return None  # 'the total value of the stock' is price times stock, which no column holds
    said = " and ".join([f"{c} {' or '.join(sorted(cells))}" for c, cells in named.items()] + period_said)
    rows_said = f"the {len(held)} rows of {name} with {said}" if said else f"the {len(held)} rows of {name}"
    what = "average" if average else "total"
    if not whole:
        found = f"the rows found of {name} with {said}" if said else f"the rows found of {name}"
        lead = f"From the documents ({_NOT_WHOLE.format(name=name)}, so no {what} is given): {found}:"
        return TablePick([row.index for row in held[:MAX_ROWS_QUOTED]], lead)
    if len(held) == 1:  # 'how much did Carol spend in March?': one row's own figures
        each = ", ".join(f"{column} {_shown(held[0].cells[column])}" for column in columns)
        lead = f"From the documents: the one row of {name} with {said or 'a figure'} has {each}:"
    elif len(columns) > 1:  # 'the average score of 10B' over Maths, English and Science: each of them
        each = ", ".join(f"{column} {_total_of(table, held, column, bool(average))}" for column in columns)
        lead = f"From the documents: over {rows_said}, the {what} is {each}:"
    else:
        column = columns[0]
        cells = [row.cells[column] for row in held]
        added = " + ".join(_shown(cell) for cell in cells) if 1 < len(cells) <= MAX_ROWS_QUOTED else ""
        if average:
            how = f" ({added} = {_total_of(table, held, column, False)}, over {len(held)})" if added else ""
            lead = f"From the documents: the average {column} over {rows_said} is {_total_of(table, held, column, True)}{how}:"
        else:
            how = f" ({added})" if added else ""
            lead = f"From the documents: {column} adds up to {_total_of(table, held, column, False)} over {rows_said}{how}:"
    if len(held) > MAX_ROWS_QUOTED:
        lead = lead.removesuffix(":") + f"; the first {MAX_ROWS_QUOTED} are quoted:"
    return TablePick([row.index for row in held[:MAX_ROWS_QUOTED]], lead)


def _figure_column_named(word: str, table: list[Row]) -> bool:
    """Whether a word names a column of figures ('units' of Units)."""
    return any(stem(word.lower()) in _column_words(column) for column in _columns(table) if _figures(table, column))


def _adds_up(table: list[Row], held: list[Row], column: str) -> bool:
    """Whether every one of the rows holds a figure in the column, of one currency."""
    figures = _figures(table, column)
    return all(row.index in figures for row in held) and len({_currency_of(row.cells[column]) for row in held} - {""}) <= 1


def _currency_of(cell: str) -> str:
    """The currency a cell's amount is in: its sign, '£' for pence ('45p'), '' for none."""
    amount = _AMOUNT.match(cell.strip())
    if amount is not None and (major := _subunit(amount)) is not None:
        return major  # '' for cents: they add to dollars or euros alike
    signs = _CURRENCY.findall(cell)
    return signs[0] if len(set(signs)) == 1 else "".join(sorted(set(signs)))


def _total_of(table: list[Row], held: list[Row], column: str, average: bool) -> str:
    """The rows' sum (or average) in the column, written as its cells write figures."""
    figures = _figures(table, column)
    summed = sum(figures[row.index].value for row in held)
    return _figure_shown(summed / len(held) if average else summed, [row.cells[column] for row in held], average)


def _summed_columns(question: str, table: list[Row], grouped: set[str], near: int) -> list[str]:
    """The columns a sum or an average is of: the column of figures (not dates) the question names nearest to
    `near`; else the one money column when it asks of money ('how much did Alice spend?'); else the table's
    columns of figures that are no date, rank, label ('10A') or column it groups by, when there are at most
    four ('the average score' over Maths, English and Science: each). Empty when unclear."""
    columns = [
        c for c in _columns(table)
        if c not in grouped and (values := _figures(table, c)) and next(iter(values.values())).kind not in _TIMES
        and not _column_words(c) & _RANK_NAMES
        and not any(re.fullmatch(r"\d+[A-Z]", row.cells.get(c, "").strip()) for row in table)
    ]  # fmt: skip
    lowered = question.lower()
    named_any = [(abs(m.start() - near), c) for c in columns for m in re.finditer(r"[^\W_]+", lowered)
                 if stem(m.group(0)) in _column_words(c)]  # fmt: skip
    if named_any:
        return [min(named_any)[1]]
    money = [c for c in columns if next(iter(_figures(table, c).values())).kind == "money"]
    money = money or [c for c in columns if _column_words(c) & _MONEY_NAMES]
    if _MONEY_ASKED.search(question) or _HOW_MUCH.match(question):
        return money if len(money) == 1 else []
    return columns if len(columns) <= 4 else []


def _figure_shown(value: float, cells: list[str], average: bool = False) -> str:
    """A sum or an average written as the cells write their figures: the currency sign, the decimals of the
    most precise cell (two at most for an average of whole numbers), a trailing unit ('%')."""
    written = [_AMOUNT.match(cell.strip()) for cell in cells]
    if any(m and _subunit(m) is not None for m in written):
        return _subunits_shown(value, [m for m in written if m])
    decimals = max((len(m.group("number").split(".")[1]) if m and "." in m.group("number") else 0) for m in written)
    currency = next((m.group("currency") for m in written if m and m.group("currency")), "")
    unit = next((m.group("unit") for m in written if m and m.group("unit")), "")
    places = max(decimals, 2) if average and not currency else decimals
    text = f"{abs(value):,.{places}f}"
    if average and not currency and "." in text:
        text = text.rstrip("0").rstrip(".")
    sign = "-" if value < 0 else ""
    spaced = " " if unit and unit != "%" else ""
    return f"{sign}{currency}{text}{spaced}{unit}"


def _subunits_shown(value: float, written: list[re.Match[str]]) -> str:
    """A sum or an average of amounts some of which are in pence or cents: in that unit under a whole one
    when every cell is ('45p + 30p' is '75p'), else in the whole currency ('45p + £1.20' is '£1.65'); cents
    with no cell naming their currency stay cents ('60¢ + 70¢' is '130¢')."""
    sign = "-" if value < 0 else ""
    hundredths = round(abs(value) * 100, 2)
    subunits = [m for m in written if _subunit(m) is not None]
    unit = subunits[0].group("unit")
    shown_in_unit = f"{sign}{hundredths:g}{' ' if len(unit) > 1 else ''}{unit}"
    major = next((m.group("currency") or _subunit(m) for m in written if m.group("currency") or _subunit(m)), "")
    if (len(subunits) == len(written) and hundredths < 100) or not major:
        return shown_in_unit
    return f"{sign}{major}{abs(value):,.2f}"


_QUARTER = re.compile(r"\bQ([1-4])\b", re.IGNORECASE)
_YEAR = re.compile(r"\b((?:1[5-9]|20)\d{2})\b")


def _in_period(
    question: str, table: list[Row], named: dict[str, set[str]]
) -> tuple[set[int] | None, list[str]] | None:
    """The rows in the month, quarter or year the question names ('in March', 'in Q3 2024', 'in 2023') by the
    table's column of dates, with the words saying so; (None, []) when it names no period, or names it as a
    whole cell (a Quarter column's 'Q3'); None when it names one and no column of dates can say which rows."""
    spoken = _words(question).split()
    months = [m for w in spoken if (m := MONTH_NUMBERS.get(w)) and (w != "may" or re.search(r"\bMay\b", question))]
    quarter = _QUARTER.search(question)
    years = [int(y) for y in _YEAR.findall(question)]
    written = {_words(cell) for cells in named.values() for cell in cells}
    quarter = quarter if quarter and _words(quarter.group(0)) not in written else None
    years = [year for year in years if str(year) not in written]
    if not (months or quarter or years):
        return None, []
    dated = [c for c in _columns(table) if any(v.kind == "date" for v in _figures(table, c).values())]
    if len(dated) != 1:
        return None
    column = dated[0]
    inside: set[int] = set()
    for row in table:
        cell = row.cells.get(column, "").strip()
        found = _date(cell)
        year, month = (found.year, found.month) if found else (int(cell), None) if cell.isdigit() else (None, None)
        if year is None or (years and year not in years):
            continue
        if (months or quarter) and month is None:
            return None  # a column of years cannot say which rows are in March
        if months and month not in months:
            continue
        if quarter and month is not None and (month - 1) // 3 + 1 != int(quarter.group(1)):
            continue
        inside.add(row.index)
    said = [w for w in spoken if w in MONTH_NUMBERS and MONTH_NUMBERS[w] in months] + ([quarter.group(0).upper()] if quarter else [])
    said += [str(year) for year in years]
    return inside, [f"{column} in {' '.join(word.title() if word.isalpha() else word for word in said)}"]
