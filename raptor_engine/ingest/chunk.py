"""Split a loaded document into leaf chunks: about `max_tokens` tokens of whole sentences (RAPTOR, sec. 3).

Differences from the paper's code, on purpose: punctuation and the original whitespace are kept (a chunk is
an exact slice of the document, so citations can point back at it), a chunk crosses a heading change only
to take in sections that fit whole (so tiny sections do not make tiny chunks), a sentence longer than the
budget is split at clause boundaries before falling back to words, and no chunk can exceed `hard_limit`
(the embedding model's input length) nor `max_chars` characters, which is checked on every final chunk.

Speed: every sentence is counted once (in one batch when `count_tokens_batch` is given) and chunks are packed
from those counts; WordPiece-style tokenizers are additive across whitespace, and the final check catches
any tokenizer that is not.
"""

from __future__ import annotations

import bisect
import functools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..types import Chunk, LoadedDocument, Section
from .budget import CHECK_EVERY, checked, checkpoint
from .fences import FenceReader
from .transcript import label_end, speaker_of, spoken_lines, turns

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
# Abbreviations that only continue a sentence before a reference label ("No. 5", "p. 12", "Fig. 3",
# "Eq. (4)", a paper's "Fig. FIGREF21").
_BEFORE_NUMBERS = {
    "no", "nos", "p", "pp", "fig", "figs", "vol", "vols", "ch", "chap", "sec", "secs", "art", "eq", "eqs",
    "ed", "tab", "tabs", "tbl", "ref", "refs", "thm", "alg",
}  # fmt: skip
# What a reference label or a citation opens with: a number, a bracket ("(4)", "[12]", "( BIBREF12 )"),
# capitals run into digits (the placeholders "BIBREF9", "FIGREF21" of extracted papers, "S1") or a
# citation key ("davidson2017automated").
_REFERENCE_LABEL = re.compile(r"[\[(]|\d|[A-Z]+\d|[a-z]+\d{4}")
# A citation key as some extracted papers print their citations ("garg2012unsupervised proposed ..."): it
# may open a sentence in lower case.
_CITATION_KEY = re.compile(r"[a-z]+\d{4}[a-z]*\b")
# A speaker's tag after a line of speech that ends in '!' or '?' ('"Wait!" Ninon said, pushing him back.',
# '"How old are you?" Miss Stoddart asked.'): a name (or "I"), perhaps an adverb, a verb of speech, and no
# quotation of its own before its end. It is part of the sentence that the speech opened. A capitalised
# pronoun ("He answered.") opens a sentence of its own: a tag would be written "he answered".
_SPEECH_TAG = re.compile(
    r"(?:I|(?:(?:Mrs?|Ms|Dr)\.\s+)?(?!(?:He|She|They|We|It|You|This|That|There|Then)\b)[A-Z][\w'\u2019-]*"
    r"(?:\s+[A-Z][\w'\u2019-]*){0,2})\s+(?:\w+ly\s+)?"
    r"(?:said|asked|cried|shouted|replied|answered|whispered|called|muttered|exclaimed|added|demanded|snapped"
    r"|yelled|screamed|murmured|growled|protested|insisted|laughed|sighed|begged|pleaded|roared|gasped)\b"
    r"(?:[^\"\u201c\u201d\n]|\n(?![^\S\n]*\n)){0,200}?[.!?](?=\s|$)"
)
_SPEECH_CLOSE = ("\"", "\u201d", "'", "\u2019")
# A closing quotation mark written after a space or a line break (' " Ivy! " Strike was beside her.'), told
# from an opening one by the marks before it in the paragraph.
_SPACED_CLOSE = re.compile(r"(?:[^\S\n]+|[^\S\n]*\n[^\S\n]*)[\"\u201d](?=\s|$)")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
_STRAIGHT_QUOTE = re.compile('"')

# A run of terminators and closers, matched only from its first character and never backtracked (possessive
# quantifiers): a run followed by a letter ("....Word", "?!?!x") fails once, in time linear in the run,
# instead of being retried from each of its characters (quadratic: 20,000 dots took 10 s). No shorter
# match could succeed anyway: inside a run the next character is never whitespace.
_TERMINATOR = re.compile(r"(?<![.!?\u2026])[.!?\u2026]++[\"'\u201d\u2019\u00bb)\]]*+(?=\s|$)")
# Letters of the scripts written without spaces between words: Han ideographs (Chinese, Japanese kanji) and
# kana. A character class body, for sentences.py too.
UNSPACED_LETTERS = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_UNSPACED_LETTER = re.compile(f"[{UNSPACED_LETTERS}]")
# Chinese and Japanese full stops (。｡！？, a fullwidth ． that is no decimal point) end a sentence with no
# space after them, with any closing quotes and brackets (」』）】》”).
_FULL_STOP_MARKS = "\u3002\uff61\uff01\uff1f\uff0e"
_FULL_STOP = re.compile(
    r"(?:[\u3002\uff61\uff01\uff1f]|\uff0e(?![0-9\uff10-\uff19]))++"
    r"[\"'\u201d\u2019\u00bb)\]\u300d\u300f\uff09\u3011\u300b]*+"
)
_NEWLINE = re.compile(r"\n")
# Lines that open a block of their own: a heading, a list item, a numbered clause ('2.2.1 Late payment',
# before a capital so a wrapped '3.5 million' is no clause), a log's or transcript's timestamp
# ('[00:01:09] it was rebuilt', '(12:01)', '00:01:09'), a quote, a table row, a rule, a fence.
_STRUCTURAL_LINE = re.compile(
    r"(?:#{1,6}\s|[-*+\u2022]\s|\d{1,3}[.)]\s|\d{1,3}(?:\.\d{1,3})+\.?\s+[A-Z]"
    r"|[\[(]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?[\])]\s|\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,3})?\s"
    r"|>|\||={3,}|-{3,}|```|~~~)"
)
# Chinese and Japanese break clauses with fullwidth marks and no space: ，；：、
_CLAUSE_BREAK = re.compile(r"[;:,](?=\s)|\s[\u2014\u2013-]{1,2}(?=\s)|\u2014|[\uff0c\uff1b\uff1a\u3001]")
_SYMBOLS = re.compile(r"[^\w\s]+")
_INITIALISM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
_LIST_NUMBER = re.compile(r"\d{1,3}|[ivxIVX]{1,4}")
# Texts whose sentence spans are remembered: a node's text is split for its stored sentences and again when
# its layer is summarised; a 100k-token document has about a thousand leaves.
SPLIT_CACHE_TEXTS = 4096


# ------------------------------------------------------------------------------------- sentence splitting


def _period_ends_sentence(text: str, term_start: int, rest: int) -> bool:
    """Whether a single '.' at term_start ends a sentence, given the word before it and what follows it
    (from `rest`, past the white space)."""
    word_start = term_start
    while word_start > 0 and not text[word_start - 1].isspace():  # walk back: O(word), not O(line)
        word_start -= 1
    if word_start == term_start:
        return True
    word = text[word_start:term_start].lstrip("\"'(\u201c\u2018[")
    lower = word.lower()
    if lower in _NEVER_ENDS:
        return False
    if (lower in _BEFORE_NUMBERS or _et_al(text, word_start, lower)) and _REFERENCE_LABEL.match(text, rest):
        return False
    if len(word) == 1 and word.isalpha() and word.isupper():  # an initial: "John F. Kennedy"
        return False
    if _INITIALISM.fullmatch(word):  # dotted initialism: "J.R.R.", "U.S.A"
        return False
    # "1. First item" / "a) ..." at the start of a line is a list marker, not a sentence, and so is a number
    # that opens a sentence of a list run into a paragraph ("... as follows: 1. We propose ... 2. When ...").
    at_line_start = word_start == 0 or text[word_start - 1] == "\n"
    if at_line_start and _LIST_NUMBER.fullmatch(word):
        return False
    if not (word.isdigit() and len(word) <= 2):
        return True
    before = word_start
    while before > 0 and text[before - 1].isspace():
        before -= 1
    return text[before - 1 : before] not in (".", "!", "?", ":")


def _et_al(text: str, word_start: int, lower: str) -> bool:
    """Whether the word at word_start is the 'al' of "et al" ("et. al", "et.al"): after it a citation
    ("Davidson et al. BIBREF9 collected ...", "Zhang et al. [12]", "et al. (2019)") goes on with the
    sentence, while an ordinary sentence may open after it as after any full stop."""
    if lower in ("et.al", "et.-al"):
        return True
    before = text[max(0, word_start - 8) : word_start].split()
    return lower == "al" and bool(before) and before[-1].lower().lstrip("([") in ("et", "et.")


class _QuoteMarks:
    """Where a text's straight quotation marks and blank lines are, found once (when first asked) so that
    telling an open quotation costs a lookup per terminator, not a scan of its paragraph."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._marks: list[int] | None = None
        self._paragraphs: list[int] = []

    def open_at(self, offset: int) -> bool:
        """Whether an odd number of straight marks lie between the paragraph's start and `offset`."""
        if self._marks is None:
            self._marks = [m.start() for m in _STRAIGHT_QUOTE.finditer(self._text)]
            self._paragraphs = [m.end() for m in _BLANK_LINE.finditer(self._text)]
        starts = bisect.bisect_right(self._paragraphs, offset)
        start = self._paragraphs[starts - 1] if starts else 0
        return (bisect.bisect_left(self._marks, offset) - bisect.bisect_left(self._marks, start)) % 2 == 1


def _closed_after(text: str, end: int, term_start: int, quotes: _QuoteMarks) -> int:
    """Where the sentence ending at a terminator (ending at `end`) really ends: past a closing quotation
    mark written after a space: a typographic one, or a straight one that an odd number of straight marks
    before it in the paragraph shows to close a quotation."""
    spaced = _SPACED_CLOSE.match(text, end)
    if not spaced:
        return end
    if text[spaced.end() - 1] == "\u201d" or quotes.open_at(term_start):
        return spaced.end()
    return end


def _terminator_cuts(text: str) -> list[int]:
    cuts = []
    quotes = _QuoteMarks(text)
    for match in checked(_TERMINATOR.finditer(text)):
        end = _closed_after(text, match.end(), match.start(), quotes)
        rest = end
        while rest < len(text) and text[rest].isspace():
            rest += 1
        if rest >= len(text):
            continue
        next_char = text[rest]
        if next_char.islower() and not _CITATION_KEY.match(text, rest):  # "e.g. this", "... and then": goes on
            continue
        marks = text[match.start() : end]
        punct = marks.rstrip("\"'\u201d\u2019\u00bb)] \t")
        if punct == "." and not _period_ends_sentence(text, match.start(), rest):
            continue
        if punct[-1:] in "!?" and marks.rstrip().endswith(_SPEECH_CLOSE) and _SPEECH_TAG.match(text, rest):
            continue
        cuts.append(end)
    return cuts


_QUOTED_BY = ("\u3068", "\u3063")  # と, って: 「すごい！」と言った goes on after the quotation


def _full_stop_cuts(text: str) -> list[int]:
    """Ends of Chinese and Japanese sentences, which no space follows (none in text without those marks),
    except before the particle that says who spoke a Japanese quotation."""
    if not any(mark in text for mark in _FULL_STOP_MARKS):  # a scan at C speed skips most text
        return []
    return [
        match.end()
        for match in checked(_FULL_STOP.finditer(text))
        if match.end() < len(text) and not text.startswith(_QUOTED_BY, match.end())
    ]


def _blank_run(text: str, i: int) -> tuple[int, int, bool]:
    """The whitespace run around the newline at i, as (start, end, continues): whether a sentence goes on
    across it (a PDF page break: no end punctuation before, lower case after). Every newline of one run
    shares the answer, so the caller asks once per run (asking per newline was quadratic in the run)."""
    before = i
    while before > 0 and text[before - 1].isspace():
        before -= 1
    after = i
    while after < len(text) and text[after].isspace():
        after += 1
    if before == 0 or after >= len(text):
        return before, after, False
    last_line = text[text.rfind("\n", 0, before) + 1 : before].strip()
    next_end = text.find("\n", after)
    next_line = text[after : len(text) if next_end < 0 else next_end]
    continues = (
        text[after].islower()
        and text[before - 1] not in ".!?:;\u2026\"'\u201d\u2019)]"
        and (not _STRUCTURAL_LINE.match(last_line) or _wrapped_item(last_line, text.count("\n", before, after)))
        and not is_table_row(last_line)  # a row is a line of its own, whatever follows it
        and not is_table_row(next_line)
    )
    return before, after, continues


# A list item's marker: '- ', '* ', '• ', '1. ', '2) '.
_LIST_ITEM = re.compile(r"(?:[-*+\u2022]|\d{1,3}[.)])\s")


def _wrapped_item(line: str, newlines: int) -> bool:
    """Whether a list item's line may go on, on the next line ("1) Too many people would\nknow."): as in
    Markdown, an item's text wraps onto lines without a marker; a blank line ends it."""
    return newlines == 1 and bool(_LIST_ITEM.match(line))


def _newline_cuts(text: str) -> list[int]:
    """Blank lines always end a sentence; a single newline does before or after structural lines."""
    cuts = []
    run = (0, 0, False)  # the last whitespace run examined by _blank_run
    for match in checked(_NEWLINE.finditer(text)):
        i = match.start()
        prev_start = text.rfind("\n", 0, i) + 1
        prev_line = text[prev_start:i].strip()
        next_end = text.find("\n", i + 1)
        next_line = text[i + 1 : len(text) if next_end < 0 else next_end].strip()
        boundary = (
            not prev_line
            or not next_line
            or prev_line.endswith(":")
            or _STRUCTURAL_LINE.match(prev_line)
            or _STRUCTURAL_LINE.match(next_line)
            or _title_line(prev_line, next_line)
            or _unspaced_title_line(prev_line, next_line)
            or is_table_row(prev_line)
            or is_table_row(next_line)
        )
        # Checked only at a would-be boundary: most newlines in wrapped prose are not one, and this
        # check (a walk over the surrounding blank lines) was a third of splitting such text.
        if boundary:
            if not run[0] <= i < run[1]:
                run = _blank_run(text, i)
            if not run[2]:
                cuts.append(i)
    return cuts


_TABLE_CELL_BREAK = re.compile(r"\s\|\s|^\||\|$")
_TABLE_ROW_LINE = re.compile(r"^[^\n]*?(?:[^\S\n]\|[^\S\n]|^[^\S\n]*\||\|[^\S\n]*$)[^\n]*", re.MULTILINE)
# A table row as the loaders label it under its header ('- Item: Trowel; Notes: Steel blade. Ash handle.'):
# a list item of two labelled cells at least. A value may hold '; ', ': ' or '. '; a label (a column's name,
# MAX_LABEL_CHARS at most, as the loaders take a header's cells) a colon with no space after it ('Time
# (hh:mm)'). Its indent is [^\S\n]*, not \s*: a run of blank lines was walked again from each of its line
# starts (17 s of CPU for 50,000 line breaks).
MAX_LABEL_CHARS = 80  # a column's name, not a cell of prose
LABEL = rf"(?:[^:;\n]|:(?! )){{1,{MAX_LABEL_CHARS}}}"
LABELLED_ROW_LINE = re.compile(rf"^[^\S\n]*[-*] {LABEL}: [^\n]*?; {LABEL}: [^\n]*$", re.MULTILINE)


def column_label(name: str) -> str:
    """A column's name as its row's cells are labelled by it: one holding ': ' ('Cost: GBP') read as a
    shorter name and the start of the value ('Cost: GBP: 4.99' was Cost 'GBP: 4.99', no figure), so its
    qualifier goes in brackets ('Cost (GBP): 4.99'); a semicolon, which separates cells, becomes a comma,
    and a closing colon ('Cost:') is dropped."""
    label = name.strip().rstrip(":").rstrip().replace(";", ",")
    head, colon, tail = label.partition(": ")
    if colon and "(" not in label and ": " not in tail:
        return f"{head} ({tail})"
    return label.replace(": ", ", ")


def is_table_row(line: str) -> bool:
    """A row of a table as the loaders write it ('Ladders | £320', Markdown's '| Books | 3 weeks |'):
    a line of its own, never part of a sentence."""
    return bool(_TABLE_CELL_BREAK.search(line.strip()))


def is_row_line(line: str) -> bool:
    """Whether a line (a sentence) is a whole table row as the loaders write it, labelled or between bars:
    one sentence to its line's end, so what follows it must start a line of its own."""
    return is_table_row(line) or LABELLED_ROW_LINE.fullmatch(line.strip()) is not None


MAX_ROW_LINE_CHARS = 1_000  # a longer line with a bar or labels is prose (a paragraph with one ' | '): read
# as sentences, not as one 'row' a megabyte long


def _row_line_spans(text: str) -> list[Span]:
    """(start, end) of each line of `text` that is a table row, labelled or of cells between bars."""
    if "|" not in text and "; " not in text:
        return []
    found = [match.span() for match in LABELLED_ROW_LINE.finditer(text)] if "; " in text else []
    if "|" in text:
        found += [match.span() for match in _TABLE_ROW_LINE.finditer(text)]
    return sorted(span for span in found if span[1] - span[0] <= MAX_ROW_LINE_CHARS)


def _whole_rows(text: str, cuts: list[int]) -> list[int]:
    """Cuts less those inside a table row's line: a row is one quotable unit, read alone under its
    header, and a cell holding a full stop ('Notes: Steel blade. Ash handle') cut it in two, the second
    half a 'sentence' with no column named."""
    rows = _row_line_spans(text)
    if not rows:
        return cuts
    starts = [start for start, _ in rows]
    kept = []
    for cut in cuts:
        at = bisect.bisect_left(starts, cut) - 1
        if at < 0 or not rows[at][0] < cut < rows[at][1]:
            kept.append(cut)
    return kept


TITLE_MAX_CHARS = 80
TITLE_SHORTER_THAN = 0.6  # a title line is well short of the prose line after it
_OPENING_MARKS = "\"'\u201c\u2018\u00ab\u201e([\u300c\u300e"  # what a sentence may open with before its capital


def _title_line(line: str, following: str) -> bool:
    """A title or heading on a line of its own in extracted text (a PDF's, where nothing marks it):
    short, no closing punctuation, and followed by a line that starts a sentence and is much longer,
    or in title case. A wrapped prose line runs nearly to the margin, so it is never this short. The
    sentence after it may open with a quotation mark or bracket (a story's first line of dialogue)."""
    opening = following.lstrip(_OPENING_MARKS)
    if not opening[:1].isupper() or len(line) > TITLE_MAX_CHARS or line[-1:] in ".!?,;:\"'”’)]":
        return False
    if len(line) <= TITLE_SHORTER_THAN * len(following):
        return True
    words = [w for w in line.split() if w[:1].isalpha()]
    capitalised = sum(w[:1].isupper() for w in words if len(w) > 3)
    return len(words) >= 2 and capitalised >= 2 and capitalised == sum(len(w) > 3 for w in words)


_UNSPACED_CLOSING = (
    "\u3002\uff61\uff0e\uff01\uff1f\uff0c\uff1b\uff1a\u3001\u300d\u300f\uff09\u3011\u300b\u201d"
)


def _unspaced_title_line(line: str, following: str) -> bool:
    """`_title_line` for Chinese and Japanese, which have no capitals to say where a sentence starts: a
    line of those letters, well short of the one after it and with no closing punctuation."""
    if line.isascii() or not (_UNSPACED_LETTER.search(line) and _UNSPACED_LETTER.search(following)):
        return False
    if len(line) > TITLE_MAX_CHARS or line[-1:] in ".!?,;:\"'”’)]" + _UNSPACED_CLOSING:
        return False
    return len(line) <= TITLE_SHORTER_THAN * len(following)


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


def split_sentences(text: str, code: bool = False) -> list[Span]:
    """Sentence spans (start, end) in `text`, trimmed of whitespace, covering all its non-space characters.

    Ends at . ! ? and ellipses (with any closing quotes or brackets, a straight one set apart by a space
    when it closes an open quotation), except after abbreviations, initials and list numbers, before a
    citation or label after "et al." or "Fig." ("et al. [12]", "Fig. 3"), and before a speaker's tag after
    a speech ('"Wait!" Ninon said.'); decimals never match because a terminator must be followed by
    whitespace. Chinese and
    Japanese full stops (。！？) end one with no space after. Blank lines, and newlines around headings, list
    items and table rows, are boundaries too, and so is the start of each speaker's turn in a transcript
    (`transcript.turns`: a turn line often ends without a full stop). With `code` (a leaf that lies wholly
    inside a block of code, `Chunk.code`) each line is one.
    """
    return list(_remembered_spans(text, code))


@functools.lru_cache(maxsize=SPLIT_CACHE_TEXTS)
def _remembered_spans(text: str, code: bool = False) -> tuple[Span, ...]:
    """`split_sentences`' spans, remembered by text: a node is split for its stored sentences and again for
    its layer's summaries (the second split cost ~0.5 CPU s of a 100k-token ingest)."""
    turn_cuts = [start for start, _ in turns(text)]
    cuts = _whole_rows(text, _fenceless(text, _terminator_cuts(text) + _full_stop_cuts(text) + _newline_cuts(text)))
    return tuple(_trimmed_spans(text, _by_code_lines(text, _outside_labels(text, cuts, turn_cuts) + turn_cuts, code)))


# White space short of a line break, then a fence's marks: a match stops at the line's end, so a run of
# blank lines with a cut at each is read once, not once a cut (quadratic: 42 s of CPU on 100,000 of them).
_FENCE_RUN = re.compile(r"[^\S\n]*(?:```|~~~)")


def _fenceless(text: str, cuts: list[int]) -> list[int]:
    """Cuts less those after which a sentence would open with a fence's marks inside a line ('It was
    dawn. ```', a paragraph's wrapped line that holds them, `load._unfenced`): that sentence, opening a
    leaf, would pose as a fence to `code_lines`; the marks stay with the sentence before."""
    if "```" not in text and "~~~" not in text:
        return cuts
    return [
        cut
        for cut in cuts
        if not (_FENCE_RUN.match(text, cut) and text[cut - 1 : cut] != "\n")
    ]


# A code fence's line (``` or ~~~, up to three spaces in: a tab reaches four columns, as in CommonMark), as
# the loaders keep it. A line indented further is code or prose, never a fence (`load._unfenced`).
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")


@functools.lru_cache(maxsize=SPLIT_CACHE_TEXTS)
def code_lines(text: str, code: bool = False) -> tuple[Span, ...]:
    """(start, end) of each line of code in `text`: a fence line, a line between fences, and an indented
    line (the loaders trim every line's indentation but a code block's, so an indented line is code even
    in a chunk that begins inside a fence; a text's first line is indented only where trimmed it would
    pose as a fence, `load._unfenced`). Each is a sentence of its own (`split_sentences`): Python joined
    across its lines, or cut at a full stop inside a string, is other code. With `code` (a leaf that lies
    wholly inside a block, so holds no fence to tell it by: `Chunk.code`) every line is code."""
    if code:
        return tuple(line_spans(text))
    if "```" not in text and "~~~" not in text and "\n " not in text and "\n\t" not in text:
        return ()
    lines = text.split("\n")
    found: list[Span] = []
    reader = FenceReader(_open_at_start(lines))  # a fence inside a list item is one too (CommonMark 5.2)
    start = 0
    for line in lines:
        end = start + len(line)
        if reader.read(line) != "text" or (line[:1] in (" ", "\t") and line.strip()):
            found.append((start, end))
        start = end + 1
    return tuple(found)


def _open_at_start(lines: list[str]) -> str | None:
    """The fence a text begins inside, as a leaf that opens in the middle of a long block of code does:
    its first fence line closes that block, which the loaders write so that it shows (`load._normalise`
    sets an opening fence apart from the text before it and begins its code at once, and ends the code
    at the closing fence, set apart from what follows): a bare fence line that opens the text, or follows
    a line of it, and comes before a blank line or the text's end. None for a text that begins outside code."""
    first = next((i for i, line in enumerate(lines) if _FENCE_LINE.match(line)), None)
    if first is None or (first and not lines[first - 1].strip()):
        return None
    bare = _FENCE_LINE.match(lines[first])
    if bare is None or lines[first].strip() != bare.group(1):  # an info string ('```python') opens a block
        return None
    closes = first + 1 == len(lines) or not lines[first + 1].strip()
    return bare.group(1) if closes else None


def line_spans(text: str) -> list[Span]:
    """(start, end) of each line of `text`, its line breaks left out."""
    spans, start = [], 0
    for line in text.split("\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def in_code(text: str, offset: int, code: bool = False) -> bool:
    """Whether `offset` of `text` lies on a line of code (`code_lines`; all of a `code` text's are)."""
    lines = code_lines(text, code)
    at = bisect.bisect_right(lines, (offset, len(text) + 1)) - 1
    return at >= 0 and lines[at][0] <= offset <= lines[at][1]


def _by_code_lines(text: str, cuts: list[int], code: bool = False) -> list[int]:
    """Sentence cuts with each line of code (`code_lines`) one sentence: no cut inside one, a cut at both
    of its ends."""
    lines = code_lines(text, code)
    if not lines:
        return cuts
    kept = [cut for cut in cuts if not _inside_line(lines, cut)]
    return kept + [edge for line in lines for edge in line]


def _inside_line(lines: tuple[Span, ...], offset: int) -> bool:
    at = bisect.bisect_right(lines, (offset, offset)) - 1
    return at >= 0 and lines[at][0] < offset < lines[at][1]


MAX_LABEL_SCAN = 80  # characters of a turn's first line that can hold its speaker's label


def _outside_labels(text: str, cuts: list[int], turn_cuts: list[int]) -> list[int]:
    """The cuts that fall outside each turn's speaker's label: a play's "OPHELIA. Good my lord" is one
    sentence, the name's full stop ending none."""
    ends = [(start, start + label_end(text[start : start + MAX_LABEL_SCAN])) for start in turn_cuts]
    inside = {at for start, end in ends for at in range(start + 1, end + 1)}
    return [cut for cut in cuts if cut not in inside] if inside else cuts


# ------------------------------------------------------------------------------------------ token counting


class _Counter:
    """Counts pieces of text, in one batch where possible; `overhead` is what an empty string counts."""

    def __init__(self, count_tokens: CountTokens, count_tokens_batch: CountTokensBatch | None):
        self.one = count_tokens
        self.batch = count_tokens_batch
        self.overhead = count_tokens("")

    def many(self, texts: list[str]) -> list[int]:
        """Counts in slices of CHECK_EVERY texts, with a build checkpoint before each."""
        counts: list[int] = []
        for begin in range(0, len(texts), CHECK_EVERY):
            checkpoint()
            piece = texts[begin : begin + CHECK_EVERY]
            counts += [int(n) for n in self.batch(piece)] if self.batch is not None else map(self.one, piece)
        return counts

    def content(self, texts: list[str]) -> list[int]:
        """Token counts without the fixed per-call overhead, so counts of neighbouring pieces add up."""
        return [max(n - self.overhead, 0) for n in self.many(texts)]


# ------------------------------------------------------------------------------------------------ limits

# A section that fits whole into the chunk so far joins it; one that does not starts a new chunk once the
# chunk so far has reached this share of its budget. So a file of many tiny sections gives chunks of the
# normal size, not one per heading, and chunk count follows the text's size.
MERGE_BELOW = 0.5
_NO_CHAR_LIMIT = 1 << 62


@dataclass(frozen=True)
class _Limits:
    """A chunk's two budgets: model tokens and characters (honest counts alone can be fooled)."""

    tokens: int
    chars: int

    def fits(self, span: Span, count: int) -> bool:
        return count <= self.tokens and span[1] - span[0] <= self.chars

    def filled(self, span: Span, count: int) -> float:
        """The larger share of either budget this span uses."""
        return max(count / self.tokens, (span[1] - span[0]) / self.chars)


def _counted(text: str, spans: list[Span], limits: _Limits, counter: _Counter) -> list[int]:
    """Token counts of spans; one longer than the character limit gets its length instead (no span counts
    more tokens than it has characters, and it is split anyway), so a 5-million-letter "word" is never
    tokenised whole."""
    counts = [b - a for a, b in spans]
    short = [i for i, (a, b) in enumerate(spans) if b - a <= limits.chars]
    for i, count in zip(
        short, counter.content([text[spans[i][0] : spans[i][1]] for i in short]), strict=True
    ):
        counts[i] = count
    return counts


# An item on its way into a chunk: span, token count, heading path, and for the first item of a section
# the whole section's (end offset, token count), else None.
_Item = tuple[Span, int, tuple[str, ...], tuple[int, int] | None]


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
    text: str, span: Span, count: int, limits: _Limits, counter: _Counter
) -> list[tuple[Span, int]]:
    """Cut an over-long span into pieces sized by its tokens per character, preferring word boundaries.

    All pieces are counted in one batch and any still over a limit are cut again, so a giant run of words or
    a space-free string (a DNA sequence, a base64 blob) costs a few tokenizer calls per chunk rather than
    one per word or per character. Pieces are also kept within the character limit.
    """
    start, end = span
    by_tokens = (end - start) * limits.tokens * 0.9 / max(count, 1)
    step = max(1, int(min(by_tokens, limits.chars * 0.9)))
    spans: list[Span] = []
    position = start
    while position < end:
        stop = end if end - position <= step else _cut_near(text, position + step // 2, position + step)
        spans.extend(_trimmed_spans(text[position:stop], [], position))
        position = stop
    out: list[tuple[Span, int]] = []
    for piece, piece_count in zip(spans, counter.content([text[a:b] for a, b in spans]), strict=True):
        if limits.fits(piece, piece_count):
            out.append((piece, piece_count))
        elif piece[1] - piece[0] == 1:
            raise ValueError(f"a single character counts more than the chunk limit of {limits.tokens} tokens")
        else:
            out.extend(_proportional_spans(text, piece, piece_count, limits, counter))
    return out


def _common_heading(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    """The heading path two parts share: a chunk that spans sections sits under their common parent."""
    shared = 0
    while shared < min(len(a), len(b)) and a[shared] == b[shared]:
        shared += 1
    return a[:shared]


def _pack(items: list[_Item], limits: _Limits) -> list[tuple[Span, int, tuple[str, ...]]]:
    """Greedily join consecutive items while both budgets hold (each must fit alone).

    At a section start the chunk so far ends if the section does not fit whole and the chunk is at least
    MERGE_BELOW full; otherwise the section joins it, and the chunk's heading becomes the path the parts
    share (each part's own heading line stays in its text).
    """
    packed: list[tuple[Span, int, tuple[str, ...]]] = []
    current: Span | None = None
    total = 0
    heading: tuple[str, ...] = ()
    for span, count, part_heading, section in items:
        if current is not None:
            joined = (current[0], span[1])
            full_enough = (
                section is not None
                and not limits.fits((current[0], section[0]), total + section[1])
                and limits.filled(current, total) >= MERGE_BELOW
            )
            if not full_enough and limits.fits(joined, total + count):
                current, total = joined, total + count
                heading = _common_heading(heading, part_heading)
                continue
            packed.append((current, total, heading))
        current, total, heading = span, count, part_heading
    if current is not None:
        packed.append((current, total, heading))
    return packed


def _fit(text: str, span: Span, count: int, limits: _Limits, counter: _Counter) -> list[tuple[Span, int]]:
    """Split a span that is over a limit into pieces within both: at clauses, then at words (or characters)."""
    if limits.fits(span, count):
        return [(span, count)]
    clauses = _clause_spans(text, span)
    if 1 < len(clauses) <= max(2, count // 4):  # real clauses, not a comma-separated list of numbers
        pieces: list[_Item] = []
        for part, part_count in zip(clauses, _counted(text, clauses, limits, counter), strict=True):
            pieces.extend((p, n, (), None) for p, n in _fit(text, part, part_count, limits, counter))
        return [(p, n) for p, n, _ in _pack(pieces, limits)]
    pieces = [(p, n, (), None) for p, n in _proportional_spans(text, span, count, limits, counter)]
    return [(p, n) for p, n, _ in _pack(pieces, limits)]


# ------------------------------------------------------------------------------------------------ chunking


def _heading_runs(doc: LoadedDocument) -> list[tuple[int, int, tuple[str, ...]]]:
    """Consecutive sections with the same heading path merged: the units that short-section merging joins."""
    runs: list[tuple[int, int, tuple[str, ...]]] = []
    for section in doc.sections:
        if runs and runs[-1][2] == section.heading and runs[-1][1] == section.start:
            runs[-1] = (runs[-1][0], section.end, section.heading)
        else:
            runs.append((section.start, section.end, section.heading))
    if not runs and doc.text:
        runs.append((0, len(doc.text), ()))
    return runs


def _speaker_at(spoken: list[tuple[int, str]], offset: int) -> str | None:
    """Who speaks at `offset` of a transcript: the speaker of the last turn opening at or before it."""
    position = bisect.bisect_right([start for start, _ in spoken], offset) - 1
    return spoken[position][1] if position >= 0 else None


def _turn_runs(
    text: str, runs: list[tuple[int, int, tuple[str, ...]]]
) -> tuple[list[tuple[int, int, tuple[str, ...]]], list[tuple[int, str]]]:
    """A transcript's runs cut at each speaker's turn, the speaker added to the turn's heading path, and
    the turns (`transcript.turns`); other text's runs as they are. So a chunk ends at a turn where it can
    (a turn is packed like a section), and a chunk within one turn is headed by its speaker. A reply to a
    question turn ('Q: How were they rescued?' then 'A: ...') is not cut from it, so the two share a chunk
    where they fit."""
    spoken = turns(text)
    if not spoken:
        return runs, spoken
    starts = [start for start, _ in spoken]
    starts = [b for a, b in zip([-1, *starts[:-1]], starts, strict=True) if a < 0 or not _asks(text[a:b])]
    out: list[tuple[int, int, tuple[str, ...]]] = []
    for start, end, heading in runs:
        inside = starts[bisect.bisect_right(starts, start) : bisect.bisect_left(starts, end)]
        cuts = [start, *inside, end]
        for a, b in zip(cuts, cuts[1:], strict=False):
            speaker = _speaker_at(spoken, a)
            out.append((a, b, (*heading, speaker) if speaker else heading))
    return out, spoken


def _asks(turn: str) -> bool:
    """Whether a turn's last line of words (not a subtitle cue's number or timing line) is a question."""
    lines = spoken_lines(turn)
    return bool(lines) and lines[-1][1].rstrip().endswith("?")


def _opening_speakers(
    text: str, chunks: list[tuple[Span, int, tuple[str, ...]]], spoken: list[tuple[int, str]]
) -> list[tuple[Span, int, tuple[str, ...]]]:
    """A transcript's chunk that opens inside a turn (a long turn's second part) is headed by that turn's
    speaker, so the speaker of its first lines, which carry no label, is still known."""
    if not spoken:
        return chunks
    out = []
    for (a, b), count, heading in chunks:
        lines = spoken_lines(text[a:b])  # a subtitle cue's number and timing lines say nothing
        speaker = None if not lines or speaker_of(lines[0][1]) else _speaker_at(spoken, a)
        if speaker and heading[-1:] != (speaker,):
            heading = (*heading, speaker)
        out.append(((a, b), count, heading))
    return out


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
    max_chars: int | None = None,
) -> list[Chunk]:
    """Leaf chunks of about `max_tokens` tokens of whole sentences; none over `hard_limit` tokens nor
    `max_chars` characters (guaranteed), and chunk count bounded by the text's size."""
    limit = max_tokens if hard_limit is None else min(max_tokens, hard_limit)
    counter = _Counter(count_tokens, count_tokens_batch)
    if limit < 1:
        raise ValueError(f"chunk limit must be at least one token, got {limit}")
    if max_chars is not None and max_chars < 1:
        raise ValueError(f"chunk limit must be at least one character, got {max_chars}")
    limits = _Limits(limit, _NO_CHAR_LIMIT if max_chars is None else max_chars)

    runs, spoken = _turn_runs(doc.text, _heading_runs(doc))
    run_sentences = [
        [(a + start, b + start) for a, b in split_sentences(doc.text[start:end])] for start, end, _ in runs
    ]
    flat = [span for spans in run_sentences for span in spans]
    counts = iter(_counted(doc.text, flat, limits, counter))

    items: list[_Item] = []
    for (_, _, heading), spans in zip(runs, run_sentences, strict=True):
        fitted = [
            piece for span in checked(spans) for piece in _fit(doc.text, span, next(counts), limits, counter)
        ]
        fitted = _fences_held(doc.text, fitted, limits)
        if fitted:
            section = (fitted[-1][0][1], sum(count for _, count in fitted))
            items += [
                (piece, count, heading, None if i else section) for i, (piece, count) in enumerate(fitted)
            ]

    chunks = _opening_speakers(doc.text, _verified(doc.text, _pack(items, limits), limits, counter), spoken)
    starts = [s.start for s in doc.sections]
    code_runs = _code_runs(doc.text)
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
            code=_wholly_code(doc.text, code_runs, a, b),
        )
        for i, ((a, b), n, h) in enumerate(chunks)
    ]
    log.info(
        "chunked %s: %d sentences, %d sections -> %d chunks (limits %d tokens, %d chars)",
        doc.name,
        len(flat),
        len(runs),
        len(result),
        limit,
        limits.chars,
    )
    return result


def _code_runs(text: str) -> list[Span]:
    """The document's runs of code lines (`code_lines`), lines apart only by blank lines joined: a fenced
    block's lines, an indented block's."""
    runs: list[Span] = []
    for start, end in code_lines(text):
        if runs and not text[runs[-1][1] : start].strip():
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
    return runs


def _wholly_code(text: str, runs: list[Span], start: int, end: int) -> bool:
    """Whether text[start:end], a leaf, lies wholly inside a run of code and holds no fence line: it has
    nothing by which `code_lines` could tell it is code (its unindented lines read as prose), so the leaf
    carries it (`Chunk.code`). A leaf that holds a fence is read by that fence."""
    at = bisect.bisect_right(runs, (start, len(text) + 1)) - 1
    if at < 0 or not (runs[at][0] <= start and end <= runs[at][1]):
        return False
    return not any(_FENCE_LINE.match(line) for line in text[start:end].split("\n"))


def _fences_held(text: str, pieces: list[tuple[Span, int]], limits: _Limits) -> list[tuple[Span, int]]:
    """Pieces with each fence line held to the code it opens or closes, where both fit a chunk: an opening
    fence to the line after it, a closing one to the line before it. So no leaf ends on the fence that
    opens a block nor begins on the one that closes it, and a leaf that begins inside a block holds the
    fence that closes it, by which `code_lines` reads it (`_open_at_start`)."""
    if "```" not in text and "~~~" not in text:
        return pieces
    out: list[tuple[Span, int]] = []
    opening = False  # the last piece kept is a fence line that opens a block
    for span, count in pieces:
        role = _fence_role(text, span)
        # a piece that opens with a fence's marks but is no fence line ('The lamp. ```', an indented line
        # kept as typed) would pose as one at a leaf's start: it stays with the piece before it
        poses = role is None and _FENCE_LINE.match(text, span[0], span[1]) is not None
        if out and (opening or poses or role == "close") and limits.fits((out[-1][0][0], span[1]), out[-1][1] + count):
            out[-1] = ((out[-1][0][0], span[1]), out[-1][1] + count)
        else:
            out.append((span, count))
        opening = role == "open"
    return out


def _fence_role(text: str, span: Span) -> str | None:
    """Whether text[span] is a whole line that is a fence, and if so whether it opens a block ("open") or
    closes one ("close"), read as the loaders write them: an opening fence after a blank line or at the
    text's start, a closing one right after a line of code."""
    start, end = span
    if (start and text[start - 1] != "\n") or (end < len(text) and text[end] != "\n"):
        return None
    line = text[start:end]
    marker = _FENCE_LINE.match(line)
    if marker is None:
        return None
    previous = text[text.rfind("\n", 0, max(start - 1, 0)) + 1 : start - 1] if start else ""
    return "close" if line.strip() == marker.group(1) and previous.strip() else "open"


def _verified(
    text: str, pieces: list[tuple[Span, int, tuple[str, ...]]], limits: _Limits, counter: _Counter
) -> list[tuple[Span, int, tuple[str, ...]]]:
    """Count every packed chunk as a whole; re-split any that a non-additive tokenizer pushed over limit."""
    actual = counter.content([text[a:b] for (a, b), _, _ in pieces])
    out: list[tuple[Span, int, tuple[str, ...]]] = []
    for (span, _, heading), count in zip(pieces, actual, strict=True):
        if limits.fits(span, count):
            out.append((span, count, heading))
            continue
        log.debug("chunk %s counted %d > %d as a whole; splitting it again", span, count, limits.tokens)
        out.extend(
            (piece, n, heading) for piece, n in _proportional_spans(text, span, count, limits, counter)
        )
    return out
