"""Split a loaded document into leaf chunks: about `max_tokens` tokens of whole sentences (RAPTOR, sec. 3).

Differences from the paper's code, on purpose: punctuation and the original whitespace are kept (a chunk is
an exact slice of the document, so citations can point back at it), chunks never cross a heading change, a
sentence longer than the budget is split at clause boundaries before falling back to words, and no chunk can
exceed `hard_limit` (the embedding model's input length), which is checked by counting every final chunk.

Speed: every sentence is counted once (in one batch when `count_tokens_batch` is given) and chunks are packed
from those counts; WordPiece-style tokenizers are additive across whitespace, and the final check catches
any tokenizer that is not.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Callable

from .types import Chunk, LoadedDocument, Section

log = logging.getLogger(__name__)

CountTokens = Callable[[str], int]
CountTokensBatch = Callable[[list[str]], list[int]]
Span = tuple[int, int]

# Abbreviations after which a period does not end a sentence (lower case, without the final period).
_NEVER_ENDS = {
    "mr", "mrs", "ms", "mx", "dr", "prof", "rev", "fr", "sr", "jr", "st", "mt", "gen", "col", "capt", "cpt",
    "lt", "sgt", "cmdr", "adm", "gov", "sen", "rep", "hon", "messrs", "mme", "mlle", "e.g", "i.e", "cf",
    "vs", "viz", "approx", "ca", "c", "u.s", "u.k", "u.n", "e.u", "ph.d", "b.a", "m.a", "b.sc", "m.sc",
    "dept", "univ", "assn", "bros", "corp", "est", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
}  # fmt: skip
# Abbreviations that only continue a sentence when a number follows ("No. 5", "p. 12", "Fig. 3").
_BEFORE_NUMBERS = {
    "no",
    "nos",
    "p",
    "pp",
    "fig",
    "figs",
    "vol",
    "vols",
    "ch",
    "chap",
    "sec",
    "art",
    "eq",
    "ed",
}

_TERMINATOR = re.compile(r"(?:[.!?\u2026]+)[\"'\u201d\u2019\u00bb)\]]*(?=\s|$)")
_NEWLINE = re.compile(r"\n")
_STRUCTURAL_LINE = re.compile(r"(?:#{1,6}\s|[-*+\u2022]\s|\d{1,3}[.)]\s|>|\||={3,}|-{3,}|```|~~~)")
_CLAUSE_BREAK = re.compile(r"[;:,](?=\s)|\s[\u2014\u2013-]{1,2}(?=\s)|\u2014")
_SYMBOLS = re.compile(r"[^\w\s]+")


# ------------------------------------------------------------------------------------- sentence splitting


def _period_ends_sentence(text: str, term_start: int, next_char: str) -> bool:
    """Whether a single '.' at term_start ends a sentence, given the word before it and what follows."""
    word_start = term_start
    while word_start > 0 and not text[word_start - 1].isspace():  # walk back: O(word), not O(line)
        word_start -= 1
    if word_start == term_start:
        return True
    word = text[word_start:term_start].lstrip("\"'(\u201c\u2018[")
    lower = word.lower()
    if lower in _NEVER_ENDS:
        return False
    if lower in _BEFORE_NUMBERS and next_char.isdigit():
        return False
    if len(word) == 1 and word.isalpha() and word.isupper():  # an initial: "John F. Kennedy"
        return False
    if re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word):  # dotted initialism: "J.R.R.", "U.S.A"
        return False
    # "1. First item" / "a) ..." at the start of a line is a list marker, not a sentence.
    at_line_start = word_start == 0 or text[word_start - 1] == "\n"
    return not (at_line_start and re.fullmatch(r"\d{1,3}|[ivxIVX]{1,4}", word))


def _terminator_cuts(text: str) -> list[int]:
    cuts = []
    for match in _TERMINATOR.finditer(text):
        rest = match.end()
        while rest < len(text) and text[rest].isspace():
            rest += 1
        if rest >= len(text):
            continue
        next_char = text[rest]
        if next_char.islower():  # "e.g. this", "... and then": the sentence goes on
            continue
        punct = match.group(0).rstrip("\"'\u201d\u2019\u00bb)]")
        if punct == "." and not _period_ends_sentence(text, match.start(), next_char):
            continue
        cuts.append(match.end())
    return cuts


def _continues_across_blank(text: str, i: int) -> bool:
    """A line break inside a sentence (a PDF page break): no end punctuation before, lower case after."""
    before = i
    while before > 0 and text[before - 1].isspace():
        before -= 1
    after = i
    while after < len(text) and text[after].isspace():
        after += 1
    if before == 0 or after >= len(text):
        return False
    last_line = text[text.rfind("\n", 0, before) + 1 : before].strip()
    return (
        text[after].islower()
        and text[before - 1] not in ".!?:;\u2026\"'\u201d\u2019)]"
        and not _STRUCTURAL_LINE.match(last_line)
    )


def _newline_cuts(text: str) -> list[int]:
    """Blank lines always end a sentence; a single newline does before or after structural lines."""
    cuts = []
    for match in _NEWLINE.finditer(text):
        i = match.start()
        prev_start = text.rfind("\n", 0, i) + 1
        prev_line = text[prev_start:i].strip()
        next_end = text.find("\n", i + 1)
        next_line = text[i + 1 : len(text) if next_end < 0 else next_end].strip()
        if _continues_across_blank(text, i):
            continue
        if (
            not prev_line
            or not next_line
            or prev_line.endswith(":")
            or _STRUCTURAL_LINE.match(prev_line)
            or _STRUCTURAL_LINE.match(next_line)
        ):
            cuts.append(i)
    return cuts


def _trimmed_spans(text: str, cuts: list[int], base: int = 0) -> list[Span]:
    """The non-blank pieces between cuts, with surrounding whitespace trimmed off."""
    spans = []
    previous = 0
    for cut in [*sorted(set(cuts)), len(text)]:
        if cut <= previous:
            continue
        piece = text[previous:cut]
        stripped = piece.strip()
        if stripped:
            start = previous + (len(piece) - len(piece.lstrip()))
            spans.append((base + start, base + start + len(stripped)))
        previous = cut
    return spans


def split_sentences(text: str) -> list[Span]:
    """Sentence spans (start, end) in `text`, trimmed of whitespace, covering all its non-space characters.

    Ends at . ! ? and ellipses (with any closing quotes or brackets), except after abbreviations, initials
    and list numbers; decimals never match because a terminator must be followed by whitespace. Blank
    lines, and newlines around headings, list items and table rows, are boundaries too.
    """
    return _trimmed_spans(text, _terminator_cuts(text) + _newline_cuts(text))


# ------------------------------------------------------------------------------------------ token counting


class _Counter:
    """Counts pieces of text, in one batch where possible; `overhead` is what an empty string counts."""

    def __init__(self, count_tokens: CountTokens, count_tokens_batch: CountTokensBatch | None):
        self.one = count_tokens
        self.batch = count_tokens_batch
        self.overhead = count_tokens("")

    def many(self, texts: list[str]) -> list[int]:
        if self.batch is not None:
            return [int(n) for n in self.batch(texts)] if texts else []
        return [self.one(t) for t in texts]

    def content(self, texts: list[str]) -> list[int]:
        """Token counts without the fixed per-call overhead, so counts of neighbouring pieces add up."""
        return [max(n - self.overhead, 0) for n in self.many(texts)]


# ----------------------------------------------------------------------------------- splitting long pieces


def _clause_spans(text: str, span: Span) -> list[Span]:
    """Cut a too-long sentence after ; : , and around dashes."""
    start, end = span
    piece = text[start:end]
    return _trimmed_spans(piece, [m.end() for m in _CLAUSE_BREAK.finditer(piece)], start)


def _cut_near(text: str, low: int, high: int) -> int:
    """Where to end a piece in text[low:high]: the last space, else after the last symbol, else `high`."""
    space = max(text.rfind(" ", low, high), text.rfind("\n", low, high))
    if space > low:
        return space
    symbols = list(_SYMBOLS.finditer(text, low, high))
    if symbols and symbols[-1].end() > low:
        return symbols[-1].end()
    return high


def _proportional_spans(
    text: str, span: Span, count: int, limit: int, counter: _Counter
) -> list[tuple[Span, int]]:
    """Cut an over-long span into pieces sized by its tokens per character, preferring word boundaries.

    All pieces are counted in one batch and any still over limit are cut again, so a giant run of words or
    a space-free string costs a few tokenizer calls per chunk rather than one per word or per character.
    """
    start, end = span
    step = max(1, int((end - start) * limit * 0.9 / max(count, 1)))
    spans: list[Span] = []
    position = start
    while position < end:
        stop = end if end - position <= step else _cut_near(text, position + step // 2, position + step)
        spans.extend(_trimmed_spans(text[position:stop], [], position))
        position = stop
    out: list[tuple[Span, int]] = []
    for piece, piece_count in zip(spans, counter.content([text[a:b] for a, b in spans]), strict=True):
        if piece_count <= limit:
            out.append((piece, piece_count))
        elif piece[1] - piece[0] == 1:
            raise ValueError(f"a single character counts more than the chunk limit of {limit} tokens")
        else:
            out.extend(_proportional_spans(text, piece, piece_count, limit, counter))
    return out


def _pack(spans: list[Span], counts: list[int], limit: int) -> list[tuple[Span, int]]:
    """Greedily join consecutive spans while their summed count stays within limit (each must fit alone)."""
    packed: list[tuple[Span, int]] = []
    current: Span | None = None
    total = 0
    for span, count in zip(spans, counts, strict=True):
        if current is not None and total + count <= limit:
            current, total = (current[0], span[1]), total + count
            continue
        if current is not None:
            packed.append((current, total))
        current, total = span, count
    if current is not None:
        packed.append((current, total))
    return packed


def _fit(text: str, span: Span, count: int, limit: int, counter: _Counter) -> list[tuple[Span, int]]:
    """Split a span that is over limit into pieces within it: at clauses, then at words (or characters)."""
    if count <= limit:
        return [(span, count)]
    clauses = _clause_spans(text, span)
    if 1 < len(clauses) <= max(2, count // 4):  # real clauses, not a comma-separated list of numbers
        pieces: list[tuple[Span, int]] = []
        for part, part_count in zip(clauses, counter.content([text[a:b] for a, b in clauses]), strict=True):
            pieces.extend(_fit(text, part, part_count, limit, counter))
        return _pack([p for p, _ in pieces], [c for _, c in pieces], limit)
    return _pack(*_unzip(_proportional_spans(text, span, count, limit, counter)), limit)


def _unzip(pairs: list[tuple[Span, int]]) -> tuple[list[Span], list[int]]:
    return [span for span, _ in pairs], [count for _, count in pairs]


# ------------------------------------------------------------------------------------------------ chunking


def _heading_runs(doc: LoadedDocument) -> list[tuple[int, int, tuple[str, ...]]]:
    """Consecutive sections with the same heading path merged: chunks may cross pages, never headings."""
    runs: list[tuple[int, int, tuple[str, ...]]] = []
    for section in doc.sections:
        if runs and runs[-1][2] == section.heading and runs[-1][1] == section.start:
            runs[-1] = (runs[-1][0], section.end, section.heading)
        else:
            runs.append((section.start, section.end, section.heading))
    if not runs and doc.text:
        runs.append((0, len(doc.text), ()))
    return runs


def _page_at(sections: list[Section], starts: list[int], offset: int) -> int | None:
    position = bisect.bisect_right(starts, offset) - 1
    return sections[position].page if position >= 0 else None


def _page_marks(sections: list[Section], starts: list[int], a: int, b: int) -> tuple[tuple[int, int], ...]:
    """Where each page begins inside doc.text[a:b], as offsets into that slice (empty without pages)."""
    first = max(bisect.bisect_right(starts, a) - 1, 0)
    marks: list[tuple[int, int]] = []
    for section in sections[first:]:
        if section.start >= b:
            break
        if section.page is not None and (not marks or marks[-1][1] != section.page):
            marks.append((max(section.start - a, 0), section.page))
    return tuple(marks)


def chunk_document(
    doc: LoadedDocument,
    count_tokens: CountTokens,
    *,
    max_tokens: int = 100,
    hard_limit: int | None = None,
    count_tokens_batch: CountTokensBatch | None = None,
) -> list[Chunk]:
    """Leaf chunks of about `max_tokens` tokens of whole sentences; none over `hard_limit` (guaranteed)."""
    limit = max_tokens if hard_limit is None else min(max_tokens, hard_limit)
    counter = _Counter(count_tokens, count_tokens_batch)
    if limit < 1:
        raise ValueError(f"chunk limit must be at least one token, got {limit}")

    runs = _heading_runs(doc)
    run_sentences = [
        [(a + start, b + start) for a, b in split_sentences(doc.text[start:end])] for start, end, _ in runs
    ]
    flat = [span for spans in run_sentences for span in spans]
    counts = iter(counter.content([doc.text[a:b] for a, b in flat]))

    pieces: list[tuple[Span, int, tuple[str, ...]]] = []
    for (_, _, heading), spans in zip(runs, run_sentences, strict=True):
        fitted: list[tuple[Span, int]] = []
        for span in spans:
            fitted.extend(_fit(doc.text, span, next(counts), limit, counter))
        packed = _pack([s for s, _ in fitted], [c for _, c in fitted], limit)
        pieces.extend((span, count, heading) for span, count in packed)

    chunks = _verified(doc.text, pieces, limit, counter)
    starts = [s.start for s in doc.sections]
    result = [
        Chunk(
            index=i,
            text=doc.text[a:b],
            start=a,
            end=b,
            tokens=n,
            page=_page_at(doc.sections, starts, a),
            heading=h,
            page_marks=_page_marks(doc.sections, starts, a, b),
        )
        for i, ((a, b), n, h) in enumerate(chunks)
    ]
    log.info(
        "chunked %s: %d sentences -> %d chunks (limit %d tokens)", doc.name, len(flat), len(result), limit
    )
    return result


def _verified(
    text: str, pieces: list[tuple[Span, int, tuple[str, ...]]], limit: int, counter: _Counter
) -> list[tuple[Span, int, tuple[str, ...]]]:
    """Count every packed chunk as a whole; re-split any that a non-additive tokenizer pushed over limit."""
    actual = counter.content([text[a:b] for (a, b), _, _ in pieces])
    out: list[tuple[Span, int, tuple[str, ...]]] = []
    for (span, _, heading), count in zip(pieces, actual, strict=True):
        if count <= limit:
            out.append((span, count, heading))
            continue
        log.debug("chunk %s counted %d > %d as a whole; splitting it again", span, count, limit)
        out.extend((piece, n, heading) for piece, n in _proportional_spans(text, span, count, limit, counter))
    return out
