"""Sentence-level helpers shared by retrieval (de-duplicated context) and the extractive answerer.

Extractive summaries are copies of their children's sentences, so the same sentence can reach one
context twice, once in a leaf and once in a summary; a summary's last sentence may also be cut short
with an ellipsis. `SentenceKey` makes those copies compare equal, and `NewSentences` tells which
sentences of a text a context does not hold yet.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .budget import checked
from .chunk import UNSPACED_LETTERS, column_label, split_sentences

# Questions about a whole text rather than a detail of it ('what is this about?', 'the main theme').
THEMATIC = re.compile(
    r"\b(?:central|main|key|overall|major)\s+(?:theme|idea|point|message|topic|argument)s?\b"
    r"|\bthemes?\b|\bsummar(?:y|ies|ise|ize)\b|\bgist\b|\boverview\b|\bin (?:short|brief|a nutshell)\b"
    r"|\bwhat(?:'s| is| are| was| were)\s+(?:this|it|these|that|the \w+)\s+(?:\w+\s+){0,3}about\b"
    r"|\bwhat (?:does|do|did) (?:this|it|these|the \w+)(?:\s+\w+){0,2}\s+(?:say|talk about|cover|discuss|describe)\s*[?.!]*$"
    r"|\b(?:describe|outline)\s+(?:this|these|the)\b|\btl;?dr\b|\bmoral\b"
    # a story's plot ('what is the plot?', 'the plot of the book'), not a garden's ('the first plot holder',
    # 'a full plot', 'plot 7')
    r"|\bplot(?=\s*(?:[?.!,;]|$|\b(?:of|in|and|so|summary|twists?)\b))(?<!\ba plot)(?<!full plot)(?<!half plot)",
    re.IGNORECASE,
)

ELLIPSIS = "\u2026"
MIN_PREFIX_WORDS = 4  # a sentence cut short with "…" must keep this many words to count as a copy

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_HEADING_MARK = re.compile(r"^\s*(?:#{1,6}\s+|={3,}\s*$|-{3,}\s*$)")
_BULLET = re.compile(r"^\s*(?:[-*+\u2022\u25aa\u2013]\s+|\(?\d{1,3}[.)]\s+|\(?[a-zA-Z][.)]\s+(?=[A-Z]))")
# with the full stops, marks and colons of Chinese and Japanese (。｡．！？：；) and their closing brackets
_END_PUNCTUATION = re.compile(
    r"[.!?\u2026:;\u3002\uff61\uff0e\uff01\uff1f\uff1a\uff1b][\"'\u201d\u2019\u00bb)\]\u300d\u300f\uff09]*\s*$"
)
HEADING_MAX_WORDS = 12  # an unpunctuated line this short is a title or heading
# A list item or numbered clause this short names a topic ('- Punctures', '2. Rent'); a longer one says
# something, full stop or not ('- the return ferry is at 16:30', '4.1 No pets may be kept without consent').
LABEL_MAX_WORDS = 3
_CLAUSE_NUMBER = re.compile(r"\s*\d{1,3}(?:\.\d{1,3})+\.?\s+\S")  # '2.2.1 Late payment ...'
# A log's or transcript's line opening with its time: '[00:01:09] it was rebuilt in 1950', '(12:01) ...'.
_TIMESTAMP = re.compile(
    r"\s*(?:[\[(]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?[\])]|\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,3})?)\s+\S"
)
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves""".split()
)


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric runs: the unit every comparison here uses."""
    return _WORD.findall(text.lower())


# Each letter of a script written without spaces (Chinese, Japanese) counts as a word where length matters
# (`word_count`).
# Hangul is written with spaces, but a particle or ending joins each word ("등대는", "등대가"), so its words
# are compared, like the unspaced scripts', by their character bigrams (`units`).
_HANGUL = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
_UNSPACED_CHAR = re.compile(f"[{UNSPACED_LETTERS}]")
_BIGRAMMED_CHAR = re.compile(f"[{UNSPACED_LETTERS}{_HANGUL}]")
_BIGRAMMED_RUN = re.compile(f"([{UNSPACED_LETTERS}{_HANGUL}]+)")


# Where a run of those letters is cut before it is read in bigrams, as a space would cut it: hiragana (in
# Japanese the particles and endings: に, は, ました, ですか) and the commonest Chinese function and question
# words (的, 了, 是, 什么, 多少); they stand between the words that carry the meaning.
_FUNCTION_PIECES = re.compile(
    "[\u3040-\u309f]+|什么|甚么|怎么|为什么|為什麼|哪里|哪儿|哪个|哪些|多少|时候|時候|何时|何時|如何"
    "|[的了是在和与與及也都而着著之于於把被吗嗎呢吧啊谁誰]"
)


def units(text: str) -> list[str]:
    """`words`, except that a run of Chinese, Japanese or Korean letters inside one becomes the character
    bigrams of its pieces between function words ("救出了渔民" -> 救出 渔民; a lone character stays whole):
    such a run is a phrase or a clause, not a word, so the terms of a question meet a sentence's only in
    these pieces. A Korean word, written spaced, stays whole before its bigrams (the full-text search
    matches it whole). Text without those letters gets exactly `words`."""
    found = words(text)
    if not in_bigrams(text):
        return found
    out: list[str] = []
    for word in found:
        for piece in _BIGRAMMED_RUN.split(word):
            if not _BIGRAMMED_CHAR.match(piece):
                out += [piece] if piece else []
                continue
            if len(piece) > 2 and not _UNSPACED_CHAR.search(piece):
                out.append(piece)
            for part in _FUNCTION_PIECES.split(piece):
                out += [part[i : i + 2] for i in range(max(1, len(part) - 1))] if part else []
    return out


def word_count(text: str) -> int:
    """How many words `text` holds, as length gates count them: each Chinese or Japanese character is one
    (a sentence of theirs is one unbroken run); text without them counts `words`."""
    found = words(text)
    if not has_unspaced(text):
        return len(found)
    return sum(len(_UNSPACED_CHAR.findall(w)) + sum(1 for p in _UNSPACED_CHAR.split(w) if p) for w in found)


def has_unspaced(text: str) -> bool:
    """Whether `text` holds a letter of a script written without spaces (Chinese, Japanese)."""
    return not text.isascii() and _UNSPACED_CHAR.search(text) is not None


def in_bigrams(text: str) -> bool:
    """Whether `text` holds letters that `units` reads in bigrams (Chinese, Japanese, Korean)."""
    return not text.isascii() and _BIGRAMMED_CHAR.search(text) is not None


def content_terms(text: str) -> list[str]:
    """The words that carry meaning: no stopwords, no single letters (single digits stay); in Chinese,
    Japanese and Korean text, character bigrams (`units`)."""
    return [t for t in units(text) if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]


# Common irregular verbs, so "what did she find?" meets "she found" (past forms to the base form).
IRREGULAR = {
    past: base
    for base, forms in {
        "find": "found",
        "leave": "left",
        "take": "took taken",
        "give": "gave given",
        "go": "went gone",
        "come": "came",
        "see": "saw seen",
        "say": "said",
        "tell": "told",
        "make": "made",
        "build": "built",
        "buy": "bought",
        "bring": "brought",
        "think": "thought",
        "teach": "taught",
        "catch": "caught",
        "fight": "fought",
        "sell": "sold",
        "hold": "held",
        "keep": "kept",
        "meet": "met",
        "lose": "lost",
        "win": "won",
        "begin": "began begun",
        "write": "wrote written",
        "run": "ran",
        "die": "dead",
        "fall": "fell fallen",
        "grow": "grew grown",
        "know": "knew known",
        "steal": "stole stolen",
        "break": "broke broken",
        "choose": "chose chosen",
        "speak": "spoke spoken",
        "drive": "drove driven",
        "ride": "rode ridden",
        "rise": "rose risen",
        "fly": "flew flown",
        "throw": "threw thrown",
        "wear": "wore worn",
        "send": "sent",
        "spend": "spent",
        "pay": "paid",
        "feel": "felt",
        "sleep": "slept",
        "flee": "fled",
        "lead": "led",
        "hide": "hid hidden",
        "bear": "bore born",
        "become": "became",
        "get": "got gotten",
        "stand": "stood",
        "understand": "understood",
        "sink": "sank sunk",
        "swim": "swam",
        "shoot": "shot",
        "strike": "struck",
        "forget": "forgot forgotten",
    }.items()
    for past in forms.split()
}


_VOWELS = frozenset("aeiouy")


def _short_verb(term: str) -> str | None:
    """The verb of three letters ending in 'e' that a four-letter '-ed' or five-letter '-ing' form is of, which
    the suffix strip leaves alone (two letters would be left): 'used' and 'using' are 'use', 'aged' 'age',
    'died' 'die', 'owing' 'owe'. Not 'seed' or 'need' ('-eed'), nor 'shed', 'fled', 'thing' or 'bring' (two
    consonants first), nor 'doing' or 'being' (an '-ing' of a consonant first)."""
    if len(term) == 4 and term.endswith("ed") and not term.endswith("eed") and _VOWELS & {term[0], term[1]}:
        return term[:-1]
    if len(term) == 5 and term.endswith("ing") and term[0] in _VOWELS and term[1] not in _VOWELS:
        return term[:2] + "e"
    return None


def stem(term: str) -> str:
    """A light suffix strip so 'cleaned', 'cleaning' and 'cleans' meet; not a linguistic stemmer.
    Common irregular past forms meet their verb ('found' -> 'find'), and short ones theirs ('used' -> 'use',
    `_short_verb`)."""
    term = original = IRREGULAR.get(term, term)
    if (short := _short_verb(term)) is not None:
        return short
    for suffix in ("ings", "ing", "edly", "ed", "es", "s"):
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            term = term[: -len(suffix)]
            break
    # 'carry', 'carried' and 'carries' meet at 'carry' ('carri' once its ending is cut)
    if term.endswith("i") and term != original and len(term) >= 4:
        return term[:-1] + "y"
    # 'move', 'moved', 'moves' and 'moving' meet at 'mov'
    return term[:-1] if term.endswith("e") and len(term) >= 4 else term


def jaccard(a: set[str], b: set[str]) -> float:
    """Overlap of two term sets (1.0 for two empty sets)."""
    if not a or not b:
        return 1.0 if a == b else 0.0
    return len(a & b) / len(a | b)


def sentence_key(text: str) -> str:
    """Whitespace, case and punctuation removed: a leaf's sentence and a summary's copy share it."""
    return " ".join(words(text))


def strip_bullet(text: str) -> str:
    """A list item's text without its marker ('- ', '2. ', 'b) ')."""
    return _BULLET.sub("", text, count=1).strip()


def is_heading(text: str) -> bool:
    """A Markdown heading or rule, or a short line with no closing punctuation (a title or a label).

    Loaders keep headings in the text (a Markdown '## Common repairs', a PDF's title line, a
    bullet that only names a topic); they are structure, not statements worth quoting. A list item, a
    numbered clause or a timestamped line of more than LABEL_MAX_WORDS words is a statement without its
    full stop.
    """
    if _HEADING_MARK.match(text):
        return True
    body = strip_bullet(text)
    if not words(body):
        return True
    if _END_PUNCTUATION.search(body):
        return False
    count = word_count(body) if has_unspaced(body) else len(body.split())
    if (
        body != text.strip() or _CLAUSE_NUMBER.match(text) or _TIMESTAMP.match(text)
    ):  # an item, clause, log line
        return count <= (2 if has_unspaced(body) else 1) * LABEL_MAX_WORDS
    return count <= HEADING_MAX_WORDS


def fingerprint(key: str) -> int:
    """A stable 63-bit fingerprint of a sentence key (0 for a sentence without words).

    Stored with each node (see `SentenceSpan`), so that retrieval compares sentences without
    splitting and normalising every candidate's text again.
    """
    if not key:
        return 0
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big") >> 1


@dataclass(frozen=True)
class Sentence:
    """One sentence of a text: its span there and its comparison key."""

    start: int
    end: int
    text: str
    key: str
    fingerprint: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fingerprint", fingerprint(self.key))

    @property
    def cut_short(self) -> bool:
        return self.text.rstrip().endswith(ELLIPSIS)


@dataclass(frozen=True, slots=True)
class SentenceSpan:
    """A sentence as stored with its node: its span, its tokens and its key's fingerprint.

    What the collapsed tree's fill needs of a candidate, read instead of recomputed: splitting and
    counting the candidates of one question took more time than the search. Its text and key are
    derived from `source` (the node's text) only when asked for.
    """

    start: int
    end: int
    tokens: int
    fingerprint: int
    source: str = field(repr=False, compare=False)

    @property
    def text(self) -> str:
        return " ".join(self.source[self.start : self.end].split())

    @property
    def key(self) -> str:
        return sentence_key(self.text)

    @property
    def cut_short(self) -> bool:
        return self.source[self.start : self.end].rstrip().endswith(ELLIPSIS)


def sentence_spans(
    texts: Sequence[str],
    count_tokens_batch: Callable[[list[str]], list[int]],
    code: Sequence[bool] = (),
) -> list[list[SentenceSpan]]:
    """Each text's sentences (as `sentences_of` splits them; `code[i]` for a leaf wholly of code) with
    their token counts, counted in one batch.

    Each sentence is counted as it stands in the text, which is how a shortened node quotes it, and how
    chunking counted it already (the counts are remembered, see `Embedder.count_tokens_batch`).
    """
    flags = list(code) or [False] * len(texts)
    split = [sentences_of(text, flag) for text, flag in checked(zip(texts, flags, strict=True), every=64)]
    counts = iter(
        count_tokens_batch(
            [text[s.start : s.end] for text, sentences in zip(texts, split, strict=True) for s in sentences]
        )
    )
    return [
        [SentenceSpan(s.start, s.end, next(counts), s.fingerprint, text) for s in sentences]
        for text, sentences in zip(texts, split, strict=True)
    ]


def encode_spans(spans: Sequence[SentenceSpan]) -> str:
    """The stored form of a node's sentences: JSON [[start, end, tokens, fingerprint], ...]."""
    return json.dumps([[s.start, s.end, s.tokens, s.fingerprint] for s in spans], separators=(",", ":"))


def decode_spans(stored: str, text: str) -> tuple[SentenceSpan, ...]:
    """A node's stored sentences, read back against its text."""
    return tuple(
        SentenceSpan(start, end, tokens, mark, text) for start, end, tokens, mark in json.loads(stored)
    )


MAX_QUOTED_SPANS = 6  # sentences of one quotation kept together ("...reads: "Lamp out. Sea calm."")
MAX_QUOTED_CHARS = 600


def _open_quote(piece: str) -> bool:
    """Whether a double quotation opened in `piece` is still open at its end."""
    return piece.count('"') % 2 == 1 or piece.count("\u201c") > piece.count("\u201d")


def _whole_quotations(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join sentence spans that a quotation runs across, so a quote never stops inside one."""
    joined: list[tuple[int, int]] = []
    i = 0
    while i < len(spans):
        start, end = spans[i]
        taken = 1
        while (
            _open_quote(text[start:end])
            and i + taken < len(spans)
            and taken < MAX_QUOTED_SPANS
            and spans[i + taken][1] - start <= MAX_QUOTED_CHARS
        ):
            end = spans[i + taken][1]
            taken += 1
        if _open_quote(text[start:end]):  # never closed within reach: keep the sentences as they were
            end, taken = spans[i][1], 1
        joined.append((start, end))
        i += taken
    return joined


def sentences_of(text: str, code: bool = False) -> list[Sentence]:
    """The sentences of `text` (the whole text when it has no sentence break), whitespace collapsed;
    a quotation of several sentences stays one. A `code` text (`Chunk.code`) is one sentence a line."""
    spans = _whole_quotations(text, split_sentences(text, code)) or ([(0, len(text))] if text.strip() else [])
    out = []
    for start, end in spans:
        piece = " ".join(text[start:end].split())
        if piece:
            out.append(Sentence(start, end, piece, sentence_key(piece)))
    return out


class Comparable(Protocol):
    """What telling copies apart needs of a sentence (a `Sentence` or a stored `SentenceSpan`)."""

    @property
    def fingerprint(self) -> int: ...
    @property
    def key(self) -> str: ...
    @property
    def cut_short(self) -> bool: ...


class NewSentences:
    """The sentences a context already holds, to keep a second copy of any of them out.

    Copies are found by key fingerprint; the keys themselves are made only for the rare sentence cut
    short with an ellipsis, which is compared by its leading words.
    """

    def __init__(self) -> None:
        self._fingerprints: set[int] = set()
        self._held: list[Comparable] = []
        self._keys: list[str] = []  # keys of _held[: len(_keys)], made when first needed

    def is_copy(self, sentence: Comparable) -> bool:
        """Already held verbatim, or cut short with an ellipsis from a sentence held whole.

        A whole sentence is not a copy of a held shortened one: it still adds the words that were cut.
        """
        if not sentence.fingerprint or sentence.fingerprint in self._fingerprints:
            return True
        if sentence.cut_short:
            key = sentence.key
            if len(key.split()) >= MIN_PREFIX_WORDS:
                return any(_starts_with(held, key) for held in self._held_keys())
        return False

    def add(self, sentences: Iterable[Comparable]) -> None:
        for sentence in sentences:
            self._fingerprints.add(sentence.fingerprint)
            self._held.append(sentence)

    def _held_keys(self) -> list[str]:
        self._keys += [s.key for s in self._held[len(self._keys) :]]
        return self._keys


def _starts_with(key: str, prefix: str) -> bool:
    """Whether `key` begins with the whole words of `prefix`."""
    return key == prefix or key.startswith(prefix + " ")


_SEPARATOR_CELL = re.compile(r"^:?-{2,}:?$")


def table_cells(line: str) -> list[str] | None:
    """The cells of a table row ('Ladders | £320' -> ['Ladders', '£320']), or None for a line that is not
    one; a Markdown separator row ('|---|:--|') has no cells."""
    body = line.strip()
    if " | " not in body and not (body.startswith("|") and body.endswith("|") and len(body) > 1):
        return None
    cells = [cell.strip() for cell in body.strip("|").split("|")]
    if len(cells) < 2 or not any(cells):
        return None
    return [] if all(_SEPARATOR_CELL.match(cell) for cell in cells if cell) else cells


def labelled_row(row: list[str], header: list[str] | None) -> str:
    """A table row as a reader can take it out of its table: 'Item: Ladders; Cost: £320' under a header
    of the same width, else its cells joined ('Ladders; £320')."""
    if header and len(header) == len(row) and header != row:
        pairs = zip([column_label(name) for name in header], row, strict=True)
        return "; ".join(f"{name}: {cell}" if name else cell for name, cell in pairs if cell)
    return "; ".join(cell for cell in row if cell)


def one_slip_apart(a: str, b: str) -> bool:
    """Whether two different words differ by one typing slip: a letter dropped, added or changed, or
    two neighbours swapped (Damerau-Levenshtein distance 1)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    at = 0
    while at < len(shorter) and shorter[at] == longer[at]:
        at += 1
    if len(shorter) < len(longer):
        return shorter[at:] == longer[at + 1 :]
    if shorter[at + 1 :] == longer[at + 1 :]:
        return True
    return (
        at + 1 < len(shorter)
        and shorter[at] == longer[at + 1]
        and shorter[at + 1] == longer[at]
        and shorter[at + 2 :] == longer[at + 2 :]
    )
