"""New material for a follow-up that names nothing of its own ("why?", "and then?", "tell me more",
"for example?"): chosen around the passage the last answer quoted, never that quote again.

Ranked as an ordinary question, such a follow-up has no words of its own, so its carried context (the
last question) finds the passage the last answer quoted first and the answer repeats it. Here the last
answer's first quote is the anchor, found again among the context's sentences, and what is quoted
instead depends on what was asked (`followup.Onward`):
- NEXT: the sentences after the anchor in its document, in reading order;
- REASON: sentences that give a cause or a purpose, in the anchor's section (without headings, near it);
- EXAMPLE: sentences that give an example ("for example", "such as"), in the anchor's section;
- MORE: the best sentences of the anchor's document not quoted yet, its section's first, in reading order.
Every sentence any of the last answers quoted is left out, but for one: when no new REASON or EXAMPLE is
near, one the last answer quoted already is quoted alone, from its "because" or "for example" on. A REASON, EXAMPLE or NEXT
follow-up with nothing of its kind near the anchor gets MORE's sentences and says they are only the
closest passages (`OnwardPick.settled` is False). Without an anchor in the context (the tree changed, or the answer was
an LLM's prose) it returns None and the follow-up is ranked as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, is_dataclass, replace
from typing import Protocol, TypeVar

from ..ingest.sentences import STOPWORDS, Sentence, sentence_key, sentences_of, stem
from ..types import ContextNode, Turn
from .followup import PREVIOUS_ANSWERS, Onward, people_in, previous_answers, quotes_in
from .retrieve import ELISION

NEARBY_CHARS = 1200  # a sentence this many characters from the anchor counts half as near
PROXIMITY_WEIGHT = 0.3  # how much nearness to the anchor adds to a sentence's score
FLOOR = 0.5  # a pick scoring under half the best one is left out
ABOUT_WEIGHT = 1.0  # a sentence naming whom the follow-up's pronoun means comes before any that does not
# Reasons the answer kinds' "why" pattern leaves out: blame and consequence ("The inquiry blamed the
# captain", "the fog led to the loss").
MORE_REASONS = re.compile(
    r"\b(?:blamed?|blames|fault|responsible|led to|leads to|result(?:ed)? (?:of|from|in)|the cause"
    r"|so\s+that)\b",
    re.IGNORECASE,
)
EXAMPLES = re.compile(
    r"\b(?:for example|for instance|such as|e\.\s?g\.|including|in particular|among them|like the|like a)\b",
    re.IGNORECASE,
)


class Quotable(Protocol):
    """A context sentence the answer may quote (answer.py's candidates)."""

    node: ContextNode
    sentence: Sentence
    text: str
    score: float

    @property
    def key(self) -> str: ...


Q = TypeVar("Q", bound=Quotable)


@dataclass
class OnwardPick:
    picked: list  # the sentences to quote, in the order they are shown
    settled: bool  # they are what was asked for (False: only the closest passages)
    # ('end', document) when 'and then?' found nothing after a passage that ends its document, ('start',
    # document) when 'before that?' found nothing before one that opens it; None otherwise
    edge: tuple[str, str] | None = None


def quoted_keys(history: list[Turn], answers: int = PREVIOUS_ANSWERS) -> list[list[str]]:
    """The sentence keys of each of the last `answers` answers' quotes, the latest answer first, each
    answer's in its order (a quote joined from two sentences gives both)."""
    said = previous_answers(history, answers)
    return [[s.key for quote in quotes_in(answer) for s in sentences_of(quote)] for answer in reversed(said)]


def pick_onward(
    ask: Onward,
    candidates: Sequence[Q],
    history: list[Turn],
    quotes: int,
    holds_reason: Callable[[str], bool],
    asked: set[str] = frozenset(),
    about: set[str] = frozenset(),
) -> OnwardPick | None:
    """The sentences that answer `ask` about the last answer's passage; None without an anchor. `asked`:
    the stemmed terms of what the follow-up asks about (the last question's for a bare 'why?'); `about`:
    the words of the person its pronoun means ('what else did he do?' after 'What did Haldor find?'),
    whose sentences come first among MORE's."""
    keys = quoted_keys(history)
    if not keys:
        return None
    anchors = _anchors(keys[0], candidates)
    if not anchors:
        return None
    said = {key for answer in keys for key in answer} | {anchor.key for anchor in anchors}
    pool = [c for c in candidates if c.key not in said and sentence_key(c.text) not in said]
    if not pool:
        return None
    value = {id(c): c.score + _nearness(c, anchors) + (ABOUT_WEIGHT if _holds(c.text, about) else 0.0) for c in pool}
    edge = None
    if ask is Onward.NEXT:
        last = _read_up_to(anchors)
        after = _after(pool, last)
        if not after and last is anchors[0]:
            after = _after(_quoted_lower(history, candidates), last)
        if after:
            return OnwardPick(after[:quotes], True)
        edge = _edge(last, candidates, "end")
    if ask is Onward.BEFORE:
        first = _read_back_from(anchors)
        before = _before(pool, first)
        if before:
            return OnwardPick(before[-quotes:], True)
        edge = _edge(first, candidates, "start")
    if ask is Onward.OTHERS:
        # who the last two answers quoted, and whom the question leaned on ('Who was Rowan Pike?')
        named = _named_in([c.text for c in candidates if c.key in said]) | set(asked)
        others = [c for c in pool if _document(c) == _document(anchors[0]) and _names_someone_new(c.text, named)]
        if others:  # the best of its document by the question, wherever they stand in it
            best = sorted(others, key=lambda c: -value[id(c)])[:quotes]
            return OnwardPick(sorted(best, key=_place_key), True)
    wanted = _wanted(ask, holds_reason)
    if wanted is not None:
        near = [c for c in pool if wanted(c.text) and _beside(c, anchors[0])]
        own = _from_marker(anchors[0], _REASON_WORDS, asked) if ask is Onward.REASON else None
        if own is not None and not any(_holds_asked(c.text, asked) for c in near):
            # 'What did Martin Cole say?' -> '... said the pipe had frozen because the loft was unheated.' ->
            # 'why?': the reason the last answer gave, not another claim's ('The claim was refused because ...')
            return OnwardPick([own], True)
        if near:
            return OnwardPick(_best(near, value, quotes, anchors[0]), True)
        # the last answer gave it already ('It was replaced because ...' after 'In 1834 the wheel was
        # replaced.', or in its first quote itself): that sentence alone answers, from its reason on
        marker = _REASON_WORDS if ask is Onward.REASON else EXAMPLES
        asked_of = asked if ask is Onward.REASON else frozenset()  # an example may sit in any clause
        near_anchor = [a for a in anchors if a is anchors[0] or _beside(a, anchors[0])]
        given = [cut for a in near_anchor if (cut := _from_marker(a, marker, asked_of)) is not None]
        if given:
            return OnwardPick(given[-1:], True)
    more = [c for c in pool if _same_document(c, anchors)] or pool
    # 'what else did he do?': only what tells of him; where no sentence not quoted yet does, the
    # closest passages, said to be only that
    told_of = [c for c in more if _holds(c.text, about)] if about else more
    picked = sorted(_best(told_of or more, value, quotes, anchors[0]), key=_place_key)
    return OnwardPick(picked, ask is Onward.MORE and bool(told_of), edge)


def _quoted_lower(history: list[Turn], candidates: Sequence[Q]) -> list[Q]:
    """The candidates the last answer quoted below its first quote, that quote's own sentences apart.

    Why: an answer ranked by its question may quote, lower down, the very sentence that follows its first
    quote ('Brenna married Haldor the next summer.' third, after 'Haldor found that the papers were forged.
    Garrick was driven out ...'); 'and then?' is still answered by it. Left out as said already, 'and then?'
    got the closest passages from before the quote, or the next sentence, as the ranking's last place
    happened to fall above or below its cut-off."""
    said = previous_answers(history, 1)
    quotes = quotes_in(said[-1]) if said else []
    if len(quotes) < 2:
        return []
    first = {s.key for s in sentences_of(quotes[0])}
    lower = {s.key for quote in quotes[1:] for s in sentences_of(quote)} - first
    return [c for c in candidates if c.key in lower]


def _edge(anchor: Quotable, candidates: Sequence[Quotable], side: str) -> tuple[str, str] | None:
    """(side, document) when the anchor is its document's last quotable sentence (side 'end') or its
    first ('start'): a leaf the engine marked as ending (opening) the document, holding no quotable
    sentence and nothing trimmed away after (before) the anchor. None otherwise: then the sentences
    after it were only quoted already, or are not in the context."""
    node = anchor.node
    if node.layer != 0 or node.document is None:
        return None
    at = anchor.sentence.start
    if side == "end":
        marked, rest = node.ends_document, node.text[anchor.sentence.end :]
        beyond = any(c.node is node and c.sentence.start > at for c in candidates)
    else:
        marked, rest = node.opens_document, node.text[:at]
        beyond = any(c.node is node and c.sentence.start < at for c in candidates)
    if not marked or beyond or ELISION in rest:
        return None
    return side, node.document


def _anchors(quoted: list[str], candidates: Sequence[Q]) -> list[Q]:
    """The context sentences the last answer quoted (`quoted`: their keys, in its order). A sentence
    both a leaf and a summary hold is its leaf's, which has a place in the document; a quote cut to its
    reason or example ('…because the insurers refused') is the whole sentence it was cut from."""
    by_key: dict[str, Q] = {}
    for candidate in candidates:
        held = by_key.get(candidate.key)
        if held is None or (_place(held) is None and _place(candidate) is not None):
            by_key[candidate.key] = candidate
    found = [by_key.get(key) or _cut_from(key, by_key) for key in quoted]
    unique = {id(anchor): anchor for anchor in found if anchor is not None}
    return list(unique.values())


def _cut_from(key: str, by_key: dict[str, Q]) -> Q | None:
    """The sentence a quote cut to its last part ends, its leaf's first; None for no such sentence."""
    if not key:
        return None
    whole = [c for full, c in by_key.items() if full.endswith(" " + key)]
    return min(whole, key=lambda c: _place(c) is None, default=None)


def _read_up_to(anchors: Sequence[Q]) -> Q:
    """Where the last answer left off reading: its last quote when its quotes follow each other in one
    document's reading order (an answer to 'and then?' or 'tell me more'), else its first and best one
    (an answer ranked by the question quotes its best sentence first, whatever comes after)."""
    places = [_place(anchor) for anchor in anchors]
    first = anchors[0]
    run = [
        a for a, place in zip(anchors, places, strict=True) if _document(a) == _document(first) and place is not None
    ]
    ordered = [_place(a) for a in run]
    if len(run) == len(anchors) and ordered == sorted(ordered):
        return run[-1]
    return first


SUBJECT_PRONOUNS = frozenset(("he", "she", "they"))


def _holds(text: str, about: set[str]) -> bool:
    """Whether the sentence tells of the person `about` names: by their name, by its last word standing
    alone ('Pike proposed', not 'Clara Pike'), or by the subject pronoun the follow-up used ('In 1902 he
    left'; not 'lent him', which may be anyone)."""
    for name in about:
        if name in SUBJECT_PRONOUNS:
            if re.search(rf"\b{name}\b", text, re.IGNORECASE):
                return True
            continue
        if re.search(rf"\b{re.escape(name)}\b", text):
            return True
        last = name.split()[-1]
        for found in re.finditer(rf"\b{re.escape(last)}\b", text):
            before = text[: found.start()].split()
            if not before or not before[-1][:1].isupper() or before[-1].lower() in STOPWORDS:
                return True
    return False


def _read_back_from(anchors: Sequence[Q]) -> Q:
    """Where a 'what happened before that?' reads back from: the last answer's first quote in its
    document's reading order when its quotes follow each other there (an answer to 'before that?' itself
    shows them so, and 'and before that?' goes on from the earliest), else its first and best one."""
    run = [a for a in anchors if _document(a) == _document(anchors[0]) and _place(a) is not None]
    ordered = [_place(a) for a in run]
    if len(run) == len(anchors) and ordered == sorted(ordered):
        return run[0]
    return anchors[0]


# Words that name a person without a capital ('the king's son', 'her step-sisters', 'the students').
PEOPLE_WORDS = frozenset(
    """man men woman women boy boys girl girls child children people person persons son sons daughter
    daughters father mother parents brother brothers sister sisters husband wife king queen prince
    princess stepmother step-mother stepsister stepsisters step-sisters step-sister maiden maidens friend
    friends student students teacher teachers worker workers captain keeper keepers engineer doctor
    priest soldier soldiers neighbour neighbours family uncle aunt grandfather grandmother""".split()
)
_WORD = re.compile(r"[A-Za-z][\w'\u2019-]*")


def _people_words(text: str) -> set[str]:
    """Who a sentence names, lower case: the words of the names that can be a person (`people_in`) and
    its people words ('the king's son', 'her sisters')."""
    plain = {re.sub(r"['\u2019]s$", "", word).lower() for word in _WORD.findall(text)}
    named = {word.lower() for name in people_in(text) for word in name.split() if word.lower() not in STOPWORDS}
    return named | (plain & PEOPLE_WORDS)


def _named_in(texts: Sequence[str]) -> set[str]:
    """Who the last answer's quotes named (`_people_words` of each)."""
    return set().union(*(_people_words(text) for text in texts))


def _names_someone_new(text: str, named: set[str]) -> bool:
    """Whether a sentence names a person the last answer did not."""
    return bool(_people_words(text) - named)


def _wanted(ask: Onward, holds_reason: Callable[[str], bool]) -> Callable[[str], bool] | None:
    """Whether a sentence gives what a REASON or EXAMPLE follow-up asks for (None for the others)."""
    if ask is Onward.REASON:
        return lambda text: holds_reason(text) or bool(MORE_REASONS.search(text))
    if ask is Onward.EXAMPLE:
        return lambda text: bool(EXAMPLES.search(text))
    return None


_REASON_WORDS = re.compile(
    r"\b(?:because|since|so that|in order to|due to|owing to|as a result|therefore|so as to|blamed?|led to)\b",
    re.IGNORECASE,
)


_CLAUSE_OPENERS = re.compile(r"\b(?:who|whom|whose|which|that|where|when|while|but)\b", re.IGNORECASE)


def _from_marker(candidate: Q, marker: re.Pattern[str], asked: set[str]) -> Q | None:
    """A quoted sentence from the words that give the reason or example on ('She was withdrawn in 1958
    because a new buoy ...' -> '…because a new buoy ...'): the answer to 'why?' when the sentence was
    quoted already; still the document's own words, cut where the ellipsis shows. None when it has no
    such words, or, given `asked` terms, when they belong to another clause than the one holding them
    ('built ... by an astronomer who had been refused a post because she was a woman' does not say why
    it was built)."""
    found = marker.search(candidate.text)
    if found is None or not is_dataclass(candidate):
        return None
    before = candidate.text[: found.start()]
    if asked:  # from the last word of what was asked (or the sentence's start) on, no other clause opens
        spans = [m.end() for m in re.finditer(r"[\w'-]+", before) if stem(m.group(0).lower()) in asked]
        if _CLAUSE_OPENERS.search(before[spans[-1] :] if spans else before):
            return None
    return replace(candidate, text="\u2026" + candidate.text[found.start() :]) if before.strip() else candidate


def _holds_asked(text: str, asked: set[str]) -> bool:
    """Whether a sentence holds a word of what was asked (`asked`: stemmed terms)."""
    return bool(asked) and any(stem(word.lower()) in asked for word in re.findall(r"[\w'-]+", text))


def _best(pool: list[Q], value: dict[int, float], quotes: int, anchor: Quotable) -> list[Q]:
    """The best `quotes` of the pool, those under the anchor's heading first (what a passage says more
    about, or why, is mostly said in its own section), then by value; none under FLOOR of the best's."""
    ranked = sorted(pool, key=lambda c: (not _in_section(c, anchor), -value[id(c)]))
    top = max(value[id(c)] for c in ranked[:quotes])
    return [c for c in ranked[:quotes] if value[id(c)] >= FLOOR * top or top <= 0 or _in_section(c, anchor)]


def _beside(candidate: Quotable, anchor: Quotable) -> bool:
    """Under the anchor's heading; for a text without headings, within NEARBY_CHARS of it. A reason or an
    example further away is about something else ('because' two sections on explains another event). An
    anchor quoted from a summary has neither: anywhere in its document."""
    if anchor.node.heading:
        return _in_section(candidate, anchor)
    place, there = _place(candidate), _place(anchor)
    if candidate.node.document != anchor.node.document or candidate.node.document is None:
        return False
    return there is None or (place is not None and abs(place - there) <= NEARBY_CHARS)


def _in_section(candidate: Quotable, anchor: Quotable) -> bool:
    node = candidate.node
    same_document = node.document == anchor.node.document
    return bool(node.heading) and same_document and node.heading == anchor.node.heading


def _place(candidate: Quotable) -> int | None:
    """Where the sentence lies in its document (a leaf's), or None (a summary's)."""
    node = candidate.node
    if node.layer == 0 and node.start is not None:
        return node.start + candidate.sentence.start
    placed = getattr(candidate, "placed", None)  # a summary's copy of a sentence its leaf left out
    return placed[1] if placed is not None else None


def _document(candidate: Quotable) -> str | None:
    """The document the sentence stands in: a summary's copy of a leaf's sentence is read in the leaf's."""
    placed = getattr(candidate, "placed", None)
    return placed[0] if placed is not None and candidate.node.layer > 0 else candidate.node.document


def _place_key(candidate: Quotable) -> tuple[str, int]:
    place = _place(candidate)
    return (_document(candidate) or "", place if place is not None else 1 << 40)


def _same_document(candidate: Quotable, anchors: Sequence[Quotable]) -> bool:
    document = candidate.node.document
    return document is not None and any(document == anchor.node.document for anchor in anchors)


def _nearness(candidate: Quotable, anchors: Sequence[Quotable]) -> float:
    """How close the sentence is to the nearest anchor of its document."""
    place = _place(candidate)
    best = 0.0
    for anchor in anchors:
        if candidate.node.document != anchor.node.document or candidate.node.document is None:
            continue
        there = _place(anchor)
        near = 1 / (1 + abs(place - there) / NEARBY_CHARS) if place is not None and there is not None else 0.0
        best = max(best, PROXIMITY_WEIGHT * near)
    return best


def _before(pool: Sequence[Q], anchor: Quotable) -> list[Q]:
    """The pool's sentences before the anchor in its document, in reading order (the nearest last)."""
    document, start = _document(anchor), _place(anchor)
    if document is None or start is None:
        return []
    earlier = [c for c in pool if _document(c) == document and (place := _place(c)) is not None and place < start]
    unique: dict[str, Q] = {}
    for candidate in sorted(earlier, key=_place_key):  # a summary's copy of a leaf's sentence once
        unique.setdefault(candidate.key, candidate)
    return list(unique.values())


def _after(pool: Sequence[Q], anchor: Quotable) -> list[Q]:
    """The pool's sentences after the anchor (the answer's first quote) in its document, in reading order."""
    document, start = _document(anchor), _place(anchor)
    if document is None or start is None:
        return []
    later = [c for c in pool if _document(c) == document and (_place(c) or -1) > start]
    unique: dict[str, Q] = {}
    for candidate in sorted(later, key=_place_key):  # a summary's copy of a leaf's sentence once
        unique.setdefault(candidate.key, candidate)
    return list(unique.values())
