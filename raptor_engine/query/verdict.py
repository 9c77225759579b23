"""Yes or no, where the quoted sentence settles a yes/no follow-up.

'is that before 2022?' after 'When does cover end?', 'was it more than the excess?' after 'How much did
Greyfriars pay?', 'did he agree?' after a question about Colin Ashworth: the extractive answer quotes the
sentence that holds the answer ('Cover runs from 1 April 2021 to 31 March 2022', 'Colin Ashworth did not
agree with the objection') but said neither yes nor no. Here the first words say so when the quotes settle
it, by one of three readings, and nothing is said when they do not:

- a figure against a number or a thing's figure ('more than 20?', 'less than the deposit?'): the figure the
  last answer gave (the clause of the first quote sharing most words with what was asked), against the
  number asked about or the figure the quotes give the thing; same units, or none said;
- a date against a year, a month or a day ('before 2022?', 'after 10 January?', 'in 2025?'): the one date
  of the quote's clause that answers, the start or the end of a 'from ... to ...' span by what was asked;
- a statement or its negation ('did Colin Ashworth agree?', 'was the loft heated?', 'is it taken in Year
  5?'): every word of the question in one clause of the first quote, with 'not', 'never', 'no longer' or an
  'un-' form of its verb ('unheated'): no; without: yes. A clause missing any word ('She complained to
  the ombudsman, who agreed' for 'did Nadia Okafor agree?') settles nothing.

Deterministic, no model. The caller puts the line in place of the answer's first line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ..ingest.sentences import IRREGULAR, content_terms, stem
from .compared import MONTH_NUMBERS, MONTH_WORD, Figure, clauses, figures_in

# the lead of an answer that says yes or no, which answers even when it says 'not' ('support.says_not_answered')
VERDICT_LEAD = re.compile(r"^From the documents: (?:yes|no)\b")
# How every yes/no question here opens, the one list of its words: any of 'and', 'so', 'but', 'ok', 'okay',
# 'then' ('ok, is that before 2022?', 'so, was it more than £5?'), then the verb that asks
_OPENING = r"(?:(?:and|so|but|ok|okay|then)\b[\s,]*)*"
_ASKING = r"(?:is|was|are|were|did|does|do|has|have|had)"
_YES_NO = re.compile(rf"^{_OPENING}{_ASKING}\b", re.I)
_THAT = r"(?:that|it|this|they|those|these|she|he)"
# a yes/no check of what the last answer said ('is that before 2020?', 'was it more than £5?', 'did they
# join after 2019?', 'do they close before 6?'): the pronoun stands for it; 'did anyone join after 2019?' asks anew
CHECKS_LAST_ANSWER = re.compile(rf"^\W*{_OPENING}{_ASKING}\s+{_THAT}\b", re.IGNORECASE)
_MORE = {
    **dict.fromkeys("more greater higher bigger larger over above longer".split(), 1),
    **dict.fromkeys("less fewer lower smaller under below shorter".split(), -1),
}
_FIGURE_CHECK = re.compile(
    rf"^{_OPENING}(?:is|was|are|were)\s+{_THAT}\s+(?:any\s+|much\s+|a\s+lot\s+)?"
    rf"(?P<way>{'|'.join(_MORE)})\s+(?:than\s+)?(?P<target>.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_DATE_CHECK = re.compile(
    rf"^{_OPENING}{_ASKING}\s+{_THAT}\s+(?:\w+\s+)?"
    r"(?P<way>before|after|earlier\s+than|later\s+than|in|during)\s+(?P<target>.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_MONTH = rf"{MONTH_WORD}\.?"
_DATE = re.compile(
    rf"\b(?:(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{_MONTH})(?:,?\s+(?P<year>1[0-9]{{3}}|20[0-9]{{2}}))?"
    rf"|(?P<month2>{_MONTH})\s+(?:(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+)?(?P<year2>1[0-9]{{3}}|20[0-9]{{2}})"
    r"|(?P<year3>1[0-9]{3}|20[0-9]{2}))\b",
    re.IGNORECASE,
)
_ENDS = re.compile(
    r"\b(?:end|ends|ended|finish|finishes|finished|close|closes|closed|last|until|expire|expires|due)\b", re.I
)
_STARTS = re.compile(
    r"\b(?:start|starts|started|begin|begins|began|open|opens|opened|first|from|commence)\b", re.I
)
# 'There is no car park at the clinic', 'none of the plots', 'nothing is charged': 'no' before a word, not
# 'No. 5' or a reply's 'No,'
_NEGATION = re.compile(
    r"\b(?:not|never|no\s+longer|cannot|neither|nor|none|nothing|nobody|no(?=\s+[a-z]))\b|n['\u2019]t\b",
    re.IGNORECASE,
)
_NEGATED_FORM = ("un", "non", "in", "dis")
_CONDITION = re.compile(r"\b(?:if|unless|only|except|provided|subject\s+to)\b", re.IGNORECASE)
_HYPHENED_NEGATION = re.compile(
    r"\b(un|non|in|dis)-(?=[a-z])", re.IGNORECASE
)  # 'non-refundable' is 'nonrefundable'
_POINTS_BACK = re.compile(
    r"\b(?:it|that|this|they|them|these|those|he|she|him|her|its|their)\b", re.IGNORECASE
)
_ASK_WORDS = frozenset("is was are were did does do has have had that it this they those these ever".split())


@dataclass(frozen=True)
class _Day:
    """A date as far as it was written: a year alone spans the year, a month without a day the month."""

    first: date
    last: date
    shown: str


# a check that names its subject, for a first question too: 'Was the bridge finished before 1900?', 'Is the
# deposit more than 100 pounds?', 'Did more than 20 members attend?' (the last 'before'/'in' whose rest is a date)
_SUBJECT_DATE = re.compile(
    rf"^{_OPENING}{_ASKING}\s+(?P<subject>.+)\s+"
    r"(?P<way>before|after|earlier\s+than|later\s+than|in|during)\s+(?P<target>.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_SUBJECT_FIGURE = re.compile(
    rf"^{_OPENING}(?:is|was|are|were)\s+(?P<subject>.+?)\s+(?:any\s+|much\s+)?"
    rf"(?P<way>{'|'.join(_MORE)})\s+than\s+(?P<target>.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_COUNT_FIGURE = re.compile(
    rf"^{_OPENING}{_ASKING}\s+(?:there\s+)?"
    rf"(?P<way>{'|'.join(_MORE)})\s+(?:than\s+)?(?P<target>\d[\d,.]*)\s+(?P<rest>\S.*?)\s*[?.!]*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Settled:
    """The lead line saying yes or no, and the quote that settles it (which the answer must show)."""

    line: str
    quote: str
    given: str = (
        ""  # the date or figure the quote gives, which the line compares ('8 July 2023', '212 members')
    )


def verdict(
    asked: str, core: str, quotes: list[str], last_question: str = "", last_quotes: list[str] = ()
) -> str | None:
    """The lead line of `settled`, or None."""
    found = settled(asked, core, quotes, last_question, last_quotes)
    return found.line if found is not None else None


def settled(
    asked: str,
    core: str,
    quotes: list[str],
    last_question: str = "",
    last_quotes: list[str] = (),
    follow_up: bool = True,
    weak: bool = False,
) -> Settled | None:
    """The lead line saying yes or no to a yes/no question where the quotes settle it, with the quote that
    does; None when it is no such question or they do not. `asked`: the question as typed; `core`: the
    question it stands for, which `quotes` (the answer's) answer; `last_question`, `last_quotes`: the
    question 'that' and 'it' point back to and the last answer's quotes, where the figure or date compared
    is (the answer's quotes after them). A first question (`follow_up` False) has no 'that' to check: only
    a check that names its subject ('Was the bridge finished before 1900?') or a statement is read. `weak`:
    the answer found only the closest passages, which settle only a date or figure check whose sentence
    holds every other word of the question (`_held`)."""
    typed = asked.strip()
    if not _YES_NO.match(typed):
        return None
    if CHECKS_LAST_ANSWER.match(typed):
        if not follow_up:
            return None  # 'is that before 2022?' with nothing before it
        figure = _FIGURE_CHECK.match(typed)
        if figure is not None:
            given = [*last_quotes, *quotes]
            answering = len(last_quotes) or 1  # 'that' is the last answer's figure, in any of its quotes
            return (
                _affirmed(
                    _figure_verdict(figure, last_question or core, given, answering), last_question or core
                )
                if given
                else None
            )
        dated = _DATE_CHECK.match(typed)
        if dated is not None and _target_day(dated.group("target"), None) is not None:
            first = (list(last_quotes) or quotes)[:1]
            return (
                _affirmed(_date_verdict(dated, last_question or core, first[0]), last_question or core)
                if first
                else None
            )
    elif quotes:
        named = _SUBJECT_FIGURE.match(core.strip()) or _COUNT_FIGURE.match(core.strip())
        # a number written in digits: 'the old one' is no figure of one
        if (
            named is not None
            and re.search(r"\d", named.group("target"))
            and len(figures_in(named.group("target"))) == 1
        ):
            found = _figure_verdict(named, core, quotes[:1])
            if not _denied(found, core):  # 'Fees were not raised in 2024': the statement's no, below
                return _held(found, core, named.group("target"), weak)
        dated = _SUBJECT_DATE.match(core.strip())
        if dated is not None and _target_day(dated.group("target"), None) is not None:
            found = _date_verdict(dated, core, quotes[0])
            if not _denied(found, core):
                return _held(found, core, dated.group("target"), weak)
    if weak:
        return None
    return _said_verdict(core, quotes[0]) if quotes else None  # 'is it taken in Year 5?' names no date


# 'not finished until October 2024': it was finished, then
_UNTIL = re.compile(r"\b(?:until|till)\b", re.IGNORECASE)


def _denied(found: Settled | None, core: str) -> bool:
    """Whether the clause that gives the date or figure a line compares says the asked thing did not happen
    ('Fees were not raised in 2024' for 'Were fees raised in 2024?'): the date is right and the event is not,
    so the comparison settles nothing (the statement's own yes or no is read instead)."""
    if found is None or _NEGATION.search(core):
        return False
    part = next((c for c in clauses(found.quote) if found.given and found.given in c), found.quote)
    until = [m.start() for m in _UNTIL.finditer(part)]
    said = part[until[-1] :] if until else part  # a 'not' before 'until' says when it happened, not whether
    return bool(_NEGATION.search(_HYPHENED_NEGATION.sub(r"\1", said)))


def _affirmed(found: Settled | None, core: str) -> Settled | None:
    """`found`, unless its sentence denies the event (`_denied`): then no yes or no at all."""
    return None if _denied(found, core) else found


def _held(found: Settled | None, core: str, target: str, weak: bool) -> Settled | None:
    """`found`, unless the answer found only the closest passages (`weak`: the year or figure asked about,
    a threshold, is in none of them) and the sentence that settles it misses a word of what was asked
    ('Was the garden opened before 2020?' is settled by 'The garden was opened on 12 May 2016')."""
    if found is None or not weak:
        return found
    terms = [stem(t) for t in content_terms(core.lower()) if t not in _ASK_WORDS and t not in target.lower()]
    return found if terms and _shares(found.quote, terms) == len(terms) else None


def _figure_verdict(found: re.Match[str], core: str, quotes: list[str], answering: int = 1) -> Settled | None:
    """Yes or no to a figure check: the figure the first `answering` quotes give for `core` against the
    number asked or the thing's figure in any of `quotes`."""
    way = _MORE[found.group("way").lower()]
    target = found.group("target")
    against = figures_in(target)
    typed = len(against) == 1  # a number the question gives, not a thing's figure the quotes give
    if not typed:  # a thing: its figure in the quotes ('the excess': 'the 500 pound excess')
        thing = [stem(t) for t in content_terms(target.lower())]
        against = [f for quote in quotes for f in _clause_figures(quote, thing)][:1] if thing else []
    if not against:
        return None
    other = against[0]
    answered = _answered_figure(core, quotes[:answering], other)
    if answered is None:
        return None
    given, quote = answered
    if not typed and given.shown == other.shown:
        return None
    if given.unit and other.unit and given.measure != other.measure:
        return None
    holds = (given.value - other.value) * way > 0
    shown = (
        given.shown[:1].lower() + given.shown[1:] if given.shown[:1].isalpha() else given.shown
    )  # 'fourteen'
    if given.value == other.value:
        return Settled(
            f"From the documents: no, the same ({shown}).", _sentence_of(quote, given.shown), given.shown
        )
    line = f"From the documents: {'yes' if holds else 'no'} ({shown}, against {other.shown})."
    return Settled(line, _sentence_of(quote, given.shown), given.shown)


def _alike(a: str, b: str) -> bool:
    """Two stems of one word ('agr' of 'agreed', 'agre' of 'agree')."""
    return a == b or (min(len(a), len(b)) >= 3 and (a.startswith(b) or b.startswith(a)))


def _shares(clause: str, terms: list[str]) -> int:
    held = [stem(t) for t in content_terms(clause.lower())]
    return sum(any(_alike(term, h) for h in held) for term in terms)


def _clause_figures(text: str, terms: list[str]) -> list[Figure]:
    """The figures of the clauses of `text` that hold every one of `terms` (a word of the clause before or
    after the figure), the first clause first."""
    found = []
    for clause in clauses(text):
        if _shares(clause, terms) != len(terms):
            continue
        # the figure nearest the thing's words ('paid 5,800 pounds after deducting the 500 pound excess')
        at = [
            m.start()
            for m in re.finditer(r"[\w'-]+", clause)
            if any(_alike(stem(m.group(0).lower()), t) for t in terms)
        ]
        figures = [
            (min(abs(clause.find(f.shown) - a) for a in at) if at else 0, f) for f in figures_in(clause)
        ]
        found += [f for _, f in sorted(figures, key=lambda pair: pair[0])]
    return found


# Words that name a figure as a measure of whatever the sentence is about ('at a cost of £61,500', 'a total
# of 40'), not a thing of its own: a figure after one of these belongs to the asked thing as much as any.
_MEASURE_NOUNS = frozenset(
    """cost costs price prices total totals sum sums amount amounts value values fee fees charge charges bill
    budget figure figures rate rates spending expense expenses outlay average maximum minimum tune estimate
    increase decrease rise fall drop loss gain profit size length weight height depth width area volume
    number count level""".split()
)


_OWNER_BEFORE = re.compile(
    r"([A-Za-z][\w'\u2019-]*)\s+(?:of|at)\s+(?:(?:about|around|some|nearly|almost|over|just)\s+)?$"
)


def _figure_of_another(clause: str, figure: Figure, terms: list[str]) -> bool:
    """Whether the clause binds the figure to a thing the question does not name, by 'X of' right before it
    ('followed by staff wages of £52,000' for 'Was the dredging more than £50,000?'): the figure is X's,
    whatever else the sentence names. A measure word as X ('a cost of', 'a total of') binds it to nothing
    else, and a question without words of its own (terms) keeps every figure."""
    if not terms:
        return False
    at = clause.find(figure.shown)
    owner = _OWNER_BEFORE.search(clause[:at]) if at >= 0 else None
    if owner is None:
        return False
    word = owner.group(1).lower()
    if word in _MEASURE_NOUNS or not content_terms(word):
        return False
    return not any(_alike(stem(word), term) for term in terms)


def _answered_figure(core: str, quotes: list[str], other: Figure) -> tuple[Figure, str] | None:
    """The figure the quotes give for what was asked, with its quote: of their clauses with a figure in
    `other`'s unit (any when `other` has none), the one sharing most words with the question, the first of
    equals (the first quote's first). 'How much did it cost?' is answered by 'It cost £48,500' in the second
    quote when the first is 'keep the adult fee at £180'."""
    terms = [stem(t) for t in content_terms(core.lower()) if t not in _ASK_WORDS]
    best: tuple[int, Figure, str] | None = None
    for quote in quotes:
        for clause in clauses(quote):
            figures = [
                f for f in figures_in(clause) if not other.unit or not f.unit or f.measure == other.measure
            ]
            figures = [f for f in figures if f.shown != other.shown] or figures
            figures = [f for f in figures if not _figure_of_another(clause, f, terms)]
            if figures and (best is None or _shares(clause, terms) > best[0]):
                best = (_shares(clause, terms), figures[0], quote)
    return (best[1], best[2]) if best is not None else None


def _day_of(found: re.Match[str], year: int | None = None) -> _Day | None:
    month_word = (found.group("month") or found.group("month2") or "").lower().rstrip(".")
    day = found.group("day") or found.group("day2")
    written = found.group("year") or found.group("year2") or found.group("year3")
    year_value = int(written) if written else year
    if year_value is None:
        return None
    shown = " ".join(found.group(0).split())
    if not month_word:
        return _Day(date(year_value, 1, 1), date(year_value, 12, 31), shown)
    month = MONTH_NUMBERS[month_word[:3]]
    if day:
        try:
            one = date(year_value, month, int(day))
        except ValueError:
            return None
        return _Day(one, one, shown)
    end = date(year_value + (month == 12), month % 12 + 1, 1)
    return _Day(date(year_value, month, 1), date.fromordinal(end.toordinal() - 1), shown)


_MONTH_ALONE = re.compile(rf"^(?:the\s+end\s+of\s+|the\s+start\s+of\s+)?(?P<month>{_MONTH})$", re.IGNORECASE)


def _target_day(target: str, year: int | None) -> _Day | None:
    """The date a check asks about, when the whole of `target` is one ('2022', '10 January', 'March 2025',
    'June'); a day or month without a year is of `year` (the answered date's), and with none is no date."""
    text = target.strip(" ?.!")
    month = _MONTH_ALONE.match(text)
    if month is not None:
        if year is None:
            return _Day(date.min, date.min, text)  # a date, of a year still to come
        first = MONTH_NUMBERS[month.group("month").lower()[:3]]
        end = date(year + (first == 12), first % 12 + 1, 1)
        return _Day(date(year, first, 1), date.fromordinal(end.toordinal() - 1), text)
    dates = list(_DATE.finditer(text))
    if len(dates) != 1 or dates[0].group(0).strip() != text:
        return None
    if year is None:
        return _Day(date.min, date.min, text)
    return _day_of(dates[0], year)


def _date_verdict(found: re.Match[str], core: str, quote: str) -> Settled | None:
    given = _answered_date(core, quote)
    if given is None:
        return None
    target = _target_day(found.group("target"), given.first.year)
    if target is None:
        return None
    way = found.group("way").lower().split()[0]
    if way in ("before", "earlier"):
        holds, settled = given.last < target.first, given.last < target.first or given.first >= target.first
        phrase = "before"
    elif way in ("after", "later"):
        holds, settled = given.first > target.last, given.first > target.last or given.last <= target.last
        phrase = "after"
    else:
        holds = target.first <= given.first and given.last <= target.last
        settled = holds or given.last < target.first or given.first > target.last
        phrase = "in"
    if not settled:
        return None
    line = f"From the documents: {'yes' if holds else 'no'}, {given.shown} is {'' if holds else 'not '}{phrase} {target.shown}."
    return Settled(line, _sentence_of(quote, given.shown), given.shown)


def _answered_date(core: str, quote: str) -> _Day | None:
    """The date the quote answers the question with: of the clause sharing most of its words, its one date,
    or of a 'from X to Y' span the end when the question asks when something ends (the start when it asks
    when something starts); None when that leaves no one date."""
    terms = [stem(t) for t in content_terms(core.lower()) if t not in _ASK_WORDS]
    # a clause of its own: '6 January 2025 to 4 April 2025, with half term from 17 February to 21 February'
    sentences = [
        s
        for s in re.split(r"(?<=[.;!?])\s+|,\s+(?=(?:with|and|but|while|whereas|except)\b)", quote)
        if s.strip()
    ]
    best = max(sentences, key=lambda s: _shares(s, terms), default="")
    found = [m for m in _DATE.finditer(best)]
    if not found:
        return None
    years = [int(y) for m in found for y in re.findall(r"\b(?:1[0-9]{3}|20[0-9]{2})\b", m.group(0))]
    year = years[-1] if years else None
    if len(found) > 1:
        if _ENDS.search(core) and not _STARTS.search(core):
            found = found[-1:]
        elif _STARTS.search(core) and not _ENDS.search(core):
            found = found[:1]
        elif not _SPAN_JOIN.fullmatch(best[found[0].end() : found[-1].start()]):
            # dates of two things ('The fair on 8 July 2023 raised 1,120 pounds, against 860 pounds in
            # 2022'): the one nearest the words of what was asked
            found = [min(found, key=lambda m: _distance(best, m, terms))]
        else:  # 'When is the trip?' of '9 June to 11 June 2025': the whole span, which may still settle it
            first, last = _day_of(found[0], year), _day_of(found[-1], year)
            if first is None or last is None:
                return None
            return _Day(first.first, last.last, best[found[0].start() : found[-1].end()])
    return _day_of(found[0], year)


_SPAN_JOIN = re.compile(
    r"\s*(?:to|until|till|and|-|\u2013|\u2014)\s*", re.IGNORECASE
)  # 'from X to Y', 'between X and Y'


def _distance(text: str, found: re.Match[str], terms: list[str]) -> int:
    """How far the date is from the nearest word of `terms` in `text` (far when none is there)."""
    at = [
        m.start()
        for m in re.finditer(r"[\w'-]+", text)
        if any(_alike(stem(m.group(0).lower()), t) for t in terms)
    ]
    return min((abs(found.start() - a) for a in at), default=len(text))


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _sentence_of(quote: str, part: str) -> str:
    """The sentence of `quote` that holds `part` (the date or figure a line gives): what settles it, which
    the answer must show; the whole quote when no one sentence holds it."""
    return next((sentence for sentence in _SENTENCE.split(quote) if part in sentence), quote)


# words that say the opposite of a word asked about without a 'not': 'Is the library open on Sundays?' over
# 'open six days a week and closed on Sundays'
_OPPOSITES = (
    ("open", "closed shut"),
    ("allow", "banned forbidden prohibited barred"),
    ("permit", "banned forbidden prohibited barred"),
    ("include", "excluded exclude"),
    ("safe", "dangerous"),
    ("free", "charged paid cost costs price fare fares"),
    ("accept", "refused rejected declined"),
    ("approv", "rejected refused"),
)


def _says_the_opposite(sentence: str, terms: list[str]) -> bool:
    """Whether the sentence holds a word opposite to one asked about, either way round: the question's 'open'
    against its 'closed', 'Do juniors pay?' against 'Juniors row free'; read as neither yes nor no (which
    day is open and which closed, words do not tell)."""
    held = {t.lower() for t in re.findall(r"[a-z]+", sentence.lower())}
    for word, opposite, opposite_stems in _OPPOSITE_WORDS:
        if any(term.startswith(word) or word.startswith(term) for term in terms) and held & opposite:
            return True
        asked_opposite = any(_alike(term, o) for term in terms for o in opposite_stems)
        if asked_opposite and any(h.startswith(word) for h in held):
            return True
    return False


# each word, its opposites, and their stems (asked words are stems), stemmed once
_OPPOSITE_WORDS = tuple(
    (word, frozenset(opposite.split()), tuple(stem(o) for o in opposite.split())) for word, opposite in _OPPOSITES
)


# a clause that only proposes, plans or considers the asked act: 'The committee proposed selling the Curlew'
# does not say it was sold (the members voted to repair it instead)
_UNREALISED = re.compile(
    r"\b(?:propos|plan|consider|suggest|intend|hop|want|wish|threaten|recommend|expect|aim|offer|urg|"
    r"debat|discuss)(?:e|es|ed|ing|s|ned|ning)?\b|\b(?:was|were|is|are)\s+(?:due|scheduled|set|going)\s+to\b",
    re.IGNORECASE,
)


def _said_verdict(core: str, quote: str) -> Settled | None:
    """Yes or no to 'did Colin Ashworth agree?' / 'was the loft heated?': every word of the question in one
    clause of the quote's sentences, negated there or not."""
    if _POINTS_BACK.search(core):  # 'Is that in the summer term?': what 'that' is, the quote does not say
        return None
    terms = [stem(t) for t in content_terms(core.lower()) if t not in _ASK_WORDS]
    if len(terms) < 2:
        return None
    for said in _SENTENCE.split(quote):
        sentence = _HYPHENED_NEGATION.sub(r"\1", said)
        if _says_the_opposite(sentence, terms):  # 'open six days a week and closed on Sundays'
            return None
        for clause in re.split(
            r"[;:]|,\s+(?:who|which|but|while|whereas)\b|\bbut\b|\bwhereas\b|\band\b", sentence
        ):
            held = [stem(t) for t in content_terms(clause.lower())]
            negated_form = False
            for term in terms:
                if any(_alike(term, h) for h in held):
                    continue
                if any(h.startswith(p) and _alike(term, h[len(p) :]) for h in held for p in _NEGATED_FORM):
                    negated_form = True
                    continue
                break
            else:
                if _CONDITION.search(
                    clause
                ):  # 'refundable if you cancel 30 days before': not a plain yes or no
                    return None
                if _UNREALISED.search(clause) and not _UNREALISED.search(core):
                    return None  # 'proposed selling the Curlew': a plan, not what happened
                negated = negated_form != bool(_NEGATION.search(clause))
                return Settled(
                    f"From the documents: {'no' if negated else 'yes'}, as the first passage says:", said
                )
    return None


# How a yes/no question may open for `unsaid`: the verbs of `_ASKING` and the modals ('Can I pay by card?')
_ASKED_PROPERTY = re.compile(
    rf"^\W*{_OPENING}(?P<verb>{_ASKING}|can|could|will|would|should|may|might|must)\s+(?P<rest>.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
# verbs that say little of their own ('Can I bring my dog?' is answered by 'Dogs are allowed'; 'Does the ferry
# take cars?' by 'The ferry carries twenty cars')
_LIGHT_VERBS = frozenset(stem(w) for w in "bring take have get go use make put keep let give come".split())
# what a quote must hold in so many words when the question asks it: a number or year, a weekday, a month
_EXACT = re.compile(
    rf"^(?:\d[\d,.]*|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|{MONTH_WORD})$", re.IGNORECASE
)
_SUBJECT_PRONOUN = {"i": "you", "we": "you", "you": "you", "they": "they", "he": "he", "she": "she", "there": "there"}
_YOURS = {"me": "you", "my": "your", "us": "you", "our": "your", "mine": "yours", "ours": "yours"}
_DETERMINER = re.compile(r"^(?:the|a|an|this|these|those|my|our|your|their|its|his|her|any|every|each|all|some)$", re.I)
# words that begin what is said of the subject, not the subject itself ('the museum | open on Mondays')
_PREDICATE = re.compile(
    r"^(?:on|in|at|by|for|with|to|from|of|into|over|under|before|after|during|still|ever|really|also|"
    r"free|open|closed|shut|available|allowed|permitted|able|safe|accessible|suitable|included|required|needed|"
    r"possible|necessary|refundable|[a-z]+(?:ed|en|ing))$",
    re.IGNORECASE,
)
# 'Are pets allowed?', 'Is the grey model included?': whether the subject is let in or counted in, asked of it
_PERMISSION = re.compile(
    r"\b(?:allowed|permitted|possible|ok|okay|acceptable|included|covered|affected|eligible)\b", re.IGNORECASE
)
_MODALS = frozenset("can could will would should may might must".split())
# words a question adds that no answer need repeat ('Can I get a replacement instead?')
_FILLER = frozenset(
    "instead also still ever really too now already even just actually please anything anyone anybody someone".split()
)
# 'Does the report mention dredging?', 'Does the agreement say anything about pets?': the document and its
# saying are not what is asked
_SAYING = frozenset(
    stem(w)
    for w in """mention mentions say says said discuss discusses talk talks describe describes report document
    file paper agreement contract notice manual handbook minutes page article book letter policy leaflet
    guide""".split()
)
# a question asked within a yes/no one ('Can you please tell me who chaired the meeting?', 'Do you know when
# the ferry leaves?', 'Could you explain how it works?'): its answer is no yes or no
_ASKS_WITHIN = re.compile(r"\b(?:who|whom|whose|what|when|where|why|how|which|whether)\b", re.IGNORECASE)
NOT_SAID = "The documents do not say whether {what}; the nearest passages are:"
NOT_SAID_LEAD = re.compile(r"The documents do not say whether [^\n]{1,400}?; the nearest passages are:")


def unsaid(core: str, quotes: list[str], dated: dict[str, int] | None = None) -> str | None:
    """The lead line for a yes/no question whose asked property no quote holds ('Is the ferry free?' over 'The
    ferry leaves at seven.'): the documents do not say whether it is so, the quotes being only the nearest
    passages. A quote holds it when one of its sentences holds every word the question asks with (a word of the
    same stem, a negated form, or its opposite: 'closed' for 'open'), or all but one when it asks with three or
    more, where a number, a year, a weekday or a month is never the one missed. Verbs that say little ('take',
    'bring') are not asked with; 'Is smoking allowed in the flat?' asks with its subject ('smoking'), what is
    allowed, and not with the place ('They will not smoke inside the property'). `dated`: the year a quote's document is of, by quote, for its 'this year'.
    None for any other question, or when a quote holds it."""
    asked = _ASKED_PROPERTY.match(core.strip())
    if asked is None or _POINTS_BACK.search(asked.group("rest")) or not quotes:
        return None
    if _ASKS_WITHIN.search(asked.group("rest")):
        return None  # 'can you tell me who chaired the meeting?', 'do you know when it leaves?': no yes or no
    rest = asked.group("rest").split()
    known = frozenset(stem(t) for quote in quotes for t in content_terms(quote.lower()))
    count = _subject_length(rest, asked.group("verb"), known)
    # 'Are pets allowed?', 'Is smoking permitted in the flat?': what is allowed is asked, wherever
    asked_of = " ".join(rest[:count]) if _PERMISSION.search(" ".join(rest[count:])) else core
    words = [t for t in content_terms(asked_of.lower()) if t not in _ASK_WORDS and t not in _FILLER]
    words = [t for t in words if stem(t) not in _LIGHT_VERBS | _SAYING and t not in _MODALS]
    words += [t for t in content_terms(core.lower()) if _EXACT.match(t) and t not in words]
    if not words:
        return None
    exact = {stem(t) for t in words if _EXACT.match(t)}
    terms = [stem(t) for t in words]
    least = len(terms) if len(terms) <= 2 else len(terms) - 1
    for quote in quotes:
        for sentence in _SENTENCE.split(_this_year(quote, (dated or {}).get(quote))):
            held = [t for t in terms if _holds_term(sentence, t)]
            if len(held) >= least and exact <= set(held):
                return None
    return NOT_SAID.format(what=_whether(asked.group("verb"), rest, count))


_THIS_YEAR = re.compile(r"\b(?:this|last)\s+year\b", re.IGNORECASE)


def _this_year(sentence: str, year: int | None) -> str:
    """`sentence` with its 'this year' and 'last year' as the years they are in a document of `year`."""
    if year is None:
        return sentence
    return _THIS_YEAR.sub(lambda m: str(year - (m.group(0).lower().startswith("last"))), sentence)


def _holds_term(sentence: str, term: str) -> bool:
    """Whether the sentence holds the asked word: its stem, a negated form ('unheated'), or its opposite."""
    plain = _HYPHENED_NEGATION.sub(r"\1", sentence)
    held = [stem(t) for t in content_terms(plain.lower())]
    if any(_alike(term, h) or (h[:3] in ("non", "dis") and _alike(term, h[3:])) for h in held):
        return True
    if any(h[:2] in ("un", "in") and len(h) > 4 and _alike(term, h[2:]) for h in held):
        return True
    return _says_the_opposite(plain, [term])


def _subject_length(words: list[str], verb: str, known: frozenset[str] = frozenset()) -> int:
    """How many of a yes/no question's words after its `verb` are its subject ('the ferry' of 'the ferry take
    cars', 'smoking' of 'smoking allowed in the flat', 'I' of 'I pay by card'): a pronoun, or a determiner and
    the words up to what is said of it: a preposition, a participle, a word such as 'free' or 'open', another
    determiner ('Jory Pascoe | the last coxswain'), or after 'does', 'can' and the like the verb, read as the
    first word after the subject's first that is not a name nor a stem of `known` (the quotes' words: 'the
    night ferry | take cars' over 'The ferry leaves at seven')."""
    if words[0].lower() in _SUBJECT_PRONOUN:
        return 1
    count = 1 if _DETERMINER.match(words[0]) else 0
    count += 1  # the subject's first word, whatever it is
    be = verb.lower() in ("is", "was", "are", "were", "has", "have", "had")
    while count < len(words) - 1 and not _PREDICATE.match(words[count].strip(",")):
        if _DETERMINER.match(words[count]):
            break
        if not be and words[count][:1].islower() and stem(words[count].lower()) not in known:
            break  # 'the ferry | take cars': a word the quotes do not hold is what is said of the subject
        count += 1
    return count


def _whether(verb: str, words: list[str], count: int) -> str:
    """What a yes/no question asks, said as a statement ('Is the ferry free' -> 'the ferry is free', 'Can I pay
    by card' -> 'you can pay by card'): the subject (its first `count` words), then the verb, then the rest;
    the asker's 'I', 'my' as 'you', 'your'."""
    subject = [_SUBJECT_PRONOUN.get(w.lower(), w) if i == 0 else w for i, w in enumerate(words[:count])]
    said = [_YOURS.get(w.lower(), w) for w in words[count:]]
    verb = verb.lower()
    if verb in ("do", "does", "did"):
        # the verb is the first word past an adverb ('the station still operates')
        at = next((i for i, w in enumerate(said) if w.lower() not in _FILLER), None)
        if at is not None and verb == "does":
            said[at] = _third_person(said[at])
        elif at is not None and verb == "did":
            said[at] = _past(said[at])
    else:
        said.insert(0, _agreeing(verb, subject[0].lower()))
    return " ".join([*subject, *said])


def _agreeing(verb: str, subject: str) -> str:
    """The verb as it goes with the subject said back: 'am I' is 'you are', 'was I' is 'you were'."""
    if subject == "you":
        return {"am": "are", "is": "are", "was": "were", "has": "have"}.get(verb, verb)
    return verb


_PAST = {base: past for past, base in reversed(IRREGULAR.items())}  # 'take' -> 'took', not 'taken'


def _past(verb: str) -> str:
    """'serve' -> 'served', 'take' -> 'took', 'carry' -> 'carried', 'stop' -> 'stopped' (short verbs only)."""
    lower = verb.lower()
    if lower in _PAST:
        return _PAST[lower]
    if lower.endswith("e"):
        return verb + "d"
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ied"
    if re.fullmatch(r"[^aeiou]*[aeiou][bdgmnpt]", lower):
        return verb + verb[-1] + "ed"
    return verb + "ed"


def _third_person(verb: str) -> str:
    """'take' -> 'takes', 'cross' -> 'crosses', 'carry' -> 'carries', 'have' -> 'has'."""
    lower = verb.lower()
    if lower == "have":
        return "has"
    if re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    return verb + "s"
