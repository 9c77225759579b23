"""Whether each sentence of a written answer is what the context says, and which node says it.

A model's answer cites its sources only as well as the model obeys "cite with [n]": small local models
often cite nothing, cite one block for a paragraph, cite a block that says something else, or add a
sentence no block holds. So every sentence of a written answer is checked against the context:

- a sentence the model cited is *cited* when one of its markers points at a node that supports it;
  a marker pointing at a node that does not is reported (`Claim.wrong`);
- a sentence without a supporting marker gets the marker of the node that supports it best, shown as
  *matched*;
- a sentence no node supports is *unsupported*: it is marked `UNSUPPORTED_MARK` in the answer and
  counted under it;
- what states nothing (a question back, a lead-in ending in ":", "the documents do not say") is exempt.

A node supports a sentence when one of its sentences scores at least `SUPPORT_THRESHOLD` and the node
holds every number the sentence states (in digits or spelled out: `spelled_numbers`). The score blends the two signals the extractive answerer ranks
with: the cosine of the sentences' embeddings (the embedder that built the tree; vectors are cached, as
the answerer's are) and the share of the answer sentence's content terms (stemmed) the context sentence
holds. The weight and threshold were chosen on data by `python -m raptor_tools.support_threshold`
(its table is in docs/HOW_IT_WORKS.md).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..ingest.sentences import content_terms, sentences_of, stem, strip_bullet, words
from ..types import Answer, Citation, ContextNode, WrongCitation
from .answer import MARKER, NOTHING_FOUND, SentenceVectors
from .followup import unanswered_lead
from .tables import PARTIAL_TABLE_LEAD
from .verdict import VERDICT_LEAD

# Chosen by `python -m raptor_tools.support_threshold` on ../shared/evaldata (docs/HOW_IT_WORKS.md has the table).
EMBED_SHARE = 0.4  # weight of the embedding cosine; the rest is the lexical share
SUPPORT_THRESHOLD = 0.575
UNSUPPORTED_MARK = "[?]"  # after a sentence nothing in the context supports; never a citation marker
MIN_CLAIM_WORDS = 3
MIN_CLAIM_TERMS = 2
CITED, MATCHED, UNSUPPORTED, EXEMPT = "cited", "matched", "unsupported", "exempt"

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_LEADING_MARKERS = re.compile(r"(?:\s*\[\d{1,4}\])+")  # used with match(text, pos)
_TRAILING = re.compile(r"(?:\s*\[\d{1,4}\])*\s*[.!?…]*[\"'”’»)\]]*\s*$")
# A sentence that says the context lacks the answer states nothing to check.
_NO_ANSWER = re.compile(
    r"(?:\b(?:not|no|nothing|neither|nor|unable|cannot)\b|n[’']t\b).{0,80}\b(?:context|documents?|texts?|"
    r"passages?|blocks?|sources?|information|mention(?:ed|s)?|provided|given|stated|specified)\b"
    r"|\b(?:context|documents?|texts?|passages?|blocks?|sources?)\b.{0,60}(?:\b(?:not|no|nothing)\b|n[’']t\b)"
    r"|\bI (?:do not|don't|cannot|can't) (?:know|tell|say|find)\b"
    r"|\b(?:nothing|no)\s+(?:else|more|further|other)\b|\bunknown\b"
    r"|\b(?:is|are|was|were)\s+(?:not|n't)\s+(?:known|given|stated|mentioned|specified|said|clear)\b",
    re.IGNORECASE,
)
_SOURCE_WORD = r"(?:the\s+)?(?:context|documents?|texts?|passages?|blocks?|sources?)"
# "according to the context", "the documents say that", "says the context": who says it, not what
_ATTRIBUTION = re.compile(
    rf"\b(?:according to|as (?:stated|mentioned|noted|described|shown) in)\s+{_SOURCE_WORD}\b,?"
    rf"|\b{_SOURCE_WORD}\s+(?:says?|states?|mentions?|notes?|explains?|shows?|describes?)\b(?:\s+that\b)?,?"
    rf"|,?\s*(?:says?|states?|notes?)\s+{_SOURCE_WORD}\b",
    re.IGNORECASE,
)


def numbers_in(text: str) -> set[str]:
    """The numbers a text states, separators removed ("1,200" and "1200" are one)."""
    return {re.sub(r"[.,]", "", n) for n in _NUMBER.findall(text)}


_SMALL = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen".split()
    )
}
_TENS = {word: 10 * n for n, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_WORD_OR_MARK = re.compile(r"[a-z]+|[^\sa-z]", re.IGNORECASE)
# which kind of number word may follow which: "forty two", "three hundred and ten", "twelve thousand five"
_FOLLOWS = {
    "unit": {None, "tens", "hundred", "scale"},
    "teen": {None, "hundred", "scale"},
    "tens": {None, "hundred", "scale"},
    "hundred": {"unit", "teen"},
    "scale": {"unit", "teen", "tens", "hundred"},
}


def _kind(word: str) -> str | None:
    if word in _TENS:
        return "tens"
    if word in _SMALL:
        return "unit" if _SMALL[word] < 10 else "teen"
    return "hundred" if word == "hundred" else "scale" if word in _SCALES else None


class _SpelledNumber:
    """One number being read word by word."""

    def __init__(self) -> None:
        self.total, self.part, self.last = 0, 0, None

    def takes(self, kind: str) -> bool:
        return self.last in _FOLLOWS[kind]

    def add(self, word: str, kind: str) -> None:
        if kind == "hundred":
            self.part *= 100
        elif kind == "scale":
            self.total, self.part = self.total + self.part * _SCALES[word], 0
        else:
            self.part += _SMALL.get(word, 0) + _TENS.get(word, 0)
        self.last = kind

    def value(self) -> str | None:
        return None if self.last is None else str(self.total + self.part)


def spelled_numbers(text: str) -> set[str]:
    """The numbers a text spells out ("fifty" 50, "forty-two" 42, "three hundred and ten" 310, "twelve
    thousand" 12000), as `numbers_in` writes them: a claim that says "50" is held by a source saying
    "fifty". Read from the sources only, so a claim's "one of them" never demands a 1."""
    found: set[str] = set()
    number = _SpelledNumber()
    tokens = [t.lower() for t in _WORD_OR_MARK.findall(text.replace("-", " "))]
    for position, token in enumerate(tokens):
        kind = _kind(token)
        if kind is not None and number.takes(kind):
            number.add(token, kind)
            continue
        following = tokens[position + 1] if position + 1 < len(tokens) else ""
        if token == "and" and number.last in ("hundred", "scale") and _kind(following) in ("unit", "teen", "tens"):
            continue  # "three hundred and ten"
        if (value := number.value()) is not None:
            found.add(value)
        number = _SpelledNumber()
        if kind is not None and number.takes(kind):
            number.add(token, kind)
    if (value := number.value()) is not None:
        found.add(value)
    return found


def terms_of(text: str) -> frozenset[str]:
    """Stemmed content terms: what the lexical share counts."""
    return frozenset(stem(t) for t in content_terms(text))


def claim_text(sentence: str) -> str:
    """A sentence as it is compared: no markers or list bullet, whitespace and spaces before
    punctuation collapsed (the same for a streamed sentence and the finished answer's)."""
    text = MARKER.sub(" ", sentence.replace(UNSUPPORTED_MARK, " "))
    text = re.sub(r"\s+([.,;:!?])", r"\1", " ".join(strip_bullet(text).split()))
    return text.strip()


def compared(claim: str) -> str:
    """What of a claim is compared with the context: without who says it ("according to the context")."""
    return " ".join(_ATTRIBUTION.sub(" ", claim).split())


def states_something(text: str) -> bool:
    """Whether a sentence makes a claim to check: words with content, not a question back, not a
    lead-in ("Here is what the documents say:"), not "the context does not say"."""
    stripped = text.rstrip(" \"'”’)*_")
    if stripped.endswith(("?", ":")) or _NO_ANSWER.search(text):
        return False
    return len(words(text)) >= MIN_CLAIM_WORDS and len(content_terms(text)) >= MIN_CLAIM_TERMS


# How a model begins a reply the context does not answer (llm.ANSWER_SYSTEM asks for it).
NOT_ANSWERED = "The documents do not answer this"
# The first sentence of an answer, up to its end (a marker after the full stop is part of it).
_FIRST_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+(?:\s*\[\d{1,4}\])*|$)")


def says_not_answered(text: str) -> bool:
    """Whether an answer says the documents do not answer the question: the extractive answer's lead
    line for the closest passages or for nothing about it, or a reply whose first sentence says the
    context lacks the answer ("The documents do not answer this.", "The context does not say who ...")
    and cites nothing. A first sentence that cites a block ("No keeper but Kittow is named [1].")
    answers."""
    if unanswered_lead(text) or text.startswith(NOTHING_FOUND):
        return True
    if VERDICT_LEAD.match(text):  # 'From the documents: no, 31 March 2022 is not before 2022.' answers
        return False
    if PARTIAL_TABLE_LEAD.match(text):  # '(the context may not hold every row of rota.csv): the rows found …'
        return False
    first = _FIRST_SENTENCE.match(text.lstrip())
    sentence = first.group(0) if first else ""
    return bool(_NO_ANSWER.search(sentence)) and not MARKER.search(sentence)


@dataclass(frozen=True)
class _ContextSentence:
    position: int  # 1-based block in the context
    text: str
    terms: frozenset[str]


class SupportIndex:
    """The context's sentences with their terms and (once `prepare`d) vectors: what answers are checked
    against. `prepare` and `ahead` run while the model writes, so the check after it is cheap."""

    def __init__(self, context: Sequence[ContextNode], vectors: SentenceVectors):
        self.size = len(context)
        self.vectors = vectors
        self.sentences = [
            _ContextSentence(position, sentence.text, terms_of(sentence.text))
            for position, node in enumerate(context, start=1)
            for sentence in sentences_of(node.text)
            if words(sentence.text)
        ]
        self.numbers = [numbers_in(node.text) | spelled_numbers(node.text) for node in context]
        self._matrix: np.ndarray | None = None
        self._positions = np.array([s.position for s in self.sentences], dtype=np.int64)
        self._ahead: asyncio.Future[np.ndarray] | None = None
        self._finished = 0  # sentences of the streamed text already sent to be embedded

    def prepare(self) -> None:
        """Embed the context's sentences (cached ones are reused). Synchronous: run it in a thread."""
        if self._matrix is None:
            self._matrix = self.vectors([s.text for s in self.sentences])

    def ahead(self, text_so_far: str) -> None:
        """While an answer streams: embed its finished sentences in the background (one batch at a
        time), so the check after the last one embeds almost nothing. Call on the event loop."""
        if self._ahead is not None and not self._ahead.done():
            return
        finished = sentences_of(text_so_far)[:-1]  # the last one may still grow
        claims = [claim_text(s.text) for s in finished[self._finished :]]
        claims = [compared(c) for c in claims if states_something(c)]
        self._finished = max(self._finished, len(finished))
        if claims:
            self._ahead = asyncio.ensure_future(asyncio.to_thread(self.vectors, claims))
            self._ahead.add_done_callback(_quietly)

    def similarities(self, claims: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """claims x context sentences: embedding cosines, and the share of each claim's terms each
        context sentence holds."""
        self.prepare()
        shape = (len(claims), len(self.sentences))
        if not claims or not self.sentences:
            return np.zeros(shape, dtype=np.float32), np.zeros(shape, dtype=np.float32)
        assert self._matrix is not None
        claims = [compared(claim) for claim in claims]
        cosine = self.vectors(claims) @ self._matrix.T
        lexical = np.zeros(shape, dtype=np.float32)
        for i, claim in enumerate(claims):
            terms = terms_of(claim)
            if terms:
                lexical[i] = [len(terms & s.terms) / len(terms) for s in self.sentences]
        return cosine, lexical

    def node_scores(
        self, claims: list[str], cosine: np.ndarray, lexical: np.ndarray, share: float = EMBED_SHARE
    ) -> np.ndarray:
        """claims x context nodes: each node's best sentence score for each claim (`share` of the
        cosine, the rest lexical), 0 where the node lacks a number the claim states."""
        scores = np.zeros((len(claims), self.size), dtype=np.float32)
        if not self.sentences:
            return scores
        blended = share * cosine + (1 - share) * lexical
        for i, claim in enumerate(claims):
            np.maximum.at(scores[i], self._positions - 1, blended[i])
            stated = numbers_in(claim)
            if stated:
                scores[i] *= [stated <= held for held in self.numbers]
        return scores

    def scores(self, claims: list[str]) -> np.ndarray:
        """`node_scores` with the shipped weight."""
        return self.node_scores(claims, *self.similarities(claims))


def _quietly(future: asyncio.Future[np.ndarray]) -> None:
    """A look-ahead embedding that failed costs nothing: the check embeds again (and reports)."""
    if not future.cancelled():
        future.exception()


@dataclass
class Claim:
    """One sentence of the answer and what the check found."""

    text: str  # as compared (claim_text)
    kind: str  # CITED | MATCHED | UNSUPPORTED | EXEMPT
    supported_by: int | None = None  # 1-based context position of the supporting node
    score: float = 0.0
    wrong: tuple[int, ...] = ()  # positions the model cited that do not support it


@dataclass
class SupportCheck:
    """An answer checked: its text with matched markers and unsupported marks added (markers are still
    context positions, for `map_citations`), and the claims found."""

    text: str
    claims: list[Claim] = field(default_factory=list)
    cited: set[int] = field(default_factory=set)  # positions the answerer's own markers point at

    @property
    def matched(self) -> set[int]:
        """Positions only the check cites (a node the answerer also cited elsewhere stays cited)."""
        found = {c.supported_by for c in self.claims if c.kind == MATCHED and c.supported_by is not None}
        return found - self.cited

    @property
    def unsupported(self) -> list[str]:
        return [c.text for c in self.claims if c.kind == UNSUPPORTED]

    @property
    def wrong(self) -> list[tuple[int, str]]:
        """(position the model cited, sentence) for each marker pointing at a node that does not support it."""
        return [(position, c.text) for c in self.claims for position in c.wrong]


@dataclass
class _Piece:
    start: int  # span of the sentence in the answer text
    end: int
    cited: tuple[int, ...]  # valid positions the model cited for it


def _pieces(text: str, size: int) -> list[_Piece]:
    """The answer's sentences with the markers the model gave each; a marker opening a sentence
    ("… the gale. [2] He …") belongs to the sentence before it."""
    pieces: list[_Piece] = []
    for sentence in sentences_of(text):
        start = sentence.start
        lead = _LEADING_MARKERS.match(text, start, sentence.end)
        if lead is not None and pieces:
            pieces[-1].cited += _valid(lead.group(0), size)
            start = lead.end()
        if not text[start : sentence.end].strip():
            continue  # markers alone, after the sentence's full stop
        pieces.append(_Piece(start, sentence.end, _valid(text[start : sentence.end], size)))
    return pieces


def _valid(text: str, size: int) -> tuple[int, ...]:
    return tuple(dict.fromkeys(p for p in (int(m) for m in MARKER.findall(text)) if 1 <= p <= size))


def best_node(scores: np.ndarray, threshold: float = SUPPORT_THRESHOLD) -> int | None:
    """The 1-based position of the node that supports a claim best (ties: the better-ranked node),
    or None when none reaches `threshold`."""
    if not len(scores):
        return None
    best = int(np.argmax(scores))
    return best + 1 if scores[best] >= threshold else None


def _judge(piece: _Piece, claim: str, scores: np.ndarray) -> Claim:
    """What one sentence is: cited (a marker it has supports it), matched, or unsupported."""
    supporting = [p for p in piece.cited if scores[p - 1] >= SUPPORT_THRESHOLD]
    wrong = tuple(p for p in piece.cited if p not in supporting)
    if supporting:
        best = max(supporting, key=lambda p: scores[p - 1])
        return Claim(claim, CITED, best, float(scores[best - 1]), wrong)
    best = best_node(scores)
    if best is not None:
        return Claim(claim, MATCHED, best, float(scores[best - 1]), wrong)
    return Claim(claim, UNSUPPORTED, None, float(scores.max()) if len(scores) else 0.0, wrong)


def _insert_at(text: str, start: int, end: int) -> int:
    """Where a marker goes in text[start:end]: after the sentence's own markers, before its closing
    punctuation and quotes."""
    body = text[start:end]
    tail = _TRAILING.search(body)
    cut = tail.start() if tail is not None else len(body)
    markers = re.match(r"(?:\s*\[\d{1,4}\])*", body[cut:])
    return start + cut + (markers.end() if markers is not None else 0)


def check_answer(text: str, index: SupportIndex) -> SupportCheck:
    """Every sentence of a written answer checked against the context (see the module's docstring).
    Synchronous (embeds what is not cached yet): run it in a thread."""
    pieces = _pieces(text, index.size)
    claims_text = [claim_text(text[p.start : p.end]) for p in pieces]
    checked = [i for i, claim in enumerate(claims_text) if states_something(claim)]
    scores = index.scores([claims_text[i] for i in checked])
    claims = [Claim(claim, EXEMPT) for claim in claims_text]
    for row, i in enumerate(checked):
        claims[i] = _judge(pieces[i], claims_text[i], scores[row])
    insertions: list[tuple[int, str]] = []
    for piece, claim in zip(pieces, claims, strict=True):
        if claim.kind == MATCHED:
            insertions.append((_insert_at(text, piece.start, piece.end), f" [{claim.supported_by}]"))
        elif claim.kind == UNSUPPORTED:
            insertions.append((_insert_at(text, piece.start, piece.end), f" {UNSUPPORTED_MARK}"))
    for at, mark in reversed(insertions):
        text = text[:at] + mark + text[at:]
    return SupportCheck(text, claims, {p for piece in pieces for p in piece.cited})


def label_citations(
    check: SupportCheck, citations: list[Citation], context: Sequence[ContextNode]
) -> list[WrongCitation]:
    """Mark the citations only the check found as matched, and name each marker the answerer put on
    a sentence its node does not support, by the [n] the answer shows."""
    marker_of = {c.node_id: c for c in citations}
    for position in check.matched:
        citation = marker_of.get(context[position - 1].node_id)
        if citation is not None:
            citation.kind = MATCHED
    wrong = []
    for position, sentence in check.wrong:
        citation = marker_of.get(context[position - 1].node_id)
        if citation is not None:
            wrong.append(WrongCitation(citation.marker, sentence))
    return wrong


def describe_support(unsupported: int, wrong: int) -> str:
    """The line under a checked answer: "2 sentences not found in the documents (marked [?]); 1 citation
    does not support its sentence." Empty when everything was found."""
    parts = []
    if unsupported:
        noun = "sentence" if unsupported == 1 else "sentences"
        parts.append(f"{unsupported} {noun} not found in the documents (marked {UNSUPPORTED_MARK})")
    if wrong:
        parts.append(
            f"{wrong} citation{'s' if wrong != 1 else ''} "
            f"{'does' if wrong == 1 else 'do'} not support {'its' if wrong == 1 else 'their'} sentence"
            f"{'' if wrong == 1 else 's'}"
        )
    return ("; ".join(parts) + ".") if parts else ""


NOT_ANSWERED_SOURCES = "Closest passages (they do not answer the question)"


def sources_title(answer: Answer) -> str:
    """The heading over an answer's cited passages, in the CLI and the bot: "Sources", or, when the
    answer says the documents do not answer the question, that what is listed is only the closest."""
    return "Sources" if answer.answered else NOT_ANSWERED_SOURCES
