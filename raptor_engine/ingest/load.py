"""Load an uploaded file (bytes + filename) into a `LoadedDocument`: plain text plus where each part came from.

The first RAPTOR step. Every format ends as a list of blocks (paragraph-ish text with a page and a heading
path) that `_assemble` joins with blank lines, so whitespace is normalised *before* offsets are taken and
section spans always index the returned text exactly. Anything we cannot read becomes an `IngestError`
whose reason is one sentence a Discord user can act on.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import hashlib
import html
import io
import itertools
import logging
import os
import re
import stat
import unicodedata
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..errors import IngestError
from ..types import LoadedDocument, Section, counted
from .chunk import MAX_LABEL_CHARS, column_label
from .fences import FenceReader
from .pdf_sight import blank_unseen_text
from .stylesheets import hide_styled, linked_sheets

log = logging.getLogger(__name__)

# The info string of a code file's fence: the language a reader (and a renderer) reads its lines in.
CODE_LANGUAGES: dict[str, str] = {
    ".py": "python", ".js": "javascript", ".ts": "typescript", ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c", ".cpp": "cpp", ".rb": "ruby", ".sh": "sh", ".sql": "sql", ".yaml": "yaml",
    ".yml": "yaml", ".toml": "toml", ".json": "json", ".ini": "ini", ".cfg": "ini", ".log": "log",
}
SUPPORTED_EXTENSIONS: dict[str, str] = {
    ".txt": "txt",
    ".md": "md",
    ".markdown": "md",
    ".pdf": "pdf",
    ".docx": "docx",
    ".odt": "odt",  # OpenDocument text (LibreOffice, Google Docs' export): `books.read_odt`
    ".ott": "odt",  # an OpenDocument text template: the same parts as an .odt
    ".fodt": "odt",  # a flat OpenDocument text: the same XML as an .odt's parts, in one file, not zipped
    ".epub": "epub",  # an e-book (EPUB 2 or 3) without DRM, its chapters in reading order: `books.read_epub`
    ".html": "html",
    ".htm": "html",
    ".vtt": "subtitles",  # WebVTT, as Teams, Zoom and YouTube export a meeting's or a video's words
    ".srt": "subtitles",
    ".csv": "csv",  # a spreadsheet's export: each row read under its column names
    ".tsv": "csv",
    ".eml": "email",  # an email saved from a mail program: its text body, its encoding (base64, quoted-printable) undone
    ".ipynb": "notebook",  # a Jupyter notebook: its Markdown cells as Markdown, its code cells as fenced code
    # Source code and configuration: the whole file one fenced block in its language (`CODE_LANGUAGES`)
    **{ext: "code" for ext in CODE_LANGUAGES if ext != ".log"},
    ".log": "log",  # a program's log: lines, each read as one (a fenced block without a language's name)
}

# The supported types as people name them, in the order every list of them shows (the empty knowledge
# base's sentence, `/kb add`, a refused file's line, `raptor ingest --help`, the docs): each extension of
# SUPPORTED_EXTENSIONS once (tests/test_file_kinds.py).
FILE_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("text", (".txt",)),
    ("Markdown", (".md", ".markdown")),
    ("PDF", (".pdf",)),
    ("Word", (".docx",)),
    ("ODT", (".odt", ".ott", ".fodt")),  # OpenDocument text
    ("EPUB", (".epub",)),
    ("HTML", (".html", ".htm")),
    ("CSV", (".csv", ".tsv")),
    ("subtitle", (".vtt", ".srt")),
    ("email", (".eml",)),
    ("notebook", (".ipynb",)),
    ("code", (".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".h", ".cpp", ".rb", ".sh", ".sql")),
    ("config", (".yaml", ".yml", ".toml", ".json", ".ini", ".cfg")),
    ("log", (".log",)),
)


def _and_list(items: list[str], conjunction: str = "and") -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def file_kinds(conjunction: str = "and", *, capital: bool = False) -> str:
    """The supported types in a few words, for sentences people read at a glance: "text, Markdown, PDF,
    Word, ... and log files" ("... or log file" with "or"; "Text, ..." with `capital`, a description
    that opens with it)."""
    files = "files" if conjunction == "and" else "file"
    kinds = f"{_and_list([kind for kind, _ in FILE_KINDS], conjunction)} {files}"
    return kinds[0].upper() + kinds[1:] if capital else kinds


def file_extensions() -> str:
    """Every supported extension, in the kinds' order and nothing else (".txt .md .markdown .pdf ..."): a
    refused file's line, one sentence where the person looks for their file's extension."""
    return " ".join(extension for _, extensions in FILE_KINDS for extension in extensions)


def file_types() -> str:
    """Every supported extension, grouped by kind: "text (.txt), Markdown (.md .markdown), ..."; for a
    refused file's line and the docs, where someone looks for one extension."""
    return _and_list([f"{kind} ({' '.join(extensions)})" for kind, extensions in FILE_KINDS])


MAX_NAME_CHARS = 120
# A .docx may not unpack to more than this, nor compress better than this ratio (zip-bomb guard).
DOCX_MAX_UNCOMPRESSED = 200 * 1024 * 1024
DOCX_MAX_RATIO = 100.0
DOCX_MAX_ENTRIES = 5000
# Parts of a .docx that python-docx parses as XML (their unpacked size and elements are capped).
_DOCX_XML_SUFFIXES = (".xml", ".rels")
# Word paragraphs, runs, tables and cells: what python-docx turns into Python objects one by one. Any
# namespace prefix (or none: a default namespace) names them; "w:" is only Word's habit.
_DOCX_ELEMENT = re.compile(rb"<(?:[^\s<>/:!?=\"']++:)?(?:p|r|tbl|tr|tc)[\s>/]")
# The encoding an XML declaration names ('<?xml version="1.0" encoding="UTF-7"?>').
_XML_ENCODING = re.compile(rb"<\?xml[^>]{0,200}?\sencoding\s*=\s*[\"']([A-Za-z0-9._:\-]{1,40})[\"']")
# Byte-order marks, then the first character '<' without one, as the XML spec's appendix F detects them.
_XML_BYTE_ORDERS = (
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\xfe\xff", "utf-16"),
    (b"\xff\xfe", "utf-16"),
    (b"\x00\x00\x00<", "utf-32-be"),
    (b"<\x00\x00\x00", "utf-32-le"),
    (b"\x00<", "utf-16-be"),
    (b"<\x00", "utf-16-le"),
)
_XML_HEAD = 256  # bytes read first from a .docx part to tell its encoding
_XML_DECLARATIONS = (b"<!DOCTYPE", b"<!ENTITY")
_STREAM_BLOCK = 1 << 20  # bytes unpacked at a time when scanning a .docx part
# HTML start tags: what BeautifulSoup turns into Python objects (about 1 kB each).
_HTML_TAG = re.compile(r"<[A-Za-z]")
# Share of a decoded text file that may be control / private-use characters before we call it binary.
BINARY_CHAR_RATIO = 0.10

_UNNAMED = "(unnamed file)"
UNTITLED = "untitled"  # the name of a file whose name was only its extension


@dataclass(frozen=True)
class LoadLimits:
    """Caps that keep reading a hostile file bounded; each refusal names the cap it hit.

    The parse also runs in a worker process with a memory limit and a deadline (`parse_worker`); these
    caps turn the common bombs into a specific sentence before that backstop is reached.
    """

    max_expanded_bytes: int = 32 * 1024 * 1024  # a PDF stream or a .docx's, .odt's or .epub's XML, unpacked
    max_pages: int = 2000  # PDF pages
    max_elements: int = 200_000  # HTML tags; Word paragraphs, runs, tables, rows and cells
    max_text_chars: int = 10_000_000  # extracted text of one document


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):g}"


def _too_expanded(name: str, limits: LoadLimits) -> IngestError:
    return IngestError(name, f"expands to more than {_mb(limits.max_expanded_bytes)} MB when unpacked.")


def _too_much_text(name: str, limits: LoadLimits) -> IngestError:
    return IngestError(name, f"holds more than {limits.max_text_chars:,} characters of text, over the limit.")


@dataclass
class _Block:
    """A paragraph-like piece of a document before assembly."""

    text: str
    page: int | None = None
    heading: tuple[str, ...] = ()
    notice: str = ""  # for the uploader: what of the file could not be read (LoadedDocument.notices)
    marked_code: bool = False  # Markdown's indented code blocks stand between `_CODE_MARK` lines


# ---------------------------------------------------------------------------------------------- names


def safe_filename(name: str) -> str:
    """A display name safe to show and store: NFC, no directories, '..', control or invisible characters; at most
    120 chars."""
    # NFC first: "café" composed and decomposed (macOS writes the latter) is one name to show and to forget.
    base = unicodedata.normalize("NFC", name or "").replace("\\", "/").split("/")[-1]
    base = strip_invisible("".join(ch for ch in base if ch.isprintable() or ch.isspace()))
    while ".." in base:
        base = base.replace("..", ".")
    # Leading dots and spaces go together: ". .txt" must not leave ".txt" for a second call to strip.
    base = re.sub(r"\s+", " ", base)
    bare = re.sub(r"^[\s.]+", "", base).strip()
    if bare != base.strip() and "." not in bare and f".{bare.lower()}" in SUPPORTED_EXTENSIONS:
        bare = f"{UNTITLED}.{bare}"  # a name that is only an extension (".md") keeps its type
    base = bare
    if not base:
        raise IngestError(_UNNAMED, "has no usable file name.")
    if len(base) > MAX_NAME_CHARS:
        stem, ext = os.path.splitext(base)
        if len(ext) > 16:
            ext = ""
        base = stem[: MAX_NAME_CHARS - len(ext)].rstrip() + ext
    return base


def _extension(name: str) -> str:
    return os.path.splitext(name)[1].lower()


# Kinds people upload that are not read, each with what it is and how to save it as a kind that is: a
# sentence more use than "unsupported" (a spreadsheet's cells, a slide's text boxes have no reading order
# this reader could honestly give; an old binary format needs its program to open it).
_UNREAD_KINDS: dict[str, tuple[str, str]] = {
    **dict.fromkeys((".ods", ".ots", ".fods"), ("an OpenDocument spreadsheet", "save each sheet as CSV")),
    **dict.fromkeys((".odp", ".otp", ".fodp"), ("an OpenDocument presentation", "export it as PDF")),
    **dict.fromkeys((".odg", ".otg", ".fodg"), ("an OpenDocument drawing", "export it as PDF")),
    **dict.fromkeys((".xlsx", ".xlsm", ".xls"), ("an Excel spreadsheet", "save each sheet as CSV")),
    **dict.fromkeys((".pptx", ".ppt"), ("a PowerPoint presentation", "export it as PDF")),
    ".doc": ("an old-style Word document", "save it as .docx"),
    ".rtf": ("an RTF document", "save it as .docx"),
    ".pages": ("an Apple Pages document", "export it as .docx or PDF"),
    ".mobi": ("a Kindle e-book", "convert it to EPUB"),
    ".azw3": ("a Kindle e-book", "convert it to EPUB"),
}


def _format_for(name: str) -> str:
    ext = _extension(name)
    if ext in _UNREAD_KINDS:
        what, how = _UNREAD_KINDS[ext]
        raise IngestError(name, f"is {what} ({ext}), which cannot be read here; {how} to add it.")
    if ext not in SUPPORTED_EXTENSIONS:
        shown = ext or "no extension"
        raise IngestError(name, f"has an unsupported file type ({shown}); supported types are {file_extensions()}.")
    return SUPPORTED_EXTENSIONS[ext]


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def _check_size(name: str, size: int, max_bytes: int | None) -> None:
    if size <= 0:
        raise IngestError(name, "is empty.")
    if max_bytes is not None and size > max_bytes:
        raise IngestError(name, f"is {_megabytes(size)}, over the {_megabytes(max_bytes)} limit.")


def check_upload(filename: str, size: int, max_bytes: int) -> None:
    """Refuse an attachment from its metadata alone, before spending bandwidth on downloading it."""
    name = safe_filename(filename)
    _format_for(name)
    _check_size(name, size, max_bytes)


def read_local_file(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """A local file's bytes for `raptor ingest`, read at most `max_bytes` + 1 bytes deep.

    Only regular files (or links to them) are read: a device (/dev/zero), a pipe or a socket has no end
    or blocks forever. The size is checked before reading and again while reading, so a file that
    grows, or lies about its size (/proc), cannot be pulled whole into memory.
    """
    name = safe_filename(os.fspath(path))
    try:
        # O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever before fstat can refuse it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except IsADirectoryError:
        raise IngestError(name, "is a folder, not a file.") from None
    except OSError as exc:
        raise IngestError(name, f"cannot be opened ({exc.strerror or exc}).") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IngestError(name, "is a folder, not a file.")
        raise IngestError(name, "is not a regular file (a device, pipe or socket); give a file on disk.")
    with os.fdopen(fd, "rb", buffering=0) as file:
        _check_size(name, max(info.st_size, 1), max_bytes)
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while block := file.read(min(_STREAM_BLOCK, max_bytes + 1 - size)):
            chunks.append(block)
            size += len(block)
            if size > max_bytes:
                raise IngestError(name, f"is larger than the {_megabytes(max_bytes)} limit.")
    return b"".join(chunks)


# ----------------------------------------------------------------------------------------- entry point

# Readers of the formats whose module builds on this one (`books`: .odt, .epub), by format. Each adds
# itself when imported, which the package's __init__ does, so they are here whenever this module is.
_ZIP_READERS: dict[str, Callable[[str, bytes, LoadLimits], list[_Block]]] = {}


def add_reader(fmt: str, reader: Callable[[str, bytes, LoadLimits], list[_Block]]) -> None:
    """Read `fmt` (a value of SUPPORTED_EXTENSIONS) with `reader`."""
    _ZIP_READERS[fmt] = reader


def load_document(
    filename: str, data: bytes, *, max_bytes: int | None = None, limits: LoadLimits | None = None
) -> LoadedDocument:
    """Turn an upload into text with sections (page, heading path); raise IngestError with a clear reason."""
    name = safe_filename(filename)
    fmt = _format_for(name)
    _check_size(name, len(data), max_bytes)
    limits = limits or LoadLimits()
    if fmt in ("txt", "md", "csv", "subtitles", "email", "notebook", "code", "log"):
        _check_not_disguised(name, data)
    if fmt in ("txt", "md") and _is_html_document(data):
        log.info("%s: an HTML document under a %s name; reading its visible text", name, fmt)
        fmt = "html"  # its scripts, styles and comments must not become text
    if fmt == "txt" and _is_notebook(data):
        log.info("%s: a Jupyter notebook under a .txt name; reading its cells", name)
        fmt = "notebook"  # its JSON syntax must not become text
    if fmt == "txt" and _is_email(data):
        log.info("%s: an email saved under a .txt name; reading its text body", name)
        fmt = "email"  # its headers and its base64 body must not become text
    if fmt == "txt" and _is_subtitle_file(data):
        log.info("%s: a subtitle file under a .txt name; reading its cues' words", name)
        fmt = "subtitles"  # its cue numbers and timing lines must not become quotes
    if fmt == "txt" and _is_tab_table(data):
        log.info("%s: a table of tab-separated columns under a .txt name; reading its rows", name)
        fmt = "csv"  # a row's cells run together as prose ('Elias Penrose Godrevy 9') without their columns
    readers = {
        "txt": _read_txt,
        "md": _read_markdown,
        "pdf": _read_pdf,
        "docx": _read_docx,
        **_ZIP_READERS,
        "html": _read_html,
        "subtitles": _read_subtitles,
        "csv": _read_csv,
        "email": _read_email,
        "notebook": _read_notebook,
        "code": _read_code,
        "log": _read_code,
    }
    decoded = _quoted_printable(data) if fmt in ("txt", "md", "html") else None  # an email's part saved alone
    blocks = readers[fmt](name, decoded or data, limits)
    if decoded is not None:
        blocks.append(_Block("", notice="read as quoted-printable (an email's encoding: '=E2=80=99', '=' line ends)"))
    if sum(len(block.text) for block in blocks) > limits.max_text_chars:
        raise _too_much_text(name, limits)
    doc = _assemble(name, blocks, fmt)
    if not doc.text.strip():
        raise IngestError(name, "contains no text.")
    _check_readable(name, doc.text, fmt)
    if not _WORD_CHARACTER.search(doc.text):  # '***' and '---' alone: nothing to search, quote or summarise
        raise IngestError(name, "contains no text, only punctuation or symbols.")
    doc.text, respelt = _one_script_words(doc.text)
    if respelt:
        doc.sections = [replace(s, heading=tuple(_one_script_words(h)[0] for h in s.heading)) for s in doc.sections]
        blocks.append(_Block("", notice=f"{counted(respelt, 'word')} mixing Latin with look-alike Cyrillic or "
                                        "Greek letters read in one script"))
    doc.text, restyled = _plain_letters(doc.text)
    if restyled:
        doc.sections = [replace(s, heading=tuple(_plain_letters(h)[0] for h in s.heading)) for s in doc.sections]
        blocks.append(_Block("", notice=f"{counted(restyled, 'word')} in styled letters (bold or script "
                                        "mathematical letters, full-width ones) read as plain letters"))
    doc.notices = tuple(block.notice for block in blocks if block.notice)
    log.info("loaded %s: %d chars, %d sections (%s)", name, len(doc.text), len(doc.sections), fmt)
    return doc


# ------------------------------------------------------------------------------------ text + assembly

# Quoted-printable (RFC 2045), as an email's part saved to a file keeps it: every '=' starts an escape of
# two capital hex digits or ends a line (a soft break), and no line is longer than 76 characters.
_QP_EQUALS = re.compile(rb"=(?:[0-9A-F]{2}|\r?\n|$)?")
QP_MIN_ESCAPES = 2
QP_MAX_LINE = 78  # 76 and a line end
QP_SOFT_LINE = 60  # a line a soft break ends is a long one: the encoder broke it at the limit


def _quoted_printable(data: bytes) -> bytes | None:
    """The bytes a quoted-printable file encodes, or None for one that is not: any '=' that escapes
    nothing, a byte outside ASCII or a line too long, and too little evidence (fewer than
    `QP_MIN_ESCAPES` escapes of a byte, or of soft breaks, each ending a long line)."""
    if b"=" not in data or not data.isascii():
        return None
    equals = list(_QP_EQUALS.finditer(data))
    if any(m.end() - m.start() == 1 and m.end() < len(data) for m in equals):
        return None
    lines = data.split(b"\n")
    if max(len(line) for line in lines) > QP_MAX_LINE:
        return None
    soft = [line for line in lines if line.rstrip(b"\r").endswith(b"=")]
    escapes = sum(1 for m in equals if m.end() - m.start() == 3)
    if escapes < QP_MIN_ESCAPES and (len(soft) < QP_MIN_ESCAPES or any(len(line) < QP_SOFT_LINE for line in soft)):
        return None
    import quopri

    return quopri.decodestring(data)


# Controls, soft hyphens, BOMs, lone surrogates (a str can hold them; SQLite's UTF-8 cannot) and Unicode
# noncharacters (U+FFFE, U+FDD0.., the last two code points of every plane): never text to a reader.
_CONTROL_CHARS = re.compile(
    "[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\u00ad\ufeff\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff"
    + "".join(f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(1, 17))
    + "]"
)
# A terminal's escape sequences (ANSI colours in a saved log, `ls --color` output, a title set by OSC):
# their ESC alone removed as a control would leave `[32m` in the text, so each goes whole. (A lone C1
# control, U+009B, is removed alone: in text it is more often a stray byte than a terminal's code.)
_TERMINAL_ESCAPES = re.compile(
    "\x1b\\[[0-?]{0,64}[ -/]{0,8}[@-~]|\x1b\\][^\x07\x1b\x9c]{0,2000}(?:\x07|\x1b\\\\|\x9c)|\x1b[@-Z\\\\-_]"
)


# Overstrike, as nroff writes a manual page for a terminal or a printer (`man ls > ls.txt`, `col` not run):
# bold is a character, a backspace and the same character again; underline an underscore, a backspace and
# the character. A backspace alone removed as a control left `NNAAMMEE` and `_N_e_w_l_y_n`; the character
# struck over is what a reader sees, so the one struck first goes with the backspace.
_UNDERSCORE_STRUCK = re.compile("(?<=[^\\s_\x08])\x08_")
_STRUCK_OVER = re.compile("[^\\s\x08]\x08(?=[^\\s\x08])| \x08(?= )")


def _without_controls(text: str) -> str:
    """`text` without terminal escape sequences (whole), overstruck characters (`_STRUCK_OVER`) and control
    characters (`_CONTROL_CHARS`)."""
    if "\x1b" in text:
        text = _TERMINAL_ESCAPES.sub("", text)
    if "\x08" in text:
        text = _without_overstrike(text)
    return _CONTROL_CHARS.sub("", text)


def _without_overstrike(text: str) -> str:
    """`text` with each overstruck character as the character a reader sees (`_STRUCK_OVER`)."""
    return _STRUCK_OVER.sub("", _UNDERSCORE_STRUCK.sub("", text))


# Characters that show nothing but can carry hidden text to a model: Unicode tag characters (an
# invisible copy of ASCII), bidirectional overrides, embeddings and isolates, zero-width spaces, joiners
# and marks, invisible operators, variation selectors (Mongolian's free ones too) and Hangul fillers; and
# format characters that show nothing outside their own notation, which a file can put between every
# letter to break a search (interlinear annotation marks, shorthand and musical beam or slur controls).
_INVISIBLE = re.compile(
    "[\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
# Combining marks beyond this many on one character are a "zalgo" flood, not a script's diacritics.
MAX_COMBINING_MARKS = 8
_COMBINING = "\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_COMBINING_FLOOD = re.compile(f"([{_COMBINING}]{{{MAX_COMBINING_MARKS}}})[{_COMBINING}]+")
_SUSPICIOUS_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ue000-\uf8ff\ufffd]")
# What a reader cannot read in extracted text: private-use code points (a PDF font without a usable
# character map decodes to them), replacement characters (invalid bytes or entities) and leftovers of
# the above. Over this share of the visible characters, a document is refused as unreadable.
_UNREADABLE_CHARS = re.compile("[\ue000-\uf8ff\ufffd\U000f0000-\U0010ffff]")
UNREADABLE_RATIO = 0.25
_WHITESPACE = re.compile(r"\s+")
_WORD_CHARACTER = re.compile(r"[^\W_]")  # a letter or digit of any script
# A run of horizontal whitespace that is not already one plain space: collapsed to one (single spaces, most
# of a text's whitespace, are not matched, so they are not replaced by themselves one by one).
_HSPACE = re.compile(r"[^\S\n]{2,}|[^\S\n ]")
_BLANK_RUNS = re.compile(r"\n{3,}")


def strip_invisible(text: str) -> str:
    """Remove invisible and direction-changing characters and cap combining-mark floods.

    What is stored is what a reader sees: hidden tag-character text or a right-to-left override
    cannot reach a summary, an answer or an LLM prompt.
    """
    return _COMBINING_FLOOD.sub(r"\1", _INVISIBLE.sub("", text))


def strip_unsafe(text: str) -> str:
    """Control characters (a terminal escape, a C1 CSI), noncharacters and invisible characters removed;
    line breaks and tabs kept. For text no loader read: what an LLM writes is shown and stored too."""
    return strip_invisible(_without_controls(text))


# Cyrillic and Greek letters drawn as Latin ones, and the Latin letters they look like: a word mixing them
# with Latin ('PаyPal' with a Cyrillic 'а') reads as its Latin word to a person, yet matches no search for it.
_LOOKALIKES = {
    "Cyrillic": dict(zip("аеорсухіјѕԁԛԝАВЕКМНОРСТХУІЈЅ", "aeopcyxijsdqwABEKMHOPCTXYIJS", strict=True)),
    # Greek's capitals and omicron only: 'Kα' and 'Hβ' are spectral lines, written so on purpose
    "Greek": dict(zip("οΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "oABEZHIKMNOPTYX", strict=True)),
}
_TO_LATIN = str.maketrans({**_LOOKALIKES["Cyrillic"], **_LOOKALIKES["Greek"]})
_FROM_LATIN = {script: str.maketrans({latin: own for own, latin in table.items() if latin.isascii()})
               for script, table in _LOOKALIKES.items()}
_MIXED_SCRIPTS = re.compile("[A-Za-z][\u0370-\u04ff]|[\u0370-\u04ff][A-Za-z]")
_LETTER_RUN = re.compile(r"[^\W\d_]+")


def _one_script_words(text: str) -> tuple[str, int]:
    """`text` with each word that mixes Latin and Cyrillic or Greek letters written in its main script,
    when every letter of the other is a look-alike ('PаyPal' -> 'PayPal', 'Москвa' with a Latin 'a' ->
    'Москва'), and how many words changed. Letters map one to one, so offsets into the text hold."""
    if not _MIXED_SCRIPTS.search(text):
        return text, 0
    changed = 0

    def respelt(found: re.Match[str]) -> str:
        nonlocal changed
        word = found.group()
        other = sum(1 for ch in word if "\u0370" <= ch <= "\u04ff")
        if not other or other == len(word):
            return word
        if 2 * other <= len(word):
            mapped = word.translate(_TO_LATIN)
            done = not any("\u0370" <= ch <= "\u04ff" for ch in mapped)
        else:
            script = "Greek" if any("\u0370" <= ch <= "\u03ff" for ch in word) else "Cyrillic"
            mapped = word.translate(_FROM_LATIN[script])
            done = not any(ch.isascii() for ch in mapped)
        changed += done
        return mapped if done else word  # a letter no other script's looks like: two scripts on purpose

    return _LETTER_RUN.sub(respelt, text), changed


def _styled_letter_table() -> dict[int, str]:
    """Letters and digits in a style of their own, each to the plain ASCII one it is (NFKC's compatibility
    mapping, kept only where that is one ASCII letter or digit): mathematical bold, italic, script,
    fraktur, double-struck, monospace (U+1D400-1D7FF, and the letterlike ones that fill its gaps, 'ℎ'),
    full-width Latin and its punctuation (U+FF01-FF5E, with the ideographic space), circled and squared
    letters. 'Fancy text' generators and CJK typing write them; the embedding model reads none of them."""
    ranges = [range(0x1D400, 0x1D800), range(0x2100, 0x2150), range(0xFF01, 0xFF5F), range(0x24B6, 0x24EA),
              range(0x1F130, 0x1F14A)]
    table = {code: unicodedata.normalize("NFKC", chr(code)) for r in ranges for code in r}
    table = {code: plain for code, plain in table.items() if len(plain) == 1 and plain.isascii() and plain != chr(code)}
    table[0x3000] = " "
    return {code: plain for code, plain in table.items() if plain.isalnum() or 0xFF01 <= code <= 0xFF5E or code == 0x3000}


_STYLED_LETTERS = _styled_letter_table()


def _char_class(codes: list[int]) -> str:
    """A regular-expression class of `codes` written as ranges of consecutive code points: a class of a
    thousand single astral characters made every search of a text of prose 0.1 s slower per 180 kB."""
    ranges: list[list[int]] = []
    for code in sorted(codes):
        if ranges and code == ranges[-1][1] + 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "[" + "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in ranges) + "]"


_STYLED_CLASS = _char_class([code for code in _STYLED_LETTERS if code != 0x3000])
# Two or more styled characters, with spaces between (a styled one-letter word 'a' among styled words goes
# with them); one alone stays as written: 'ℝ' in mathematics, '5 ℓ', a full-width bracket in Chinese.
_STYLED_RUN = re.compile(f"{_STYLED_CLASS}(?:[ \t\u3000]*{_STYLED_CLASS})+")


def _plain_letters(text: str) -> tuple[str, int]:
    """`text` with runs of styled letters ('𝐓𝐡𝐞 𝐤𝐞𝐞𝐩𝐞𝐫', 'Ｐｅｐｐｅｒ') written in plain ones, as a reader
    reads them and a question types them, and how many words changed. A run without a letter or digit (a
    full-width bracket pair in Chinese) stays. Characters map one to one, so offsets into the text hold."""
    if not _STYLED_RUN.search(text):
        return text, 0
    changed = 0

    def plain(found: re.Match[str]) -> str:
        nonlocal changed
        mapped = found.group().translate(_STYLED_LETTERS)
        if not any(ch.isalnum() and ch.isascii() for ch in mapped):
            return found.group()
        changed += len(mapped.split())
        return mapped

    return _STYLED_RUN.sub(plain, text), changed


# Typographic ligatures (U+FB00-FB06), which PDFs and text copied out of them hold: as the letters they
# join, so 'ﬁrst' meets a question's 'first'.
_LIGATURES = str.maketrans({chr(code): unicodedata.normalize("NFKC", chr(code)) for code in range(0xFB00, 0xFB07)})
_LIGATURE_CHARS = tuple(chr(code) for code in range(0xFB00, 0xFB07))
# A word broken at a line end with a hyphen, a lower-case word part on the next line ('infor-' / 'mation').
_HYPHENATED_BREAK = re.compile(r"(?<=[^\W\d_])-\n[^\S\n]*(?=[^\W\d_])")


def plain_letters(text: str) -> str:
    """`text` with its letters as documents' are stored: words mixing look-alike Cyrillic or Greek letters
    in one script (`_one_script_words`), styled letters (mathematical bold, full-width) plain
    (`_plain_letters`). For a question: typed in a "fancy text" generator's letters, it must find the
    words the documents hold."""
    return _plain_letters(_one_script_words(text)[0])[0]


def _normalise(text: str, *, marked_code: bool = False) -> str:
    """Collapse runs of spaces, trim lines, keep at most one blank line between paragraphs. Lines inside a
    code fence (``` or ~~~, in Markdown or plain text) keep their indentation and spacing, only trailing
    spaces trimmed: Python read without its indentation is other code. With `marked_code`, the lines
    between `_CODE_MARK` lines (Markdown's indented code blocks) are kept so too, without the marks."""
    if marked_code and _CODE_MARK in text:
        pieces = text.split(_CODE_MARK)  # odd pieces are indented code blocks
        kept = (_normalise(piece) if i % 2 == 0 else _normalise_code(piece) for i, piece in enumerate(pieces))
        return "\n\n".join(piece for piece in kept if piece)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n").replace("\v", "\n")
    text = strip_invisible(_without_controls(text))
    if any(ligature in text for ligature in _LIGATURE_CHARS):  # a table translate costs ~0.1 us a character
        text = text.translate(_LIGATURES)
    if not any(mark in text for mark in _FENCE_SIGNS):  # no fence: every line is text, trimmed (one pass)
        lines = [line.strip() for line in _HSPACE.sub(" ", text).split("\n")]
        return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip("\n")
    lines: list[str] = []
    reader = FenceReader()  # fences inside list items too (CommonMark: indented past the item's text)
    code_from = 0  # where the open fence's code lines start in `lines`
    wraps = False  # whether the last line kept is prose that a wrapped line continues
    for line in text.split("\n"):
        role = reader.read(line)
        if role == "code":
            if line.strip() or len(lines) > code_from:  # blank lines opening a block of code show nothing
                lines.append(line.rstrip())
            continue
        if reader.ended:  # a list item's end ended the block inside it: closed where it ends, as it shows
            lines = _closed_block(lines, code_from, reader.ended)
        trimmed = _HSPACE.sub(" ", line).strip()
        if role == "close":  # after the block's last line of code, set apart from what follows
            lines, wraps = _closed_block(lines, code_from, trimmed), False
            continue
        if role == "open":  # an opening fence, trimmed (a list item's too): set apart from the text before it
            lines += ["", trimmed] if lines and lines[-1] else [trimmed]
            code_from, wraps = len(lines), False
            continue
        if _FENCE.match(trimmed):
            lines, wraps = _unfenced(lines, line, trimmed, wraps)
            continue
        lines.append(trimmed)
        wraps = bool(trimmed)
    if reader.fence is not None:  # a block of code to the end (CommonMark) is closed there, so a leaf inside it shows it
        lines = _closed_block(lines, code_from, reader.fence)[:-1]
    # lines are trimmed or end trimmed, so only blank lines are at either end, or a kept `_unfenced` line
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip("\n")


# What any fence line, or the loader's own mark of a code block, holds: a text with none is read line by
# line without the fence reader, 5 us a line (5 million one-letter lines passed the 30 s parse deadline).
_FENCE_SIGNS = ("```", "~~~", "\ufdd1")


def _closed_block(lines: list[str], code_from: int, fence: str) -> list[str]:
    """`lines` with the open block of code closed by `fence` right after its last line of code (its blank
    lines at the end dropped) and a blank line after it, setting it apart from what follows. In place: a
    copy a fence made the text's lines quadratic in its fences (100,000 '~~~' lines, 400 kB, passed the
    30 s parse deadline)."""
    while len(lines) > code_from and not lines[-1]:
        lines.pop()
    lines += [fence, ""]
    return lines


def _unfenced(lines: list[str], line: str, trimmed: str, wraps: bool) -> tuple[list[str], bool]:
    """`lines` with a line that is no fence (indented four columns or more, as CommonMark reads it) yet
    reads as one once trimmed, kept so that it does not pose as one to `chunk.code_lines`: a paragraph's
    wrapped line joins the line it continues, as a renderer shows it (a space for the line break); a
    line that starts a block keeps its indentation, a line of code, as CommonMark reads it."""
    if wraps:
        lines[-1] = f"{lines[-1]} {trimmed}"
        return lines, True
    lines.append(line.rstrip())
    return lines, False


def _normalise_code(text: str) -> str:
    """An indented code block's lines as typed (indentation included: it is what marks them as code to
    `chunk.code_lines`), less unsafe characters, trailing spaces and blank lines at either end."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n").replace("\v", "\n")
    lines = strip_invisible(_without_controls(text)).split("\n")
    return _BLANK_RUNS.sub("\n\n", "\n".join(line.rstrip() for line in lines)).strip("\n")


def text_fingerprint(text: str) -> str:
    """The sha256 of a loaded document's text with what saving it again may change taken out: line
    endings, a BOM, whitespace at line ends, the Unicode normal form (NFC). Case and wording count, so
    the same document re-saved (CRLF, another encoding, .md as .txt) has the same fingerprint and a
    document that differs in one word does not."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", "")
    text = "\n".join(line.rstrip() for line in unicodedata.normalize("NFC", text).split("\n"))
    return hashlib.sha256(text.strip("\n").encode("utf-8", "surrogatepass")).hexdigest()


# What a words' fingerprint leaves out besides punctuation and spacing: a fence's whole line (its info
# string, "python", names no word of the text) and a numbered list item's number (Word and HTML number
# their lists outside the text: "1. Fetch it." in Markdown is "Fetch it." in a .docx).
_FENCE_LINE = re.compile(r"^[ \t>]*(?:`{3,}|~{3,}).*$", re.MULTILINE)
_LIST_NUMBER = re.compile(r"^[ \t>]*\d{1,9}[.)][ \t]+", re.MULTILINE)
_WORD = re.compile(r"\w+")


def words_fingerprint(text: str) -> str:
    """The sha256 of a text's words alone, in order, with case: no punctuation, spacing, line breaks or
    markup (Markdown's `#`, `**`, `|`, fences, list numbers). The same document under another kind (.md
    and .docx, .html, .odt, .pdf, .txt) reads to the same words and differing markup, so this is what
    tells it is one document; a word, a figure or a letter's case changed makes another. Documents
    stored before it are given theirs from their leaves (migrations m009, m011)."""
    text = unicodedata.normalize("NFKC", text.replace("\ufeff", ""))
    words = _WORD.findall(_LIST_NUMBER.sub("", _FENCE_LINE.sub("", text)))
    if not words:  # symbols or emoji alone: no words to tell two such documents apart, so none to match by
        return ""
    return hashlib.sha256(" ".join(words).encode("utf-8", "surrogatepass")).hexdigest()


def document_words_fingerprint(doc: LoadedDocument) -> str:
    """The `words_fingerprint` of a loaded document, a .txt read as Markdown (as `document_fingerprint`
    reads it), so a .txt holding Markdown and the .docx of it are one document."""
    return words_fingerprint(markdown_text(doc.text) if doc.format == "txt" else doc.text)


def document_fingerprint(doc: LoadedDocument) -> str:
    """The fingerprint (`text_fingerprint`) of a loaded document's text as Markdown reads it when it is a
    .txt, so a .txt holding Markdown and the same text as .md are one document; a .txt without Markdown
    syntax reads the same either way."""
    return text_fingerprint(markdown_text(doc.text) if doc.format == "txt" else doc.text)


def _assemble(name: str, blocks: list[_Block], fmt: str) -> LoadedDocument:
    """Join normalised blocks with blank lines; a new Section starts wherever page or heading path changes."""
    parts: list[str] = []
    starts: list[tuple[int, int | None, tuple[str, ...]]] = []
    pos = 0
    for block in blocks:
        text = _normalise(block.text, marked_code=block.marked_code)
        if not parts and text[:1].isspace():  # a text opening with indented code: no text starts with space,
            first, newline, rest = text.partition("\n")  # so its first line is read as prose (`code_lines`),
            if not _FENCE.match(first.strip()):  # unless, trimmed, it would pose as a fence (`_unfenced`)
                text = _HSPACE.sub(" ", first).strip() + newline + rest
        if not text:
            continue
        if parts:
            parts.append("\n\n")
            pos += 2
        if not starts or starts[-1][1:] != (block.page, block.heading):
            starts.append((pos, block.page, block.heading))
        parts.append(text)
        pos += len(text)
    full = "".join(parts)
    sections = [
        Section(start, starts[i + 1][0] if i + 1 < len(starts) else len(full), page, heading)
        for i, (start, page, heading) in enumerate(starts)
    ]
    return LoadedDocument(name=name, text=full, sections=sections, format=fmt)


# What a file really is, by its first bytes: named when its extension says otherwise.
_SIGNATURES = (
    (b"%PDF-", "a PDF file"),
    (b"PK\x03\x04", "a zip archive"),
    (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        "an encrypted (password-protected) or old-style (.doc) Office file",
    ),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"{\\rtf", "an RTF document"),
    (b"\x7fELF", "a program (an executable)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x00asm", "a WebAssembly program"),
)


def _content_kind(data: bytes) -> str | None:
    """What a file is by its first bytes (None if they say nothing); a zip that is a document says which."""
    kind = next((kind for magic, kind in _SIGNATURES if data.startswith(magic)), None)
    if kind == "a zip archive":
        return _zip_document(data) or kind
    return kind


def _zip_document(data: bytes) -> str | None:
    """The document a zip is (`zip_identity`: a Word document, an EPUB, an OpenDocument file), read only
    when its directory is small; None for any other zip."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            if len(infos) > DOCX_MAX_ENTRIES:
                return None
            return zip_identity(archive, infos) or None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, zlib.error, RuntimeError, NotImplementedError):
        return None


# Formats whose files may be all ASCII, so they decode as text, yet whose bytes are markup or objects
# rather than anything to read: a PDF written without compression, an RTF document. No text begins so.
_TEXT_DISGUISES = re.compile(rb"\A(?:\xef\xbb\xbf)?(?:%PDF-\d\.\d|\{\\rtf\d?[\\{ ])")


def _check_not_disguised(name: str, data: bytes) -> None:
    """Refuse a PDF or RTF file under a text format's name (.txt, .md, .csv, .srt) in one sentence, as
    one that does not decode is refused: its markup would be stored and quoted as its text."""
    if _TEXT_DISGUISES.match(data[:32]):
        raise _not_text(name, data.removeprefix(b"\xef\xbb\xbf"))


def _is_html_document(data: bytes) -> bool:
    """A whole HTML page (it starts with a doctype or <html>), whatever its extension says."""
    head = data[:512].removeprefix(b"\xef\xbb\xbf").lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


# A subtitle file's opening, whatever its extension: WebVTT's header, or SRT's first cue number and timing.
_SUBTITLE_OPENING = re.compile(
    rb"\A(?:\xef\xbb\xbf)?\s*(?:WEBVTT(?:[ \t]|\r?\n|\Z)|\d{1,6}[ \t]*\r?\n[ \t]*"
    rb"(?:\d+:)?\d{1,2}:\d{2}(?:[.,]\d{1,3})?[ \t]*-->)"
)


TAB_TABLE_MIN_ROWS = 3  # a header and two rows, every one with the same number of tabs


def _is_tab_table(data: bytes) -> bool:
    """Whether a .txt is a spreadsheet's tab-separated export (Excel's 'Unicode Text' saves .txt in UTF-16,
    LibreOffice's 'Text' in UTF-8): its first lines (up to 20, at least `TAB_TABLE_MIN_ROWS`) each hold the
    same number of tabs, one or more, and its first line starts with a cell, not an indentation."""
    sample = data[:16384]
    utf16 = sample.startswith((b"\xff\xfe", b"\xfe\xff"))
    if b"\t" not in sample and not utf16:
        return False
    text = sample.decode("utf-16" if utf16 else "utf-8", errors="replace").removeprefix("\ufeff")
    lines = [line for line in text.replace("\r\n", "\n").split("\n")[:20] if line.strip()]
    if len(data) > len(sample) and len(lines) > 1:
        lines = lines[:-1]  # the sample may end inside a line
    tabs = {line.count("\t") for line in lines}
    return len(lines) >= TAB_TABLE_MIN_ROWS and len(tabs) == 1 and min(tabs) >= 1 and not lines[0].startswith("\t")


def _is_subtitle_file(data: bytes) -> bool:
    """A WebVTT or SRT export (saved or renamed as .txt), by its first bytes."""
    return _SUBTITLE_OPENING.match(data[:512]) is not None


def _check_readable(name: str, text: str, fmt: str) -> None:
    """Refuse text that is mostly private-use or replacement characters: it would be stored, embedded
    and quoted as boxes (a PDF font whose character map is missing or broken, an HTML entity storm)."""
    unreadable = _UNREADABLE_CHARS.subn("", text)[1]  # one copy of the text, never a list per character
    if not unreadable:
        return
    visible = len(_WHITESPACE.sub("", text))
    if visible and unreadable / visible > UNREADABLE_RATIO:
        log.info("%s: %d of %d visible characters unreadable", name, unreadable, visible)
        if fmt == "pdf":
            raise IngestError(
                name,
                "has a text layer that does not map to readable characters (a font without a usable "
                "character map); please export it again or upload a text version.",
            )
        raise IngestError(
            name, "is mostly characters that cannot be displayed as text (private-use or invalid)."
        )


_STRUCK_BYTES = re.compile(rb"[!-~]\x08(?=[!-~])| \x08(?= )")


def _looks_binary(sample: bytes) -> bool:
    """Mostly non-printable bytes: a binary file with a text extension rather than text in another encoding."""
    if not sample:
        return False
    printable = sum(1 for b in sample if b in (9, 10, 13) or 32 <= b < 127 or b >= 128)
    controls = len(sample) - printable
    if b"\x08" in sample:  # overstrike between two characters (a manual page's bold) is text's, not binary's
        controls -= len(_STRUCK_BYTES.findall(sample))
    return controls / len(sample) > BINARY_CHAR_RATIO


BOMLESS_UTF16_ZEROS = 0.9  # the share of zero high bytes that reads as UTF-16 without a byte-order mark
BOMLESS_UTF16_UNREADABLE = 0.01  # the share of control, private-use or unassigned characters UTF-16 text may hold


def _decode_text(name: str, data: bytes, declared: str | None = None) -> tuple[str, str]:
    """The text of `data` and, when it was not Unicode, a notice saying how it was read: UTF-8 (with or
    without BOM), UTF-32 with a BOM, UTF-16 (with a BOM, or without one when its zero high bytes show it);
    bytes that are not UTF-8 in the encoding the file itself `declared` (an HTML page's <meta>), else in
    the legacy encoding they read as language in (`_legacy_decode`). Binary data is refused."""
    if data.startswith(b"\xef\xbb\xbf") and data[3:].startswith((b"\xff\xfe", b"\xfe\xff")):
        data = data[3:]  # UTF-16 or UTF-32 that a tool saved "as UTF-8" by adding a BOM in front of its own
    bom = data.startswith(b"\xef\xbb\xbf")
    body = data[3:] if bom else data  # a UTF-8 BOM is no text, nor a NUL left out
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):  # before UTF-16: the same first bytes
        encoding, payload = "utf-32", data
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding, payload = "utf-16", data
    elif b"\x00" in body:
        encoding, payload = (None if bom else _bomless_utf16(body)) or ("utf-8", _without_nuls(name, body))
    else:
        encoding, payload = "utf-8", body
    nuls = len(body) - len(payload) if encoding == "utf-8" else 0
    notice = f"{counted(nuls, 'NUL byte')} (not text) left out" if nuls else ""
    try:
        decoded = payload.decode(encoding)
        text = decoded.rstrip("\x00") or decoded  # UTF-16 padded with zeros: the padding is no text
    except UnicodeDecodeError as exc:
        log.info("%s: decode failed: %s", name, exc)
        if encoding != "utf-8":
            raise IngestError(name, f"is not valid {encoding.upper()} text; please save it as UTF-8.") from None
        # binary data, or a renamed PDF or image that is not: saving it "as UTF-8" is no way out
        if _looks_binary(data[:65536]) or _content_kind(data) is not None:
            raise _not_text(name, data) from None
        text = _decoded_as(payload, declared) if declared else None
        if text is None:
            text, legacy = _legacy_decode(name, payload)
            notice = "; ".join(filter(None, (legacy, notice)))
    if _UNICODE_LINE_BREAK.search(text):
        text = text.translate(_UNICODE_LINE_BREAKS)
    if "\x08" in text:
        text = _without_overstrike(text)
    if text and len(_SUSPICIOUS_CHARS.findall(text)) / len(text) > BINARY_CHAR_RATIO:
        raise _not_text(name, data)
    return text, notice


# Line breaks Unicode has besides the ASCII ones: NEL (a mainframe's, EBCDIC converted), the line and the
# paragraph separator (a JavaScript or Word export's). Editors break lines there; a C1 control removed,
# NEL glued two lines' words ('gulls.The storm'), and a Markdown heading after U+2028 was no heading.
_UNICODE_LINE_BREAK = re.compile("[\x85\u2028\u2029]")
_UNICODE_LINE_BREAKS = {0x85: "\n", 0x2028: "\n", 0x2029: "\n\n"}


def _not_text(name: str, data: bytes) -> IngestError:
    """The refusal of a file under a text name that is no text: what it is when its first bytes say (an
    image, a zip, a program, a PDF), so the person knows which file they picked; else that it is binary."""
    kind = _content_kind(data)
    if kind is None:
        return IngestError(name, "contains binary data, not text.")
    return IngestError(name, f"is {kind}, not text (the {_extension(name)} extension does not match its content).")


NUL_MAX_SHARE = 0.01  # NUL bytes a text may hold (left out) before it is taken for binary data


def _without_nuls(name: str, data: bytes) -> bytes:
    """Text holding NUL bytes that is not UTF-16, with them left out: the zeros a crashed editor or logger
    pads a file with, or a few stray ones in its text, which no reader sees. Refused as binary data when
    NULs are more than NUL_MAX_SHARE of what precedes the padding (a binary file's zeros are everywhere)."""
    text = data.rstrip(b"\x00")
    if not text or text.count(b"\x00") > NUL_MAX_SHARE * len(text) or _looks_binary(text.replace(b"\x00", b"")[:65536]):
        raise _not_text(name, data)
    return text.replace(b"\x00", b"")


# A well-formed UTF-8 sequence of two to four bytes (RFC 3629): what text saved as UTF-8 holds for each
# character beyond ASCII, and what a legacy encoding's text rarely holds by chance.
_UTF8_SEQUENCE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]"
    rb"|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)
_NON_ASCII_BYTE = re.compile(rb"[\x80-\xff]")
# Latin-script encodings, in order of preference when readings tie: Windows-1252 is what Windows (and every
# browser, for pages that say Latin-1) writes; Mac OS Roman what classic Mac editors wrote; then the Central
# European, Turkish and Baltic Windows code pages and ISO-8859-2. Their bytes beyond ASCII mostly decode
# to letters in each of them, so the reading kept is the one whose letters one language uses
# (`_language_fit`): Turkish 'başkenti' read as Windows-1252 is 'baþkenti', Icelandic letters beside 'ü'.
_WESTERN_ENCODINGS = ("cp1252", "iso8859_15", "mac_roman", "cp1250", "cp1254", "cp1257", "iso8859_2", "cp850")
# The letters beyond ASCII each language writes with (lower case). A reading in the wrong code page mixes
# letters of several ('ý' and 'þ' are Icelandic, 'ü' and 'ç' are not).
_LANGUAGE_LETTERS = {
    "French": "àâæçéèêëîïôœùûüÿ",
    "German": "äöüßé",
    "Spanish": "áéíñóúü",
    "Portuguese": "áâãàçéêíóôõúü",
    "Italian": "àèéìíîòóùú",
    "Catalan": "àçèéíïòóúü",
    "Dutch": "áéèëïóöü",
    "Danish and Norwegian": "æøåéó",
    "Swedish": "åäöé",
    "Finnish": "äöåšž",
    "Icelandic": "áðéíóúýþæö",
    "Turkish": "çğıöşüâîû",
    "Czech": "áčďéěíňóřšťúůýž",
    "Slovak": "áäčďéíĺľňóôŕšťúýž",
    "Polish": "ąćęłńóśźż",
    "Hungarian": "áéíóöőúüű",
    "Croatian and Slovenian": "čćđšž",
    "Romanian": "ăâîșțşţ",
    "Lithuanian": "ąčęėįšųūž",
    "Latvian": "āčēģīķļņšūž",
    "Estonian": "äöõüšž",
    "Albanian": "çë",
}
# Letters a language's text beyond a few words always holds one of, where its other letters are what a
# wrong code page makes of another language's: Icelandic writes 'á', 'í', 'ó' in nearly every sentence,
# while Turkish 'ı', 'ş' and 'ğ' read as Windows-1252 are Icelandic's 'ý', 'þ' and 'ð' (and 'ö' is both
# languages'), with none of those.
_LANGUAGE_COMMON = {"Icelandic": "áéíóúæ"}
# In Western text the letters beyond ASCII (é, ñ, ß) are a minority; Cyrillic or Greek bytes read in a
# Western encoding are nearly all such letters ('Ìåëüíèöà').
WESTERN_MAX_ACCENTED = 0.3
# Share of the characters beyond ASCII that may sit where no language puts them (a symbol between two
# letters, 'Za¿ó³æ'; a word of two scripts) before a decoding is taken for the wrong encoding.
LEGACY_MAX_ODD = 0.02
LEGACY_SAMPLE_BYTES = 1 << 16
# Characters beyond ASCII that prose in a Latin script writes beside its words: quotes, dashes, the ellipsis,
# currency, degrees, fractions, ordinal indicators, marks of Spanish questions, bullets. A wrong code page
# turns letters into other symbols ('¤' for ISO-8859-15's '€', '˝' '‡' '≥' for Mac OS Roman's letters).
_PROSE_SYMBOLS = frozenset(
    "\u201c\u201d\u2018\u2019\u201e\u201a\u00ab\u00bb\u2039\u203a\u2013\u2014\u2026\u00b7\u2022"
    "\u00bf\u00a1\u20ac\u00a3\u00a5\u00a2\u00b0\u00a7\u00a9\u00ae\u2122\u00d7\u00bd\u00bc\u00be"
    "\u00b2\u00b3\u00aa\u00ba"
)
# A dash where prose never puts one: an en dash inside a lower-case word ('ni–o'), or a dash joined to a
# word on one side only ('comi— pi–as'): what a Mac OS Roman 'ñ' or 'ó' reads as in Windows-1252.
_MISPLACED_DASH = re.compile(r"(?<=[^\W\d_])\u2013(?=[^\W\d_])|(?<=[^\W\d_])[\u2013\u2014](?=\s)|(?<=\s)[\u2013\u2014](?=[^\W\d_])")


def _misplaced_dashes(text: str) -> int:
    """How many dashes sit where prose never puts one (`_MISPLACED_DASH`); an en dash between two words
    counts only before a small letter ('Paris–Berlin' is typography, 'ni–o' is not)."""
    return sum(
        1
        for found in _MISPLACED_DASH.finditer(text)
        if not (text[found.start() - 1].isalpha() and found.end() < len(text) and text[found.end()].isupper())
    )


# A reading must fit one language this well to be stored (`_language_fit`); and a text whose letters
# beyond ASCII are a majority (dense Polish or Czech) is Latin only when its reading fits this well.
LATIN_MIN_FIT = 0.5
LATIN_DENSE_FIT = 0.95
MAX_RIVAL_READINGS = 2  # other readings of the text a notice names
# The code pages a notice names as another reading when one reads the text as plausibly (`_rival_readings`):
# those of today's Windows and ISO. A Mac OS Roman or DOS file is read so only when it reads better.
_RIVALS = frozenset({"cp1252", "iso8859_15", "cp1250", "cp1254", "cp1257", "iso8859_2"})
# The other legacy encodings still met in uploads, for charset-normalizer to choose among: Central European,
# Cyrillic, Greek, Turkish, Hebrew, Arabic, Baltic and Vietnamese Windows code pages, KOI8, ISO-8859 and
# the Japanese, Chinese and Korean multi-byte ones. Rarer code pages only make a wrong guess likelier.
_LEGACY_ENCODINGS = (
    "cp1250", "cp1251", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "cp1258", "koi8_r", "koi8_u",
    "mac_cyrillic", "iso8859_2", "iso8859_5", "iso8859_7", "iso8859_15", "cp932", "euc_jp", "gb18030",
    "big5", "cp949",
)  # fmt: skip
LEGACY_MAX_CHAOS = 0.1  # charset-normalizer's mess ratio for a decoding taken as text
_WORD_SYMBOLS = frozenset("\u2019\u2018'-\u2010\u2011\u2013\u2014\u2026\u00b7\u00ad/")  # inside a word in real text
_ENCODING_NAMES = {
    "mac_roman": "Mac OS Roman", "latin_1": "Latin-1", "koi8_r": "KOI8-R", "cp932": "Shift JIS",
    "cp850": "DOS code page 850",
}  # fmt: skip
# Half-width katakana: a legacy of 1980s terminals that Japanese text today does without, and what bytes of
# Cyrillic in KOI8 read as in Shift JIS.
_HALFWIDTH_KANA = "\uff61"
_UTF8_OR_WINDOWS_1252 = "raptor-utf8-or-windows-1252"


def _as_windows_1252(error: UnicodeError) -> tuple[str, int]:
    """Codec error handler: the bytes that are not UTF-8 read as Windows-1252 (Latin-1 where it has none)."""
    assert isinstance(error, UnicodeDecodeError)
    raw = error.object[error.start : error.end]
    return raw.decode("cp1252", errors="ignore") or raw.decode("latin-1"), error.end


codecs.register_error(_UTF8_OR_WINDOWS_1252, _as_windows_1252)


def _encoding_name(codec: str) -> str:
    """A codec as people name it: 'cp1252' is Windows-1252, 'iso8859_5' ISO-8859-5, 'euc_jp' EUC-JP."""
    codec = codecs.lookup(codec).name.replace("-", "_")
    if codec in _ENCODING_NAMES:
        return _ENCODING_NAMES[codec]
    if re.fullmatch(r"cp125\d", codec):
        return f"Windows-{codec[2:]}"
    return codec.upper().replace("_", "-").replace("ISO8859", "ISO-8859")


def _legacy_decode(name: str, data: bytes) -> tuple[str, str]:
    """Bytes that are not UTF-8 (and not binary) read in the encoding they make language in, with the notice
    naming it. Text that is mostly UTF-8 keeps it, its stray bytes read as Windows-1252 (a file pasted
    together from two editors); otherwise Windows-1252 and Mac OS Roman are tried for Latin-script text,
    then charset-normalizer's best guess (Cyrillic, Greek, Central European, CJK), each decoding kept
    only when it reads as words. Refused when none does."""
    non_ascii = len(_NON_ASCII_BYTE.findall(data[:LEGACY_SAMPLE_BYTES]))
    in_utf8 = sum(len(found) for found in _UTF8_SEQUENCE.findall(data[:LEGACY_SAMPLE_BYTES]))
    if non_ascii and in_utf8 >= non_ascii / 2:
        text = data.decode("utf-8", errors=_UTF8_OR_WINDOWS_1252)
        # EUC-JP, GBK and Big5 bytes pair into UTF-8 sequences by chance (a lead byte, then one of 80-BF)
        # about half the time, which read as scattered Greek, Arabic and Latin signs, no language
        if _reads_as_language(text[:LEGACY_SAMPLE_BYTES], western=False):
            log.info("%s: UTF-8 with stray bytes; read those as Windows-1252", name)
            return text, "read as UTF-8, with the bytes that are not UTF-8 read as Windows-1252"
    latin = _latin_reading(data)
    if latin is not None:
        return latin[1], _read_as(name, latin[0]) + latin[2]
    import charset_normalizer  # only for the rare upload that is neither UTF-8 nor Western

    guesses = charset_normalizer.from_bytes(data[: 4 * LEGACY_SAMPLE_BYTES], cp_isolation=list(_LEGACY_ENCODINGS))
    for guess in guesses:
        text = _decoded_as(data, guess.encoding) if guess.chaos <= LEGACY_MAX_CHAOS else None
        if text is not None and _reads_as_language(text[:LEGACY_SAMPLE_BYTES], western=False):
            codec, text = _best_cyrillic(data, guess.encoding, text)
            return text, _read_as(name, codec)
    raise IngestError(
        name, "is not UTF-8 and does not read as text in any encoding we recognise; please save it as UTF-8."
    )


# The Cyrillic code pages, and the letters each language written in Cyrillic uses (lower case): Mac OS
# Cyrillic's capitals read as Windows-1251 are Serbian and Macedonian letters ('Њосква' for 'Москва').
_CYRILLIC_CODECS = ("cp1251", "koi8_r", "koi8_u", "mac_cyrillic", "iso8859_5")
_CYRILLIC_LETTERS = {
    "Russian": "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
    "Ukrainian": "абвгґдеєжзиіїйклмнопрстуфхцчшщьюя",
    "Belarusian": "абвгдеёжзійклмнопрстуўфхцчшыьэюя",
    "Bulgarian": "абвгдежзийклмнопрстуфхцчшщъьюя",
    "Serbian": "абвгдђежзијклљмнњопрстћуфхцчџш",
    "Macedonian": "абвгдѓежзѕијклљмнњопрстќуфхцчџш",
}


# Letters a language's text beyond a few words always holds one of: Serbian and Macedonian write 'ј' in
# nearly every sentence ('је', 'ја'); Mac OS Cyrillic's Russian read as Windows-1251 has their 'Њ', 'ђ',
# 'Џ' and none.
_CYRILLIC_COMMON = {"Serbian": "ј", "Macedonian": "ј"}


def _best_cyrillic(data: bytes, codec: str, text: str) -> tuple[str, str]:
    """(codec, text): a Cyrillic guess kept, or another Cyrillic code page's reading whose letters fit one
    language better (`_cyrillic_fit`) and that reads as words: the guesser took Mac OS Cyrillic for
    Windows-1251, whose reading of its capitals is Serbian letters among Russian ones."""
    if codecs.lookup(codec).name.replace("-", "_") not in _CYRILLIC_CODECS:
        return codec, text
    best = (_cyrillic_fit(text[:LEGACY_SAMPLE_BYTES]), codec, text)
    for other in _CYRILLIC_CODECS:
        reading = _decoded_as(data, other)
        if reading is None or not _reads_as_language(reading[:LEGACY_SAMPLE_BYTES], western=False):
            continue
        fit = _cyrillic_fit(reading[:LEGACY_SAMPLE_BYTES])
        if fit > best[0]:
            best = (fit, other, reading)
    return best[1], best[2]


def _best_language_letters(counts: Counter[str], alphabets: dict[str, str], common: dict[str, str]) -> int:
    """How many of the counted letters the best-fitting single language writes (0 when none does), among
    the languages whose telling letters (`common`, else their whole alphabet) occur at all."""
    return max(
        (
            sum(counts[ch] for ch in letters)
            for language, letters in alphabets.items()
            if any(counts[ch] for ch in common.get(language, letters))
        ),
        default=0,
    )


def _cyrillic_fit(text: str) -> float:
    """The share of a text's characters beyond ASCII that read as one Cyrillic language writes: its
    letters, and prose symbols (`_PROSE_SYMBOLS`, '№'); 1.0 with none. KOI8-R reads Mac OS Cyrillic's
    capitals as box-drawing signs ('▄НЯЙБЮ я ЯРНКХЖЮ'), Windows-1251 as Serbian letters ('Њосква')."""
    beyond = [ch for ch in text if ord(ch) > 127 and not ch.isspace()]
    if not beyond:
        return 1.0
    counts = Counter(ch for ch in text.lower() if "\u0400" <= ch <= "\u04ff")
    letters = _best_language_letters(counts, _CYRILLIC_LETTERS, _CYRILLIC_COMMON)  # 0 for '¦'
    symbols = sum(1 for ch in beyond if ch in _PROSE_SYMBOLS or ch == "\u2116")
    return (letters + symbols) / len(beyond)


def _latin_reading(data: bytes) -> tuple[str, str, str] | None:
    """(codec, text, rival) for the Latin-script encoding whose reading of `data` reads as words and best
    fits one language (`_language_fit`); the earlier in `_WESTERN_ENCODINGS` on a tie, so Windows-1252
    keeps every text it reads as plausibly as another. `rival` says how an equally fitting reading that
    differs would read (`_rival_readings`), else ''. None when no reading reads as words, or when the best
    fits no language well (LATIN_MIN_FIT): a wrong reading stored is worse than the file refused. Rivals
    are named only where both readings fit one language wholly (a text of a few words: 'Dziękuję')."""
    scored: list[tuple[float, int, str, str]] = []
    for rank, codec in enumerate(_WESTERN_ENCODINGS):
        sample = _decoded_as(data[:LEGACY_SAMPLE_BYTES], codec)  # single-byte code pages: cut anywhere
        if sample is None or not _reads_as_language(sample, western=False):
            continue
        fit = _language_fit(sample)
        if fit < LATIN_DENSE_FIT and not _reads_as_language(sample, western=True):
            continue  # letters beyond ASCII a majority, and no language's: Cyrillic or Greek bytes
        scored.append((fit, -rank, codec, sample))
    scored.sort(reverse=True)
    for fit, _, codec, sample in scored:
        text = _decoded_as(data, codec) if fit >= LATIN_MIN_FIT else None
        if text is not None:
            rivals = [(other, c) for f, _, c, other in scored if f == fit == 1.0 and c != codec and c in _RIVALS]
            return codec, text, _rival_readings(sample, rivals)
    return None


def _rival_readings(ours: str, rivals: list[tuple[str, str]]) -> str:
    """What the notice adds when other code pages read the text as plausibly with other letters (Polish
    'Dziękuję' in Windows-1250 is 'Dziêkujê' in Windows-1252, as French writes 'ê'): the first word
    each reads differently, so the uploader sees which reading was taken and can save the file as UTF-8.
    A symbol read where another reads a letter ('It’s', Mac OS Roman 'Itís') is no rival: the code page
    preferred on a tie (`_WESTERN_ENCODINGS`) writes such punctuation."""
    notes: list[str] = []
    named: set[str] = set()
    for theirs, codec in rivals:
        differ = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
        if not differ or not all(ours[i].isalpha() and theirs[i].isalpha() for i in differ):
            continue
        start, end = differ[0], differ[0] + 1  # the word around the first difference, in both readings
        while start > 0 and ours[start - 1].isalpha() and theirs[start - 1].isalpha() and differ[0] - start < 40:
            start -= 1
        while end < len(ours) and ours[end].isalpha() and theirs[end].isalpha() and end - differ[0] < 40:
            end += 1
        if theirs[start:end] in named:
            continue  # another code page's reading, named already
        named.add(theirs[start:end])
        notes.append(
            f"as {_encoding_name(codec)} it would read '{theirs[start:end]}' where this reads '{ours[start:end]}'"
        )
        if len(notes) == MAX_RIVAL_READINGS:
            break
    return f"; {', and '.join(notes)}" if notes else ""


def _language_fit(text: str) -> float:
    """The share of a text's characters beyond ASCII that read as one language writes: its best-fitting
    language's letters, and prose symbols where prose puts them (`_PROSE_SYMBOLS`, `_MISPLACED_DASH`).
    1.0 when it has none beyond ASCII; 0.0 when none fits (a lone ligature 'ﬁ'). A wrong code page turns
    letters into symbols ('niño' in Mac OS Roman read as Windows-1252 is 'ni–o', Turkish 'yağdı' 'yad˝'),
    or into letters of several languages ('baþkenti'), so its reading fits less than the right one."""
    beyond = [ch for ch in text if ord(ch) > 127 and not ch.isspace()]
    if not beyond:
        return 1.0
    counts = Counter(ch for ch in text.lower() if ord(ch) > 127 and ch.isalpha() and ch not in _PROSE_SYMBOLS)
    letters = _best_language_letters(counts, _LANGUAGE_LETTERS, _LANGUAGE_COMMON)
    symbols = sum(1 for ch in beyond if ch in _PROSE_SYMBOLS) - _misplaced_dashes(text)
    return max(0, letters + symbols - _lone_consonants(text)) / len(beyond)


# A letter standing alone as a word.
_LONE_LETTER = re.compile(r"(?<![^\W_])[^\W\d_](?![^\W_])")
_VOWELS = frozenset("aeiouyæøœå")


def _lone_consonants(text: str) -> int:
    """Consonants beyond ASCII standing alone as words, which no language writes: what French 'à' is
    in Windows-1250 ('ŕ la carte')."""
    return sum(
        1
        for found in _LONE_LETTER.finditer(text)
        if ord(found.group()) > 127 and unicodedata.normalize("NFD", found.group())[0].lower() not in _VOWELS
    )


def _read_as(name: str, codec: str) -> str:
    """The notice for a file read in a legacy encoding (logged too)."""
    log.info("%s: not UTF-8; read as %s", name, codec)
    return f"read as {_encoding_name(codec)} (it is not UTF-8)"


def _script(ch: str) -> str:
    """A letter's script as its Unicode name begins ('LATIN', 'CYRILLIC', 'GREEK'); kana and ideographs are
    one script, as Japanese mixes them, with the marks that lengthen a kana's sound ('ー' in 'フェリー')
    and repeat an ideograph ('々'): named apart, they made a short Japanese text in Shift JIS a word of
    two scripts, and refused."""
    first = unicodedata.name(ch, "?").split(" ", 1)[0]
    return "CJK" if first in _CJK_NAMES else first


_CJK_NAMES = frozenset({"HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "IDEOGRAPHIC", "CJK", "HALFWIDTH", "FULLWIDTH"})


def _reads_as_language(text: str, *, western: bool) -> bool:
    """Whether a decoding reads as words: few characters beyond ASCII sit where language never puts them
    (a symbol or control between two letters, a capital after a small letter, a word mixing two scripts,
    half-width katakana), and, for a Western encoding, letters beyond ASCII are a minority of the letters."""
    beyond = [ch for ch in text if ord(ch) > 127]
    if not beyond:
        return True
    letters = sum(1 for ch in text if ch.isalpha())
    if western and sum(1 for ch in beyond if ch.isalpha()) > WESTERN_MAX_ACCENTED * letters:
        return False
    odd = sum(1 for ch in beyond if _HALFWIDTH_KANA <= ch <= "\uff9f" or unicodedata.category(ch)[0] == "C")
    for word in text.split():
        scripts = {_script(ch) for ch in word if ch.isalpha()}
        odd += len(scripts) > 1
        if "CJK" in scripts:
            continue  # written without spaces: its punctuation stands between letters
        for i, ch in enumerate(word[1:], 1):
            if ord(ch) <= 127 or ch in _WORD_SYMBOLS:
                continue
            if ch.isupper():  # a capital after a small letter: 'donÕt', 'countyÓ' (Mac OS Roman as Windows-1252)
                odd += word[i - 1].islower()
            elif not unicodedata.category(ch).startswith(("L", "M")):  # a symbol inside a word: 'Za¿ó³æ'
                odd += word[i - 1].isalpha() and i + 1 < len(word) and word[i + 1].isalpha()
    return odd <= LEGACY_MAX_ODD * len(beyond)


def _bomless_utf16(data: bytes) -> tuple[str, bytes] | None:
    """(the UTF-16 byte order, data) for UTF-16 saved without a byte-order mark, as some Windows tools
    write it: text in a Latin script has a zero in nine bytes of ten at one parity (its high bytes); text
    in another script (Cyrillic, Greek, CJK, Hangul) has zeros only where its spaces, digits and line
    breaks are, so the order whose sample reads as text (`_reads_as_utf16_text`) is taken. None for
    anything else holding zero bytes (binary data)."""
    sample = data[:65536]
    if len(data) % 2 or len(sample) < 2:
        return None
    orders = (("utf-16-le", sample[1::2]), ("utf-16-be", sample[0::2]))
    for encoding, high_bytes in orders:
        if high_bytes.count(0) >= BOMLESS_UTF16_ZEROS * len(high_bytes):
            return encoding, data
    readable = [encoding for encoding, _ in orders if _reads_as_utf16_text(sample, encoding)]
    return (readable[0], data) if len(readable) == 1 else None


def _reads_as_utf16_text(sample: bytes, encoding: str) -> bool:
    """Whether `sample` (even-length) decodes in `encoding` to text: no unpaired surrogate, a line break or
    space among its characters, and at most BOMLESS_UTF16_UNREADABLE of them control, private-use or
    unassigned (the other byte order of real text turns its line breaks and spaces into such)."""
    # the sample may end between a surrogate pair's halves
    text = _decoded_as(sample, encoding) or _decoded_as(sample[:-2], encoding)
    if not text or ("\n" not in text and " " not in text):
        return False
    unreadable = sum(
        1 for ch in text if ch not in "\t\n\r" and unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn")
    )
    return unreadable <= BOMLESS_UTF16_UNREADABLE * len(text)


def _decoded_as(data: bytes, encoding: str) -> str | None:
    """`data` in `encoding`, or None when Python knows no such codec or the bytes are not in it."""
    try:
        return data.decode(encoding)
    except (LookupError, UnicodeDecodeError):
        return None


# An HTML page's declared encoding, looked for where browsers look (its first 1024 bytes): <meta charset=X>
# or <meta http-equiv="Content-Type" content="text/html; charset=X">.
_HTML_CHARSET = re.compile(rb"<meta\s[^>]{0,512}?charset\s*=\s*[\"']?\s*([a-z0-9._:-]{1,40})", re.IGNORECASE)
# Labels browsers read as Windows-1252, a superset (the WHATWG Encoding Standard): pages that say
# Latin-1 use its curly quotes and dashes too.
_WINDOWS_1252_LABELS = frozenset(
    "ascii us-ascii iso-8859-1 iso8859-1 iso_8859-1 iso88591 latin1 latin-1 l1 cp819 ibm819".split()
)


def _html_charset(data: bytes) -> str | None:
    """The encoding an HTML page declares for itself, as the codec name browsers would use: in a <meta>,
    or an XHTML page's XML declaration (`<?xml version="1.0" encoding="ISO-8859-1"?>`)."""
    found = _XML_ENCODING.match(data[:1024].removeprefix(b"\xef\xbb\xbf").lstrip()) or _HTML_CHARSET.search(
        data[:1024]
    )
    if found is None:
        return None
    label = found.group(1).decode("ascii").lower()
    return "cp1252" if label in _WINDOWS_1252_LABELS else label


def _read_txt(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    text, notice = _decode_text(name, data)
    return [_Block(text, notice=notice)]


# ------------------------------------------------------------------------------------------ subtitles

# A cue's timing line; the fraction of a second is optional (hand-made and trimmed files leave it out).
_CUE_TIME = r"(?:\d+:)?\d{1,2}:\d{2}(?:[.,]\d{1,3})?"
_CUE_TIMING = re.compile(rf"{_CUE_TIME}\s*-->\s*{_CUE_TIME}\b.*")
_VTT_BLOCKS = re.compile(r"(?:WEBVTT|NOTE|STYLE|REGION)(?:[ \t].*)?")  # a header or a block of no words
_VOICE_OPEN = re.compile(r"<v(?:\.[\w.-]+)*[ \t]+([^<>\n]{1,60}?)[ \t]*>")
_CUE_MARKUP = re.compile(r"</?(?:v|c|i|b|u|ruby|rt|lang|font)\b[^<>]*>|<\d[\d:.]*>|\{\\[^{}]*\}")
# A ruby annotation (a reading shown above its characters, 漢<rt>kan</rt>): not said a second time.
_CUE_RUBY_TEXT = re.compile(r"<rt\b[^<>]*>[^<]*(?:</rt\s*>)?")


def _cue_blocks(text: str) -> list[str]:
    """A subtitle file's blocks, as blank lines separate them (cues, its header, notes, styles), and
    where a file leaves out the blank line between two cues (or after its header), at the next cue's
    timing line (with the SRT number above it): its number and timing were read as the cue before's words."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    blocks: list[str] = []
    for block in re.split(r"\n[ \t]*\n", text):
        lines = block.split("\n")
        start = 0
        for i in range(1, len(lines)):
            opens = i > start + 1 or _VTT_BLOCKS.fullmatch(lines[start].strip())  # a header is no cue's number
            if opens and _CUE_TIMING.fullmatch(lines[i].strip()):
                cut = i - 1 if i - 1 > start and lines[i - 1].strip().isdigit() else i
                blocks.append("\n".join(lines[start:cut]))
                start = cut
        blocks.append("\n".join(lines[start:]))
    return [block for block in blocks if block.strip()]


def _read_subtitles(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """A WebVTT or SRT file's spoken words: one line per cue, its speaker's voice tag as "Name: " (so it
    reads as a transcript's turn), without the header, the cues' numbers and timing lines, NOTE and
    STYLE blocks or styling tags, which are the file's format, not anything said. A cue whose timing
    line does not parse is skipped (read as text, its number and timing became words); a file none of
    whose cues parse is refused."""
    text, notice = _decode_text(name, data)
    cues, broken = _cues(_cue_blocks(text))
    if broken and not cues:
        raise IngestError(
            name,
            f"has no subtitle cue that could be read: none of its {counted(broken, 'cue')} has a timing "
            "line such as 00:00:01,000 --> 00:00:04,000.",
        )
    skipped = f"{counted(broken, 'cue')} skipped: {'its' if broken == 1 else 'their'} timing line could not be read"
    unpunctuated = _unpunctuated(cues)
    if unpunctuated:
        cues = [_cue_sentence(line) for cue in cues for line in cue.split("\n")]
    return [
        _Block("\n".join(cues), notice=skipped if broken else ""),
        _Block("", notice="its cues have no punctuation, so each was read as a sentence" if unpunctuated else ""),
        _Block("", notice=notice),
    ]


# Punctuation that ends or divides a sentence (Latin and CJK); captions generated from speech have none.
_SENTENCE_PUNCTUATION = re.compile("[.!?\u2026\u3002\uff01\uff1f]")
UNPUNCTUATED_CUES = 0.2  # below this share of cues holding any, a file's cues are not written in sentences
# A cue line's opening: a dialogue dash or a voice tag's "Name: ", then the first letter of its words.
_CUE_OPENING = re.compile(r"(?:- |[^\s:][^:\n]{0,59}: )?")


def _unpunctuated(cues: list[str]) -> bool:
    """Whether a subtitle file's cues are written without sentence punctuation (automatic captions), so
    the sentence splitter, which ends a sentence only at punctuation before a capital, would read the
    whole file as one sentence and a quote would run many cues together."""
    punctuated = sum(1 for cue in cues if _SENTENCE_PUNCTUATION.search(cue))
    return bool(cues) and punctuated < UNPUNCTUATED_CUES * len(cues)


def _cue_sentence(line: str) -> str:
    """One unpunctuated cue line written as a sentence: its first letter a capital, a full stop at its
    end, as a reader would mark where the speaker paused ('it was built in 1820' -> 'It was built in 1820.')."""
    start = _CUE_OPENING.match(line).end()
    if start < len(line) and line[start].islower():
        line = line[:start] + line[start].upper() + line[start + 1 :]
    return f"{line}." if line[-1:].isalnum() else line


# A block that is a cue by its shape: an SRT number, or a timing arrow, in its first two lines.
_CUE_SHAPE = re.compile(r"\d+|.*-->.*|.*-\s*>.*")


def _cues(blocks: list[str]) -> tuple[list[str], int]:
    """The words of each cue in the order a player shows them (by start time: an edited file's cues
    may stand out of order, '3' before '1'; cues starting together keep the file's order), and how many
    cues were skipped for a timing line that does not parse. A block of words alone (no number, no
    timing: a blank line inside a cue's text) goes with the cue before it, kept or skipped with it."""
    cues: list[tuple[float, str]] = []
    broken = 0
    skipping = True  # nothing before the first cue continues a cue
    for block in blocks:
        lines = [line.strip() for line in block.strip().split("\n")]
        if _VTT_BLOCKS.fullmatch(lines[0]):
            skipping = True
            continue
        timing = next((i for i, line in enumerate(lines[:2]) if _CUE_TIMING.fullmatch(line)), None)
        if timing is not None:
            cues.append((_cue_start(lines[timing]), _cue_text(lines[timing + 1 :])))
            skipping = False
        elif cues and not any(_CUE_SHAPE.fullmatch(line) for line in lines[:2]):
            if not skipping:
                cues[-1] = (cues[-1][0], f"{cues[-1][1]} {_cue_text(lines)}".strip())
        else:
            broken += 1
            skipping = True
    return [cue for _, cue in sorted(cues, key=lambda cue: cue[0]) if cue], broken


def _cue_start(timing: str) -> float:
    """When a cue starts, in seconds, from its timing line ('01:02:03,500 --> …' -> 3723.5)."""
    clock, _, fraction = re.split(r"\s*-->", timing, maxsplit=1)[0].strip().replace(",", ".").partition(".")
    seconds = 0.0
    for part in clock.split(":"):
        seconds = seconds * 60 + int(part)
    return seconds + (float(f"0.{fraction}") if fraction else 0.0)


# A subtitle line opening with a dialogue dash: a second speaker's words in the same cue ("- Home.").
_DIALOGUE_DASH = re.compile(r"(?:<[^<>]{0,60}>)*[-\u2013\u2014][ \t]*(?=\S)")


def _cue_text(lines: list[str]) -> str:
    """The words of a cue's text lines, joined, markup removed; a line opening with a dialogue dash
    ('- Where are you going?' / '- Home.': two speakers in one cue) starts a line of its own, '- ' and
    its words, so that it is a sentence of its own and never read as the line before's speaker's."""
    turns: list[list[str]] = []
    for line in (line for line in lines if line):
        dash = _DIALOGUE_DASH.match(line)
        if dash or not turns:
            turns.append([f"- {line[dash.end():]}" if dash else line])
        else:
            turns[-1].append(line)
    return "\n".join(cleaned for turn in turns if (cleaned := _cue_words(" ".join(turn))))


def _cue_words(text: str) -> str:
    """A cue's text without its markup, a voice tag as its speaker's "Name: ", white space collapsed."""
    text = _VOICE_OPEN.sub(lambda match: f"{match.group(1)}: ", _CUE_RUBY_TEXT.sub("", text))
    return " ".join(html.unescape(_CUE_MARKUP.sub("", text)).split())


# ------------------------------------------------------------------------------------------------ csv

_CSV_DELIMITERS = ",;\t|"  # what spreadsheets export with: comma, semicolon (where the comma is decimal), tab, bar
# Excel writes and reads a first line 'sep=;' naming the delimiter (quoted too, by some exporters).
_CSV_SEP_LINE = re.compile(r"\A\"?sep=([^\w\s\"]|\t)\"?[ \t]*(?:\r\n|\r|\n)", re.IGNORECASE)
_CSV_SAMPLE_CHARS = 1 << 16


def _read_csv(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """A CSV or TSV export as one line per row: under a header row (`_csv_header`) a list item naming each
    cell by its column ('- Item: DVDs; Late fee: £1 per day.', as Markdown's table rows are read), so a
    row reads alone in whichever chunk it lands; without one, its cells separated by ' | '. The delimiter
    is the one the first rows use consistently (tab for .tsv). Cells are counted against the element cap."""
    import csv

    text, notice = _decode_text(name, data)
    declared = _CSV_SEP_LINE.match(text)  # Excel's 'sep=;' first line: the delimiter, no row of the table
    if declared:
        text = text[declared.end() :]
    sample = text[:_CSV_SAMPLE_CHARS]
    if declared:
        delimiter = declared.group(1)
    else:
        delimiter = "\t" if _extension(name) == ".tsv" else _csv_delimiter(sample)
    rows: list[list[str]] = []
    cells = formulas = 0
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    row_starts = 1  # the line the row being read starts on, for a refusal to point at
    try:
        for read in reader:
            row_starts = reader.line_num + 1
            row = _in_columns(read, len(rows[0]) if rows else 0, delimiter)
            if delimiter == ",":
                row = _numbers_joined(row, len(rows[0]) if rows else 0)
            cells += len(row)
            if cells > limits.max_elements:
                raise IngestError(name, f"has more than {limits.max_elements:,} table cells, over the limit.")
            shown = [_formula_shown(cell) for cell in row]
            formulas += sum(1 for cell, value in zip(row, shown, strict=True) if value != cell and not value)
            cleaned = [" ".join(cell.split()).replace("|", "/") for cell in shown]
            if any(cleaned):
                rows.append(cleaned)
    except csv.Error as exc:  # a field past csv's size limit, a NUL in a field
        log.info("%s: CSV parse failed: %s", name, exc)
        if "field limit" in str(exc):  # one cell runs on: a stray quote mark makes the rest of the file one cell
            raise IngestError(
                name, f"has a cell of more than {csv.field_size_limit():,} characters, starting in the row on line "
                f"{row_starts:,} (an unclosed quote mark?).",
            ) from None
        raise IngestError(name, f"could not be read as CSV: the row on line {row_starts:,} is damaged ({str(exc)[:60]}).") from None
    if len(rows) == 1 and _names_columns(rows[0]):  # as an empty .txt is refused: nothing to search or quote
        raise IngestError(name, "is a table with a header row (column names) but no rows of data.")
    if _csv_header(rows) or _list_header(rows):
        lines = [_labelled_row(rows[0], row) for row in rows[1:]]
    else:
        lines = [" | ".join(cell for cell in row if cell) for row in rows]
    left_out = f"{counted(formulas, 'cell')} left out: spreadsheet formulas, whose values the file does not hold"
    return [_Block("\n".join(line for line in lines if line), notice=notice), _Block("", notice=left_out if formulas else "")]


# A spreadsheet formula in an exported cell: '=SUM(A1:A3)', a link '=HYPERLINK("http://…","Click")', or
# the '+', '-' or '@' openings spreadsheets also evaluate when a call, sheet reference or DDE pipe follows
# ("+cmd|' /C calc'!A0", '@SUM(1)'); '+44 20 7946' and '-2' stay text.
_FORMULA = re.compile(r"\s*(?:=.|[+\-@].*[(!|])", re.DOTALL)
_HYPERLINK = re.compile(
    r"\s*=\s*HYPERLINK\(\s*\"((?:[^\"]|\"\")*)\"\s*(?:[,;]\s*\"((?:[^\"]|\"\")*)\"\s*)?\)\s*", re.IGNORECASE
)


def _formula_shown(cell: str) -> str:
    """A cell as a reader of the spreadsheet sees it: a link formula as its label (its address when it
    has none), any other formula as nothing, since a CSV holds the formula and not its value, and its
    text (a DDE command, a call) is no words of the document; anything else as written."""
    if not _FORMULA.match(cell):
        return cell
    link = _HYPERLINK.fullmatch(cell)
    if link is None:
        return ""
    return (link.group(2) or link.group(1)).replace('""', '"')


def _csv_delimiter(sample: str) -> str:
    """The delimiter the sample's first lines split into the same number (two or more) of cells most often."""
    lines = [line for line in sample.splitlines()[:20] if line.strip()]
    best, best_rows = ",", 0
    for delimiter in _CSV_DELIMITERS:
        counts = [line.count(delimiter) for line in lines]
        if not counts or not counts[0]:
            continue
        steady = sum(1 for count in counts if count == counts[0])
        if steady > best_rows:
            best, best_rows = delimiter, steady
    return best


def _in_columns(row: list[str], width: int, delimiter: str) -> list[str]:
    """A row of one cell read again with another delimiter, where that splits it into exactly `width`
    cells (the first row's): a row saved with commas in a file of semicolons (pasted in from another
    export) was one cell, 'Keeper: Elias Penrose,Godrevy,38'. Any other row as it is."""
    import csv

    if len(row) != 1 or width < 2:
        return row
    for other in _CSV_DELIMITERS.replace(delimiter, ""):
        cells = next(csv.reader([row[0]], delimiter=other), [])
        if len(cells) == width:
            return cells
    return row


# a number a thousands comma cut in two in an unquoted CSV row: '£2' then '966' of '£2,966'
_NUMBER_HEAD = re.compile(r"[-+]?[£$€¥]?\d{1,3}(?:,\d{3})*")
_NUMBER_TAIL = re.compile(r"\d{3}(?:\.\d+)?(?:\s?(?:%|k|m|bn))?", re.IGNORECASE)


def _numbers_joined(row: list[str], width: int) -> list[str]:
    """A row of more cells than the first row's (`width`) whose extra cells are a number its thousands comma
    split ('Rake,£2,966,Heavy' under 'Item,Price,Notes'), with those cells joined back, where that gives
    exactly `width` cells; any other row as it is. Left split, the row read 'Price: £2; Notes: 966' and its
    last cell had no column."""
    if width < 2 or len(row) <= width:
        return row
    joined, at = list(row), 0
    while at < len(joined) - 1 and len(joined) > width:
        if _NUMBER_HEAD.fullmatch(joined[at].strip()) and _NUMBER_TAIL.fullmatch(joined[at + 1].strip()):
            joined[at : at + 2] = [f"{joined[at].strip()},{joined[at + 1].strip()}"]
        else:
            at += 1
    return joined if len(joined) == width else row


def _csv_header(rows: list[list[str]]) -> bool:
    """Whether the first row names the columns: two or more rows, its cells all filled, different from each
    other, short, and not numbers (a file of figures with no header starts with a row of data)."""
    return len(rows) >= 2 and _names_columns(rows[0])


def _names_columns(names: list[str]) -> bool:
    """Whether a row reads as column names: two or more cells, all filled, different, short, not numbers."""
    return (
        len(names) >= 2
        and all(names)
        and len(set(names)) == len(names)
        and all(len(cell) <= MAX_HEADER_CELL_CHARS for cell in names)
        and not any(_NUMBER.fullmatch(cell) for cell in names)
    )


_NUMBER = re.compile(r"[-+]?[\d.,\s%£$€]+")
# What the one column of a list is called ('Name', 'Email address', 'Tags'): its last word, singular.
_LIST_COLUMN_NAMES = frozenset(
    """name email e-mail mail address title item id url link website site phone number tel mobile city town
    country word tag keyword product description question answer comment note date value label category task
    todo topic subject person people member user username student employee customer contact company author
    book song movie film entry line text sentence quote message idea ingredient step location place language
    code sku guest attendee participant team player keeper""".split()
)
# A value with a shape a column's name lacks: a digit, an address, a link.
_VALUE_SHAPE = re.compile(r"\d|@|://")
LIST_SHAPED_VALUES = 0.8  # share of a list's values with that shape for its first row to be told apart


def _list_header(rows: list[list[str]]) -> bool:
    """Whether a table of one column (a list of names, addresses, tags) opens with the column's name: a
    short row with no full stop that names what the list holds (`_LIST_COLUMN_NAMES`: 'Name', 'Email
    address'), or that lacks the shape nearly all the values share (no digit, '@' or link, where they have
    one). Its rows are then read under it ('- Name: Ann.'), as a wider table's are; a list of names whose
    first is a name ('Ann', 'Ben') stays a list."""
    if len(rows) < 2 or any(len([cell for cell in row if cell]) > 1 for row in rows):
        return False
    first = next(cell for cell in rows[0] if cell)
    if len(first) > MAX_HEADER_CELL_CHARS or len(first.split()) > 4 or first.endswith((".", "!", "?")):
        return False
    last = re.sub(r"[^a-z-]", "", first.lower().split()[-1])
    if {last, last.removesuffix("s"), last.removesuffix("es")} & _LIST_COLUMN_NAMES:
        return True
    values = [cell for row in rows[1:] for cell in row if cell]
    shaped = sum(1 for value in values if _VALUE_SHAPE.search(value))
    return not _VALUE_SHAPE.search(first) and shaped >= LIST_SHAPED_VALUES * len(values)


# ------------------------------------------------------------------------------------------- markdown

_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


# HTML a Markdown renderer never shows: comments (to the end if unclosed), script-like elements and
# elements marked hidden. Attribute scans stop at the next "<", so no input makes them quadratic.
_MD_HIDDEN_HTML = re.compile(
    # an inline code span shows HTML as code: kept as it is. It starts only where a run of backticks
    # starts, and takes the run whole (possessive), so a long run is scanned once, not once per backtick.
    r"(?P<code>(?<!`)(?P<ticks>`++)[^`]*?(?P=ticks))"
    r"|<!--.*?(?:-->|\Z)"
    r"|<(?P<drop>script|style|noscript|template|iframe|object)\b[^<>]{0,2000}>.*?(?:</(?P=drop)\s*>|\Z)"
    # a formula, a drawing or a table: read as the HTML reader reads it (`_md_figure_words`)
    r"|<(?P<figure>svg|math|table)\b[^<>]{0,2000}>.*?(?:</(?P=figure)\s*>|\Z)"
    # a hidden element with its content; never a void one (<img hidden>, <hr style="display:none">, <input
    # hidden>), which holds none: read as one, it ran to the end of the file and hid everything after it
    r"|<(?P<tag>(?!(?:area|base|br|col|embed|hr|img|input|link|meta|param|source|track|wbr)\b)[a-z][a-z0-9]*)\b[^<>]{0,2000}?"
    r"(?:\shidden(?=[\s=/>])|aria-hidden\s*=\s*[\"']?true|display\s*:\s*none|visibility\s*:\s*hidden"
    # what else a style attribute hides by (as `stylesheets` judges a page's): a zero size or opacity, a
    # transparent colour, a box moved far off the page, clipped or scaled to nothing
    r"|(?:font-size|opacity)\s*:\s*[+]?(?:0+(?:\.0*)?|\.0+)(?:px|pt|em|rem|%)?\s*(?:[;\"'!]|$)"
    r"|font-size\s*:\s*(?:0*\.\d+|1(?:\.0*)?)(?:px|pt)\s*(?:[;\"'!]|$)|opacity\s*:\s*0?\.0(?:[01]\d*|20*)?\s*(?:[;\"'!]|$)"
    r"|color\s*:\s*transparent|content-visibility\s*:\s*hidden|filter\s*:\s*opacity\(\s*0"
    r"|(?:left|top|text-indent|margin-left|margin-top)\s*:\s*-\s*\d{4,}"
    r"|clip\s*:\s*rect\(\s*0[^)]*\)|clip-path\s*:\s*inset\(\s*50%|transform\s*:\s*scale\(\s*0\s*\))"
    r"[^<>]{0,2000}>.*?(?:</(?P=tag)\s*>|\Z)"
    # any other tag: the renderer shows what it holds, never the tag (<details>, <sup>, <br/>)
    r"|</?(?P<markup>[a-z][a-z0-9-]*)(?:\s[^<>]*+)?/?>",
    re.IGNORECASE | re.DOTALL,
)
# Tags inside a line of text, removed without a space ("H<sub>2</sub>O" is "H2O"); any other is a space.
_MD_INLINE_TAGS = frozenset(
    "a abbr b bdi bdo cite code data del dfn em i ins kbd mark q s samp small span strong sub sup time u var".split()
)


def _keep_code(match: re.Match[str]) -> str:
    """What stays of a match of `_MD_HIDDEN_HTML`: a code span whole, a visible tag's place, nothing else."""
    if match.group("code"):
        return match.group(0)
    if match.group("figure"):
        return _md_figure_words(match.group(0))
    tag = match.group("markup")
    return " " if tag and tag.lower() not in _MD_INLINE_TAGS else ""


def _md_figure_words(fragment: str) -> str:
    """A `<math>`, `<svg>` or `<table>` in Markdown as the HTML reader reads it: a formula's symbols,
    numbers and words set apart on its line (`d = 1.17 h`; its annotations, other notations of it, left
    out), a drawing's shown labels one paragraph each, a table's rows each under its column names (as a
    pipe table's are); a hidden one as nothing."""
    from bs4 import BeautifulSoup

    root = BeautifulSoup(fragment, "html.parser").find(["svg", "math", "table"])
    if root is None or _html_hidden(root):
        return ""
    if root.name == "table":
        rows = [block.text for block in _HtmlWalker().walk(root) if block.text.strip()]
        return "\n\n" + "\n".join(rows) + "\n\n" if rows else ""
    if root.name == "svg":
        judged: dict[int, bool] = {}  # each element around the labels judged once (`_svg_hidden`)
        labels = [" ".join(label.get_text(" ").split()) for label in root.find_all("text") if not _svg_hidden(label, root, judged)]
        shown = [label for label in labels if label]
        return "\n\n" + "\n\n".join(shown) + "\n\n" if shown else ""
    for note in root.find_all(["annotation", "annotation-xml"]):
        note.decompose()
    tokens = (" ".join(token.get_text(" ").split()) for token in root.find_all(list(_MATH_TOKENS)))
    return " " + " ".join(token for token in tokens if token) + " "


# An HTML heading on a line of its own in Markdown ('<h2 id="fuel">Fuel</h2>'): a heading as '## Fuel' is,
# so it starts a section and names it (GitHub READMEs write centred titles so).
_MD_HTML_HEADING = re.compile(r"^ {0,3}<h([1-6])(?:\s[^<>\n]*)?>([^\n]*?)</h\1\s*>[ \t]*$", re.IGNORECASE | re.MULTILINE)


def _atx_heading(match: re.Match[str]) -> str:
    """An HTML heading line as the ATX heading it shows as (its inner tags and their text kept for the
    passes after: a hidden span inside is still removed)."""
    return f"{'#' * int(match.group(1))} {match.group(2).strip()}"


# A line of HTML tags alone in Markdown holding pictures ('<img src="dog.png" alt="The dog asleep">', or
# '<p align="center"><img …></p>', as READMEs write a sized or centred image): the figure a Markdown image
# line is, its alt text read as a paragraph.
_MD_HTML_IMAGE_LINE = re.compile(r"^[ \t]*+(?:<[^<>\n]++>[ \t]*+)+$", re.IGNORECASE | re.MULTILINE)
_HTML_IMAGE_TAG = re.compile(r"<img\b[^<>\n]*>", re.IGNORECASE)
_HTML_ALT = re.compile(r"\balt\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'>]+))", re.IGNORECASE)
_HTML_HIDDEN_ATTRIBUTE = re.compile(r"\shidden\b|\baria-hidden\s*=\s*[\"']?true", re.IGNORECASE)


def _md_images(match: re.Match[str]) -> str:
    """A line of tags with its pictures written in Markdown image syntax (`![alt]()`), so `_md_plain_lines`
    reads it as a figure; the other tags stay for `_MD_HIDDEN_HTML` (a hidden one around a picture removes
    it); a hidden picture, or one without alt text, is left out."""
    return _HTML_IMAGE_TAG.sub(_md_image, match.group())


def _md_image(match: re.Match[str]) -> str:
    tag = match.group()
    alt = _HTML_ALT.search(tag)
    if alt is None or _HTML_HIDDEN_ATTRIBUTE.search(tag) or _HIDDEN_STYLE.search(tag):
        return ""
    said = " ".join(html.unescape(next(g for g in alt.groups() if g is not None)).split())
    return f" ![{said.replace('[', '(').replace(']', ')')[:500]}]() " if said else ""


def _without_hidden_html(lines: list[str]) -> list[str]:
    """Lines with hidden HTML removed outside code fences and inline code spans (both show HTML as code)."""
    out: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            shown = "\n".join(prose)
            shown = _MD_HTML_IMAGE_LINE.sub(_md_images, shown) if "<img" in shown.lower() else shown
            shown = _MD_HIDDEN_HTML.sub(_keep_code, _MD_HTML_HEADING.sub(_atx_heading, shown))
            out.extend(shown.split("\n"))
            prose.clear()

    reader = FenceReader()
    for line in lines:
        if reader.read(line) == "text":
            prose.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return out


# Where an indented code block opens and closes (`_marked_indented_code`): a fence line to the passes that
# follow, which leave fenced lines as typed; `_normalise` drops these lines. A noncharacter: never in text.
_CODE_MARK = "~~~\ufdd1"
_LIST_MARKER = re.compile(r"([-+*]|\d{1,9}[.)])(?:([ \t]+)(.?)|$)")
_THEMATIC_BREAK = re.compile(r"([-*_])(?:[ \t]*\1){2,}[ \t]*")
MARKDOWN_CODE_INDENT = 4  # columns past a list item's content that make a line code (CommonMark 4.4)


def _marked_indented_code(lines: list[str]) -> list[str]:
    """Lines with each CommonMark indented code block (four columns in, a tab reaching four, past the list
    item it is in) between `_CODE_MARK` lines, so it is kept as typed like a fenced block. A line so
    indented is no code where it continues a paragraph (a wrapped line, a list item's text) or is a list
    item's own content (indented to its text, after a blank line)."""
    out: list[str] = []
    items: list[int] = []  # the content columns of the open list items, innermost last
    previous = "blank"  # the last line outside code: "blank", "paragraph", "other" (heading, rule, fence)
    reader = FenceReader()  # a fenced block's lines, a list item's included, are no indented code
    code: list[str] = []  # the open code block; its blank lines at the end are not its own
    for line in lines:
        role = reader.read(line)
        if role in ("code", "close"):
            previous = "other" if role == "close" else previous
            out.append(line)
            continue
        fence_match = role == "open"
        if not line.strip():
            (code if code else out).append(line)
            previous = "blank" if previous == "paragraph" else previous
            continue
        expanded = line.expandtabs(MARKDOWN_CODE_INDENT)
        text = expanded.lstrip(" ")
        width = len(expanded) - len(text)
        if previous != "paragraph" or fence_match or _ATX_HEADING.match(text) or _THEMATIC_BREAK.fullmatch(text):
            while items and width < items[-1]:  # a line left of an item's text ends it (a lazy line aside)
                items.pop()
        base = items[-1] if items else 0
        if width - base >= MARKDOWN_CODE_INDENT and previous != "paragraph":
            code.append(line)
            continue
        if code:
            out.extend(_closed_code(code))
            previous = "other"
        out.append(line)
        marker = _LIST_MARKER.match(text) if width - base < MARKDOWN_CODE_INDENT else None
        if fence_match:
            previous = "other"
        elif _ATX_HEADING.match(text) or _THEMATIC_BREAK.fullmatch(text):
            previous = "other"
        elif previous == "paragraph" and _SETEXT_UNDERLINE.match(text):
            previous = "other"
        elif marker:
            while items and items[-1] > width:
                items.pop()
            spaces = len(marker.group(2) or "")
            items.append(width + len(marker.group(1)) + (spaces if 0 < spaces <= 4 and marker.group(3) else 1))
            previous = "paragraph"
        else:
            previous = "paragraph"
    if code:
        out.extend(_closed_code(code))
    return out


def _closed_code(code: list[str]) -> list[str]:
    """An indented code block's lines between `_CODE_MARK` lines, the blank lines after it outside; emptied."""
    end = len(code)
    while not code[end - 1].strip():
        end -= 1
    lines = [_CODE_MARK, *code[:end], _CODE_MARK, *code[end:]]
    code.clear()
    return lines


def _clean_heading(title: str) -> str:
    """A heading as it is stored and cited: no emphasis marks, and no control or invisible characters
    (they are dropped from the text by `_normalise`, and a heading is shown as the text is)."""
    title = re.sub(r"[*_`]+", "", strip_unsafe(title))
    return re.sub(r"\s+", " ", title).strip()


def _push_heading(path: list[tuple[int, str]], level: int, title: str) -> tuple[str, ...]:
    """Replace headings at this level or deeper with the new one; return the new heading path."""
    while path and path[-1][0] >= level:
        path.pop()
    if title:
        path.append((level, title))
    return tuple(t for _, t in path)


# Front matter: YAML between '---' lines (closed by '---' or '...'), TOML between '+++' lines, at the very
# start of the file (Jekyll, Hugo, Obsidian, pandoc). Its title, a top-level key, is the document's title.
_FRONT_MATTER_OPEN = {"---": ("---", "..."), "+++": ("+++",)}
_FRONT_MATTER_TITLE = re.compile(r"title[ \t]*[:=][ \t]*(.*?)[ \t]*", re.IGNORECASE)


def _front_matter_title(lines: list[str]) -> tuple[str | None, list[str]]:
    """The title of the file's front matter, if it has any, and its lines without the front matter: its
    keys (dates, tags, layout) are the site generator's settings, never the document's text. A file that
    opens with '---' never closed is a thematic break, not front matter, and is left as it is."""
    closers = _FRONT_MATTER_OPEN.get(lines[0].strip()) if lines else None
    end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip() in closers), None) if closers else None
    if end is None:
        return None, lines
    title = next(
        (found.group(1) for line in lines[1:end] if (found := _FRONT_MATTER_TITLE.fullmatch(line.rstrip()))),
        "",
    )
    title = title.strip("\"'").strip()
    return title or None, lines[end + 1 :]


def _titled(lines: list[str]) -> list[str]:
    """Front matter replaced by its title as the document's first heading, unless the text opens with that
    heading already."""
    title, lines = _front_matter_title(lines)
    if title is None or not any(line.strip() for line in lines):
        return lines  # front matter alone is no document: "contains no text"
    first = next((line for line in lines if line.strip()), "")
    opening = _ATX_HEADING.match(first)
    if opening and len(opening.group(1)) == 1 and _clean_heading(opening.group(2) or "") == _clean_heading(title):
        return lines
    return [f"# {title}", "", *lines]


# A GFM table: a header row, then a delimiter row of dashes (colons for alignment) between pipes.
_TABLE_DELIMITER = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*")
_TABLE_PIPE = re.compile(r"(?<!\\)\|")


def _table_cells(line: str) -> list[str]:
    """A table row's cells: split at pipes not escaped, the outer pipes optional."""
    row = line.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.strip().replace("\\|", "/") for cell in _TABLE_PIPE.split(row)]  # as HTML's cells read


def _labelled_row(header: list[str], cells: list[str]) -> str:
    """One body row as a list item with each cell named by its column ('- Year: 1903; Keeper: Ambrose
    Kittow.', as the extractive answer quotes a row under its header; the full stop makes it a sentence of
    its own): a table longer than a chunk is cut between rows, and a chunk that began mid-table read its
    first row as the header of the rest ('Boat 16: Boat 17; 1916: 1917')."""
    labels = [column_label(label) for label in header]
    named = [f"{label}: {cell}" if label else cell for label, cell in zip(labels, cells, strict=False) if cell]
    named += [cell for cell in cells[len(header) :] if cell]
    lines = []
    for piece in _row_pieces(named):
        row = "; ".join(piece)
        lines.append(f"- {row}" if row.endswith((".", "!", "?", "\u2026")) else f"- {row}.")
    return "\n".join(lines)


ROW_PIECE_CHARS = 400  # a labelled row longer than this (about a leaf's 100 tokens) is written as several lines


def _row_pieces(named: list[str]) -> list[list[str]]:
    """A row's labelled cells in lines of ROW_PIECE_CHARS at most, cut between cells, each line after the
    first opening with the row's first cell again (what names the row: 'Boat: Kittiwake'). A row longer than
    a leaf was cut by the chunker at its clauses, or read as prose past 1,000 characters, so a cell far
    along it ('Skipper: Ambrose Kittow' after a long 'Notes') was quoted without the row it belongs to. A
    cell longer than a line goes on a line of its own with that first cell."""
    if len("; ".join(named)) <= ROW_PIECE_CHARS or len(named) < 3:
        return [named] if named else []
    pieces = [[named[0]]]
    for cell in named[1:]:
        if len(pieces[-1]) > 1 and len("; ".join([*pieces[-1], cell])) > ROW_PIECE_CHARS:
            pieces.append([named[0]])
        pieces[-1].append(cell)
    return pieces


def _labelled_tables(lines: list[str]) -> list[str]:
    """Markdown tables outside code fences as one list item per body row, each labelled by the header
    (which then adds nothing and is dropped, with the delimiter row), so every row reads alone in
    whichever chunk it lands; a table with no body rows keeps its header."""
    out: list[str] = []
    reader = FenceReader()
    i = 0
    while i < len(lines):
        line = lines[i]
        if reader.read(line) != "text":
            out.append(line)
            i += 1
            continue
        header = _table_cells(line) if "|" in line and i + 1 < len(lines) else []
        if header and _TABLE_DELIMITER.fullmatch(lines[i + 1]) and len(_table_cells(lines[i + 1])) == len(header):
            end = i + 2
            while end < len(lines) and lines[end].strip() and "|" in lines[end] and not _FENCE.match(lines[end]):
                end += 1
            rows = [_labelled_row(header, _table_cells(row)) for row in lines[i + 2 : end]]
            out.extend([row for row in rows if row] or [line])
            i = end
            continue
        out.append(line)
        i += 1
    return out


# Markdown's inline syntax, which a renderer turns into what it shows: quotes, sentences and vectors see
# that, never the syntax ('built by [John Hale](http://a.b/c)' reads 'built by John Hale'). Every part is
# bounded in length, so a line of unclosed openers is read in one pass, not once per opener; but an address,
# whatever its length (an image pasted as a data: URI is tens of kB of base64), is taken possessively: it
# ends at the first space or parenthesis, which the next opener needs, so each stretch is scanned once.
_MD_REFERENCE_DEFINITION = re.compile(
    r"^ {0,3}\[(?!\^)([^\]\n]{1,999})\]:[ \t]*<?[^\s>]*+>?(?:[ \t]+(?:\"[^\"\n]{0,500}\"|'[^'\n]{0,500}'|\([^)\n]{0,500}\)))?[ \t]*$"
)
_MD_FOOTNOTE_DEFINITION = re.compile(r"^ {0,3}\[\^([^\]\s]{1,100})\]:[ \t]*")
_MD_URL = r"(?:<[^<>\n]*+>|(?:[^()\s]++|\([^()\s]*+\))*+)(?:\s+(?:\"[^\"\n]{0,500}\"|'[^'\n]{0,500}'|\([^)\n]{0,500}\)))?"
# A link's text: brackets inside it in balanced pairs, one deep (an image in a link: `[![build](b.svg)](ci)`).
_MD_LINK_TEXT = r"(?:[^\[\]]|\[[^\[\]]{0,500}\]){0,500}"
_MD_INLINE = re.compile(
    r"(?P<code>(?<!`)(?P<ticks>`++)(?P<code_text>(?:(?!(?P=ticks)(?!`)).){1,2000}?)(?P=ticks)(?!`))"
    r"|\\(?P<escaped>[!-/:-@\[-`{-~])"
    rf"|!?\[(?P<link>{_MD_LINK_TEXT})\]\((?:{_MD_URL})\)"
    r"|\[\^(?P<note>[^\]\s]{1,100})\]"
    r"|!?\[(?P<ref_text>[^\[\]]{1,500})\](?:\[(?P<ref>[^\[\]]{0,500})\])?(?![(:])"
    r"|<(?P<autolink>[a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^\s<>]{1,2000}|[\w.+-]{1,200}@[\w-]{1,200}(?:\.[\w-]{1,200}){1,10})>"
    r"|(?P<marks>\*\*\*|___|\*\*|__|~~|\*|_)(?P<emphasised>(?=\S)(?:(?!(?P=marks)).){1,1000}?(?<=\S))(?P=marks)"
    r"|(?P<entity>&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});)",
    re.DOTALL,
)
MAX_INLINE_NESTING = 4  # emphasis inside a link inside emphasis...: deeper is left as written
# Every match of `_MD_INLINE` starts with one of these characters: a text without any reads as written.
_MD_INLINE_STARTS = re.compile(r"[`\\!\[<*_~&]")


def _md_label(label: str) -> str:
    """A link reference's label as Markdown matches it: case and runs of white space do not count."""
    return " ".join(label.split()).casefold()


# A line of nothing but images (a figure): its alt text is its own line, joined to no sentence.
_MD_FIGURE_LINE = re.compile(r"(?:[ \t]*!\[[^\[\]\n]{0,500}\]\([^()\n]*+\))+[ \t]*")
_DROPPED = "\ufdd0"  # where an image was taken out of a sentence (a noncharacter: never in text)
# Starting only where a run of spaces starts: tried at every space of a run, the run was read again from
# each (a nested list of 3,000 levels, 9 MB of indentation, took 35 s CPU; now 1.6 s).
_DROPPED_WITH_SPACE = re.compile(f"(?<![ \t])[ \t]*+{_DROPPED}")


def _md_inline(text: str, labels: frozenset[str], *, images: bool = True) -> str:
    """`text` as a Markdown renderer shows it: links and images as their text, reference links whose label
    is defined likewise, autolinks as their address, code spans as their code, emphasis and strikethrough
    marks, backslash escapes and HTML entities resolved; a footnote reference `[^2]` as '(note 2)'.
    Without `images`, an image is taken out with the space before it, as the HTML and Word readers leave
    out an <img>: its alt text ('a photo of the mill') inlined would break the sentence it stands in."""
    shown = _md_shown(text, labels, 0, images)
    return shown if images or _DROPPED not in shown else _DROPPED_WITH_SPACE.sub("", shown)


def _md_shown(text: str, labels: frozenset[str], depth: int, images: bool) -> str:
    """One level of `_md_inline`: an image is `_DROPPED` unless `images`; nested syntax one level deeper."""

    def inner(part: str) -> str:
        return _md_shown(part, labels, depth + 1, images)

    def shown(match: re.Match[str]) -> str:
        if not images and match.group(0).startswith("!["):
            return _DROPPED
        kind = match.lastgroup if match.group("code") is None else "code"
        if kind == "code":
            code = match.group("code_text")
            return code[1:-1] if len(code) > 2 and code[0] == code[-1] == " " and code.strip() else code
        if match.group("escaped") is not None:
            return match.group("escaped")
        if match.group("link") is not None:
            return inner(match.group("link")) if depth < MAX_INLINE_NESTING else match.group(0)
        if match.group("ref_text") is not None:
            label = match.group("ref") or match.group("ref_text")
            if _md_label(label) not in labels or depth >= MAX_INLINE_NESTING:
                return match.group(0)  # no such reference: a renderer shows the brackets as written
            return inner(match.group("ref_text"))
        if match.group("note") is not None:
            return f" (note {match.group('note')})"
        if match.group("autolink") is not None:
            return match.group("autolink")
        if match.group("emphasised") is not None:
            marks, emphasised = match.group("marks"), match.group("emphasised")
            start, end = match.span()
            if _word_char_at(match.string, start - 1) and _word_char_at(match.string, end):
                return marks + inner(emphasised) + marks  # snake_case, 2*3*4: not emphasis
            return inner(emphasised) if depth < MAX_INLINE_NESTING else match.group(0)
        return html.unescape(match.group("entity"))

    if not _MD_INLINE_STARTS.search(text):  # most paragraphs of prose: the alternation tried at each character
        return text
    return _MD_INLINE.sub(shown, text)


def _word_char_at(text: str, index: int) -> bool:
    """Whether text[index] exists and is a letter, digit or underscore: marks with one on both sides are
    no emphasis ('snake_case_name', '2*3*4')."""
    return 0 <= index < len(text) and (text[index].isalnum() or text[index] == "_")


def _md_plain_lines(lines: list[str]) -> list[str]:
    """Lines outside code fences with Markdown's inline syntax resolved (`_md_inline`), paragraph by
    paragraph so a link's text may wrap; link reference definitions (`[1]: http://…`) removed, and a
    footnote's definition (`[^2]: The log…`) opened as 'Note 2: The log…'."""
    labels = frozenset(_md_label(found.group(1)) for line in lines if (found := _MD_REFERENCE_DEFINITION.match(line)))
    out: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        # a line of only images is a figure: its alt text a line of its own; elsewhere images are left out
        for figure, run in itertools.groupby(paragraph, key=lambda line: bool(_MD_FIGURE_LINE.fullmatch(line))):
            shown = _md_inline("\n".join(run), labels, images=figure).split("\n")
            out.extend(["", *shown, ""] if figure else shown)  # a paragraph of its own, not a sentence's end
        paragraph.clear()

    reader = FenceReader()
    for line in lines:
        if reader.read(line) != "text":
            flush()
            out.append(line)
        elif _MD_REFERENCE_DEFINITION.match(line):
            flush()
        elif not line.strip():
            flush()
            out.append(line)
        else:
            note = _MD_FOOTNOTE_DEFINITION.match(line)
            hard_break = (len(line) - len(line.rstrip("\\"))) % 2  # a last backslash not itself escaped
            line = line[: len(line) - hard_break]
            paragraph.append(f"Note {note.group(1)}: {line[note.end() :]}" if note else line)
    flush()
    return out


# Discord's own markdown beyond Markdown's: a spoiler (||hidden until clicked||, across lines too), a line's
# block quote, subtext or heading mark ("> ", ">>> ", "-# ", "## "), a custom emoji (<:name:id>, a
# picture), and a code block, which may open mid-line and runs to the end when it is not closed.
_CHAT_SPOILER = re.compile(r"(?<!\\)\|\|(.*?\S.*?)(?<!\\)\|\|", re.DOTALL)
_CHAT_LINE_MARK = re.compile(r"^[ \t]*(?:>>> |> |-# |#{1,3} )", re.MULTILINE)
_CHAT_CODE_BLOCK = re.compile(r"(```.*?(?:```|\Z))", re.DOTALL)
_CHAT_FENCE = re.compile(r"^```(?:[A-Za-z0-9_+.#-]{1,20}\n)?|```$")
_CUSTOM_EMOJI = re.compile(r"<a?:[\w~]{1,32}:\d{1,20}>")


def chat_plain(text: str, *, fences: bool = True) -> str:
    """A chat message's text as the client shows it, for a stored message (the channel's knowledge base)
    and for a question asked in a message alike: Markdown's inline syntax read as a renderer shows it
    (`_md_inline`: masked links as their text, emphasis, code spans, escapes), spoilers as their words, a
    line's quote, subtext and heading marks removed, custom emoji (pictures, not words) left out;
    mentions and timestamps stay as written. Inside a code block nothing is markup: its code is kept as
    written, with its fences where `fences` (a stored message: its code keeps its layout on a context
    page) or without them and their language tag (a question: the words it asks)."""
    pieces = _CHAT_CODE_BLOCK.split(text)  # odd pieces are code blocks
    return "".join(
        (piece if fences else _CHAT_FENCE.sub(" ", piece))
        if i % 2
        else _CHAT_LINE_MARK.sub("", _md_inline(_CHAT_SPOILER.sub(r"\1", _CUSTOM_EMOJI.sub("", piece)), frozenset()))
        for i, piece in enumerate(pieces)
    )


# A block quote nested inside another ('>> ', '> > > '): kept as one level's marker, as a quote one deep is,
# so a line of 100,000 markers is one marker and its words, not 100,000 characters of '>' to store and embed.
_NESTED_QUOTE = re.compile(r"^ {0,3}>(?:[ \t]*+>)++[ \t]?")


def _read_markdown(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """Split at `#` (and underlined) headings outside code fences; heading lines stay in the text. Front
    matter gives the document its title; table rows are labelled with their columns; links, emphasis and
    code spans read as a renderer shows them."""
    text, notice = _decode_text(name, data)
    return [_Block("", notice=notice), *_markdown_blocks(text)]


def markdown_text(text: str) -> str:
    """`text` as the Markdown reader reads it (emphasis, links, tables and images rendered): what a .txt
    holding Markdown would read as under a .md name, for telling the two are one document."""
    return _assemble("", _markdown_blocks(text), "md").text


def _markdown_blocks(text: str) -> list[_Block]:
    """Markdown text's blocks, one per heading section, with their heading paths."""
    lines = text.replace(_CODE_MARK[-1], "").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    # hidden HTML first: an indented line inside a comment, or between a hidden <div>'s tags, is no code
    lines = _md_plain_lines(_labelled_tables(_marked_indented_code(_without_hidden_html(_titled(lines)))))
    blocks: list[_Block] = []
    current: list[str] = []
    heading: tuple[str, ...] = ()
    path: list[tuple[int, str]] = []

    def start_block(new_heading: tuple[str, ...], first_lines: list[str]) -> None:
        nonlocal current, heading
        if any(line.strip() for line in current):
            blocks.append(_Block("\n".join(current), heading=heading, marked_code=True))
        current, heading = list(first_lines), new_heading

    reader = FenceReader()
    for line in lines:
        if reader.read(line) != "text":
            current.append(line)
            continue
        line = _NESTED_QUOTE.sub("> ", line, count=1)
        atx = _ATX_HEADING.match(line)
        if atx:
            start_block(_push_heading(path, len(atx.group(1)), _clean_heading(atx.group(2) or "")), [line])
            continue
        underline = _SETEXT_UNDERLINE.match(line)
        if underline and current and current[-1].strip() and not _ATX_HEADING.match(current[-1]):
            previous_para_ended = len(current) < 2 or not current[-2].strip()
            if previous_para_ended and (underline.group(1)[0] == "=" or len(underline.group(1)) >= 2):
                title_line = current.pop()
                level = 1 if underline.group(1)[0] == "=" else 2
                new_heading = _push_heading(path, level, _clean_heading(title_line))
                # the heading as an ATX one reads: its underline is no text (a renderer draws a heading)
                start_block(new_heading, [f"{'#' * level} {title_line.strip()}"])
                continue
        current.append(line)
    start_block((), [])
    return blocks


# ------------------------------------------------------------------------------------------------ pdf


def _pdf_configuration(limits: LoadLimits) -> dict[str, int]:
    """pypdf's own decompression caps set to ours, so an inflating stream stops at the limit."""
    cap = limits.max_expanded_bytes
    return {
        "zlib_maximum_output_length": cap,
        "lzw_maximum_output_length": cap,
        "run_length_maximum_output_length": cap,
        "brotli_maximum_output_length": cap,
        "array_based_stream_maximum_output_length": cap,
        "maximum_declared_stream_length": cap,
    }


def _read_pdf(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """One block per page (1-based page numbers); refuses non-PDFs, encrypted, corrupt, scanned and bomb files."""
    if b"%PDF-" not in data[:1024]:
        kind = _content_kind(data)
        if kind:
            raise IngestError(name, f"is {kind}, not a PDF (the .pdf extension does not match its content).")
        raise IngestError(name, "is not a PDF file (the .pdf extension does not match its content).")
    from pypdf import apply_configuration

    _share_named_encodings()
    with apply_configuration(**_pdf_configuration(limits)):
        return _read_pdf_pages(name, data, limits)


@functools.cache
def _named_encoding(encoding: str) -> tuple[tuple[int, str], ...]:
    from pypdf._codecs import encoding_dict_from_named_encoding

    return tuple(encoding_dict_from_named_encoding(encoding).items())


def _fresh_named_encoding(encoding: str) -> dict[int, str]:
    """pypdf's `encoding_dict_from_named_encoding`, its 256 decodes made once per encoding: a fresh dict
    each call (pypdf may change the one it gets), built from the tuple kept."""
    return dict(_named_encoding(encoding))


@functools.cache
def _share_named_encodings() -> None:
    """Point pypdf's text extractor and fonts at `_fresh_named_encoding`: each page's extraction built the
    WinAnsi table afresh (256 byte decodes a page, a fifth of the CPU of a 2,000-page PDF of one line a
    page). The same table each time; where pypdf has moved the name, nothing is changed."""
    import importlib

    for module in ("pypdf._text_extraction._text_extractor", "pypdf.generic._font"):
        with contextlib.suppress(ImportError):
            target = importlib.import_module(module)
            if hasattr(target, "encoding_dict_from_named_encoding"):
                target.encoding_dict_from_named_encoding = _fresh_named_encoding


# pypdf's words for a stream that unpacks past the caps `_pdf_configuration` sets; a stream read to its
# "endstream" past the declared cap ends "...allowed length of <cap>." (another of pypdf's limits caps a
# number's or a name's length, which only damaged bytes pass; its loops and cycles are damage too).
_PDF_EXPANSION_CAPS = ("decompress", "declared stream length", "output bytes")


def _pdf_failure(name: str, exc: Exception, limits: LoadLimits, what: str) -> IngestError:
    """The one sentence for an exception from pypdf: a page tree that loops, a cap it hit, a missing AES
    library, or corruption."""
    from pypdf.errors import DependencyError, LimitReachedError

    log.info("%s: pypdf failed while %s: %r", name, what, exc)
    if any(sign in str(exc).lower() for sign in _PAGE_TREE_CYCLE):
        return IngestError(name, "is a damaged PDF: its list of pages leads back into itself, so its pages cannot be found.")
    if isinstance(exc, LimitReachedError):
        message = str(exc).lower()
        if any(cap in message for cap in _PDF_EXPANSION_CAPS) or message.endswith(
            f"allowed length of {limits.max_expanded_bytes}."
        ):
            return _too_expanded(name, limits)
        if message.startswith("read stream length") or "detected loop" in message or "detected cycle" in message:
            return IngestError(name, "is a corrupt or truncated PDF.")  # a number longer than any, an object its own part
        return IngestError(name, "is too complex to read safely (it passes one of the PDF reader's limits).")
    if isinstance(exc, DependencyError) and _AES_MISSING.search(str(exc)):
        return IngestError(
            name, "is encrypted with AES, and the server lacks the 'cryptography' package needed to open it."
        )
    if isinstance(exc, DependencyError):  # a filter pypdf needs another program or package for
        what = next((shown for sign, shown in _PDF_DECODERS if sign in str(exc).lower()), "a compression")
        return IngestError(name, f"stores its pages' content with {what} this server cannot decode, so its text cannot be read.")
    return IngestError(name, "is a corrupt or truncated PDF.")


# pypdf's words when AES needs the 'cryptography' package; its other DependencyErrors are decoders (jbig2dec, Pillow)
_AES_MISSING = re.compile(r"cryptography|\bAES\b", re.IGNORECASE)
_PDF_DECODERS = (("jbig2", "JBIG2 compression, which"), ("brotli", "Brotli compression, which"))

# pypdf's words for a page tree that holds itself (a /Kids entry naming a node above it)
_PAGE_TREE_CYCLE = ("cyclic page references", "cycle in /pages hierarchy")


# Lines of one character each (or none: a space drawn alone), many in a row: what pypdf's plain
# extraction makes of a line whose glyphs were drawn one at a time.
_GLYPH_LINES = re.compile(r"(?:^[^\n]?\n){12,}", re.MULTILINE)


class _StreamDamage(logging.Handler):
    """Counts pypdf's reports of a content stream it could not decompress whole: it reads what it can and
    only logs the rest, so a damaged page came back empty or cut short with nothing said."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.seen += "while decompressing" in record.getMessage()


@contextlib.contextmanager
def _watching_streams() -> Iterator[_StreamDamage]:
    logger = logging.getLogger("pypdf.filters")
    handler, level = _StreamDamage(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _hidden_layers(reader: Any) -> frozenset[int]:
    """The optional content groups (layers) a viewer hides when it opens the file: those its default
    configuration lists as /OFF, or all but its /ON ones under /BaseState /OFF. Their text is no more
    shown than an HTML element with display:none, and could carry instructions no reader sees."""
    try:
        properties = reader.root_object.get("/OCProperties")
        properties = properties.get_object() if properties is not None else None
        if not hasattr(properties, "get"):
            return frozenset()
        default = (properties.get("/D") or {}).get_object()
        groups = {ref.idnum for ref in list(properties.get("/OCGs") or [])[:MAX_FORM_FIELDS] if hasattr(ref, "idnum")}
        listed = {key: {ref.idnum for ref in list(default.get(key) or [])[:MAX_FORM_FIELDS] if hasattr(ref, "idnum")}
                  for key in ("/ON", "/OFF")}  # fmt: skip
        off = groups - listed["/ON"] if default.get("/BaseState") == "/OFF" else listed["/OFF"]
    except Exception as exc:  # a damaged configuration: every layer read, as before
        log.info("optional content unreadable: %r", exc)
        return frozenset()
    return frozenset(off)


def _layer_hidden(target: Any, off: frozenset[int]) -> bool:
    """Whether an /OC entry (a layer, or a membership dictionary of layers and its /P policy) is hidden."""
    reference = getattr(target, "indirect_reference", None) or target
    target = target.get_object() if hasattr(target, "get_object") else target
    if not hasattr(target, "get"):
        return False
    if target.get("/Type") != "/OCMD":
        return getattr(reference, "idnum", None) in off
    members = target.get("/OCGs")
    members = [members] if hasattr(members, "idnum") else list(members or [])[:MAX_FORM_FIELDS]
    states = [getattr(m, "idnum", None) in off for m in members]
    if not states:
        return False
    policy = target.get("/P", "/AnyOn")
    return {"/AllOn": any(states), "/AnyOff": not any(states), "/AllOff": not all(states)}.get(policy, all(states))


def _resolved(value: Any) -> Any:
    """A PDF dictionary entry's object (an indirect reference followed), or an empty dict."""
    value = value.get_object() if hasattr(value, "get_object") else value
    return value if hasattr(value, "items") else {}


def _without_hidden_layers(page: Any, off: frozenset[int]) -> int:
    """Leave out of `page`'s content what its hidden layers draw: marked content opened with `/OC /name BDC`
    whose layer is off (to its matching EMC), and forms drawn with `Do` whose /OC is off. Returns how
    many operations were left out."""
    from pypdf.generic import ContentStream, NameObject

    resources = _resolved(page.get("/Resources"))
    properties = _resolved(resources.get("/Properties"))
    xobjects = _resolved(resources.get("/XObject"))
    hidden = {name for name, target in list(properties.items())[:MAX_FORM_FIELDS] if _layer_hidden(target, off)}
    forms = {name for name, form in list(xobjects.items())[:MAX_FORM_FIELDS]
             if "/OC" in form.get_object() and _layer_hidden(form.get_object()["/OC"], off)}  # fmt: skip
    content = page.get_contents() if hidden or forms else None
    if content is None:
        return 0
    kept: list[tuple[Any, bytes]] = []
    skipping = 0  # marked-content depth inside a hidden layer
    for operands, operator in content.operations:
        if skipping:
            skipping += operator in (b"BMC", b"BDC")
            skipping -= operator == b"EMC"
        elif operator == b"BDC" and len(operands) == 2 and operands[0] == "/OC" and operands[1] in hidden:
            skipping = 1
        elif not (operator == b"Do" and operands and operands[0] in forms):
            kept.append((operands, operator))
    filtered = ContentStream(None, content.pdf)
    filtered.operations = kept
    page[NameObject("/Contents")] = filtered
    return len(content.operations) - len(kept)


def _visible_layers_only(name: str, page: Any, off: frozenset[int]) -> int:
    """`_without_hidden_layers`, where a damaged layer or content leaves the page read whole (as before)
    rather than skipped: the text extraction that follows judges the page's damage."""
    try:
        return _without_hidden_layers(page, off)
    except Exception as exc:
        log.info("%s: hidden layers not left out: %r", name, exc)
        return 0


def _shown_text_only(name: str, page: Any) -> int:
    """`pdf_sight.blank_unseen_text`, where damaged content leaves the page read whole (the text
    extraction that follows judges the damage)."""
    try:
        return blank_unseen_text(page)
    except Exception as exc:
        log.info("%s: invisible text not left out: %r", name, exc)
        return 0


def _page_text(page: Any) -> str:
    """A page's text. pypdf's plain extraction, except where that spelled a line out glyph by glyph (as
    some PDF writers position every character): then the layout extraction, which joins characters by
    where they sit, so the words survive to be searched and quoted."""
    fragments: list[_Fragment] = []
    text = page.extract_text(visitor_text=functools.partial(_collect_fragment, fragments)) or ""
    if not text.strip() and _draws_glyphs(page):
        return _UNMAPPED_GLYPH  # glyphs drawn whose character map gives nothing: unreadable, not a scan
    if "/" in text:
        text = _unnamed_glyphs(page, text)
    in_columns = _column_text(fragments)
    if in_columns is not None:
        return in_columns
    if not any(sum(c.isalpha() for c in m.group(0)) >= 8 for m in _GLYPH_LINES.finditer(text)):
        return text
    laid_out = page.extract_text(extraction_mode="layout") or ""
    lines = (" ".join(line.split()) for line in laid_out.splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


_SHOW_TEXT = (b"Tj", b"TJ", b"'", b'"')
_UNMAPPED_GLYPH = "\ufffd"  # what a glyph no character map reads as: `_check_readable` counts these
_GLYPH_NAME = re.compile(r"/[A-Za-z][\w.]{0,63}")


def _draws_glyphs(page: Any) -> bool:
    """Whether a page that gave no text draws glyphs all the same (a text-showing operator with a string of
    something other than spaces, in its own content: a font whose character map maps them to nothing), so
    it is told from a scan. Asked only of pages without text, so a page of text pays nothing for it."""
    content = page.get_contents()
    for operands, operator in content.operations if content is not None else ():
        if operator in _SHOW_TEXT and operands:
            strings = operands[-1] if operator == b"TJ" and isinstance(operands[-1], list) else operands[-1:]
            if any(isinstance(piece, (str, bytes)) and _drawn(piece) for piece in strings):
                return True
    return False


def _drawn(piece: str | bytes) -> bool:
    raw = piece.get_original_bytes() if hasattr(piece, "get_original_bytes") else piece
    return bool(raw.strip(b" ") if isinstance(raw, bytes) else raw.strip(" "))


def _unnamed_glyphs(page: Any, text: str) -> str:
    """`text` with the glyph names pypdf writes for glyphs it cannot map ('/g37/g43', a Type3 or TeX
    bitmap font's own names with no ToUnicode map) as unreadable characters, so such a page is refused as
    unreadable rather than stored as names. Only names the page's fonts give their glyphs are replaced."""
    unmapped = _unmapped_glyph_names(page)
    if not unmapped:
        return text
    return _GLYPH_NAME.sub(lambda m: _UNMAPPED_GLYPH if m.group() in unmapped else m.group(), text)


def _unmapped_glyph_names(page: Any) -> set[str]:
    """The glyph names of the page's fonts' /Differences (and its forms' fonts') that name no character."""
    from pypdf._cmap import _glyph_name_to_unicode

    names: set[str] = set()
    try:
        resources = [page.get("/Resources") or {}]
        xobjects = (resources[0].get("/XObject") or {}) if hasattr(resources[0], "get") else {}
        resources += [x.get_object().get("/Resources") or {} for x in list(xobjects.values())[:MAX_FORM_FIELDS]]
        for res in resources:
            fonts = res.get_object().get("/Font") or {}
            for font in list(fonts.values())[:MAX_FORM_FIELDS]:
                encoding = font.get_object().get("/Encoding")
                encoding = encoding.get_object() if encoding is not None else None
                differences = encoding.get("/Differences") if hasattr(encoding, "get") else None
                for name in list(differences or [])[:1024]:
                    if isinstance(name, str) and _glyph_name_to_unicode(name) is None:
                        names.add(str(name))
    except Exception as exc:  # damaged resources: the text stays as pypdf read it
        log.info("glyph names unreadable: %r", exc)
    return names


@dataclass(frozen=True)
class _Fragment:
    """A piece of a page's text as pypdf's text visitor reports it: where it starts (page space, points),
    its font size there, and its text."""

    x: float
    y: float
    size: float
    text: str

    @property
    def end(self) -> float:
        """Where it ends, estimated: half an em a character (pypdf gives no widths; Latin text averages so)."""
        return self.x + len(self.text) * self.size * AVERAGE_CHAR_EMS


AVERAGE_CHAR_EMS = 0.5
COLUMN_MIN_ROWS = 3  # rows holding text in both columns, for a page to be read as two columns
COLUMN_MIN_SHARE = 0.6  # of the rows holding more than one piece of text
COLUMN_MIN_CHARS = 15  # a column's lines average this many characters: prose, not a table's cells


def _collect_fragment(
    fragments: list[_Fragment], text: str, cm: list[float], tm: list[float], font: object, size: float
) -> None:
    """pypdf's `visitor_text`: each piece of text with its position (the text matrix times the current
    transformation matrix); a piece set at an angle gets size 0, so `_column_text` leaves its page."""
    x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
    y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
    upright = abs(tm[1]) < 1e-6 and abs(tm[2]) < 1e-6 and abs(cm[1]) < 1e-6 and abs(cm[2]) < 1e-6
    if text.strip():
        fragments.append(_Fragment(x, y, float(size or 0) * abs(tm[0] * cm[0]) if upright else 0.0, text))


def _column_text(fragments: list[_Fragment]) -> str | None:
    """A page written in two columns line by line across the page, read as a reader reads it: the left
    column, then the right, between the lines that span both (a centred title, a heading across the page).
    None for any other page (one column, a table, text at an angle), which pypdf's own order reads right."""
    if not fragments or any(f.size <= 0 or "\n" in f.text.strip("\n") for f in fragments):
        return None
    rows = _rows(fragments)
    margin = Counter(round(row[0].x) for row in rows).most_common(1)[0][0]
    gutter = _gutter(rows, margin)
    if gutter is None:
        return None
    # how far the left column's lines reach, by the same estimate of widths: a line alone reaching past
    # it (and past the gutter) spans the page
    paired = sorted(max(f.end for f in row if f.x < gutter - 1) for row in rows if row[0].x < gutter - 1 <= row[-1].x)
    reach = paired[(len(paired) - 1) * 9 // 10]
    out: list[str] = []
    left: list[str] = []
    right: list[str] = []
    for row in rows:
        before = [f for f in row if f.x < gutter - 1]
        after = [f for f in row if f.x >= gutter - 1]
        end = max((f.end for f in before), default=0.0)
        if before and not after and end > gutter and (before[0].x > margin + 2 * before[0].size or end > reach + 3 * before[0].size):
            out += [*left, *right, _joined(row)]  # a line across the page ends the columns above it
            left, right = [], []
            continue
        left += [_joined(before)] if before else []
        right += [_joined(after)] if after else []
    return "\n".join([*out, *left, *right])


def _rows(fragments: list[_Fragment]) -> list[list[_Fragment]]:
    """The fragments in lines, top to bottom, each line's left to right: a fragment within a third of its
    font size of a line's height joins it."""
    rows: list[list[_Fragment]] = []
    for fragment in sorted(fragments, key=lambda f: (-f.y, f.x)):
        if rows and abs(rows[-1][0].y - fragment.y) <= fragment.size / 3:
            rows[-1].append(fragment)
        else:
            rows.append([fragment])
    return [sorted(row, key=lambda f: f.x) for row in rows]


def _gutter(rows: list[list[_Fragment]], margin: float) -> float | None:
    """Where a page's right column starts: the one place, well right of the margin, where a later piece
    of most lines of several pieces starts, with prose on both sides (lines of at least
    `COLUMN_MIN_CHARS` on average) and no third column; None otherwise."""
    split = [row for row in rows if len(row) > 1]
    starts = Counter(round(f.x) for row in split for f in row[1:] if f.x - row[0].x >= 4 * f.size)
    columns = [x for x, count in starts.items() if count >= COLUMN_MIN_ROWS]
    if len(columns) != 1:  # none, or a table's several
        return None
    gutter = columns[0]
    pairs = [
        ([f for f in row if f.x < gutter - 1], [f for f in row if f.x >= gutter - 1])
        for row in split
        if any(abs(f.x - gutter) <= 1 for f in row)
    ]
    pairs = [(before, after) for before, after in pairs if before]
    if len(pairs) < max(COLUMN_MIN_ROWS, COLUMN_MIN_SHARE * len(split)) or gutter - margin < 10 * split[0][0].size:
        return None
    if min(sum(len(_joined(side[i])) for side in pairs) / len(pairs) for i in (0, 1)) < COLUMN_MIN_CHARS:
        return None
    return float(gutter)


def _joined(fragments: list[_Fragment]) -> str:
    """Fragments of one line as one text: a space where a gap of a fifth of an em or more stands between
    two that neither ends nor starts with one."""
    text = ""
    for i, fragment in enumerate(fragments):
        piece = fragment.text.strip("\n")
        if i and not text.endswith(" ") and not piece.startswith(" ") and fragment.x - fragments[i - 1].end >= fragment.size / 5:
            text += " "
        text += piece
    return " ".join(text.split())


# Right-to-left letters (Hebrew, Arabic, Syriac, Thaana, NKo and their presentation forms) and a run of
# them with the spaces and punctuation between (as pypdf reverses it), for `_rtl_in_reading_order`.
_RTL = "\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc"
_RTL_LETTER = re.compile(f"[{_RTL}]")
_RTL_RUN = re.compile(f"[{_RTL}](?:[{_RTL}\\s.,:;!?()\\[\\]\"'\u05be\u060c\u061b\u061f-]*[{_RTL}])?")
_RTL_WORD = re.compile(f"[{_RTL}]+")
_LTR_OR_DIGIT = re.compile(r"[^\W_]", re.ASCII)
_HEBREW_FINALS = "\u05da\u05dd\u05df\u05e3\u05e5"  # ך ם ן ף ץ: only ever at a word's end
_ARABIC_ENDS = "\u0629\u0649"  # ة ى: only ever at a word's end
_SENTENCE_ENDS = ".!?:\u061f"


def _rtl_in_reading_order(text: str) -> str:
    """A page's text with its right-to-left runs turned back, where the page drew them in logical order.
    pypdf reverses right-to-left runs, as layout programs write them in visual order (right to left on
    the page); a writer without a shaping engine (reportlab, some converters) writes them in reading
    order, which the reversal turns backwards. Letters only a word's end can hold (Hebrew's final forms,
    Arabic's ta marbuta and alef maqsura, the article ال at a start) and full stops opening lines tell
    which: only a page whose signs say "backwards" is turned. Digits and Latin words keep their order."""
    if not _RTL_LETTER.search(text):
        return text
    backwards = forwards = 0
    for word in _RTL_WORD.findall(text):
        if len(word) < 2:
            continue
        backwards += word[0] in _HEBREW_FINALS or word[0] in _ARABIC_ENDS or (len(word) > 3 and word.endswith("\u0644\u0627"))
        forwards += word[-1] in _HEBREW_FINALS or word[-1] in _ARABIC_ENDS or (len(word) > 3 and word.startswith("\u0627\u0644"))
    for line in text.split("\n"):
        line = line.strip()
        backwards += len(line) > 1 and line[0] in _SENTENCE_ENDS and _RTL_LETTER.match(line[1]) is not None
        forwards += len(line) > 1 and line[-1] in _SENTENCE_ENDS and _RTL_LETTER.match(line[-2]) is not None
    if backwards < 2 or backwards <= forwards:
        return text
    return "\n".join(_rtl_line_turned(line) for line in text.split("\n"))


def _rtl_line_turned(line: str) -> str:
    """One line's right-to-left text in reading order: a line of it alone turned whole (its opening full
    stop to its end; pypdf reversed its brackets' characters with it, so turning back restores them),
    else each run turned where it stands, set apart by a space from the digits or Latin words the
    reversal ran it into."""
    if not _RTL_LETTER.search(line):
        return line
    if not _LTR_OR_DIGIT.search(line):
        return line[::-1].strip()
    turned = _RTL_RUN.sub(lambda m: m.group(0)[::-1], line)
    return re.sub(f"(?<=[{_RTL}])(?=[^\\W_])(?![{_RTL}])|(?<=[^\\W_])(?<![{_RTL}])(?=[{_RTL}])", " ", turned)


def _join_hyphenated(text: str) -> str:
    """A page's words that justified text broke at line ends joined again ('infor-' / 'mation' ->
    'information'); a hyphen before a number, a capital or a space stays ('1887 -', 'Mid-' / 'Winter')."""
    return _HYPHENATED_BREAK.sub(lambda m: "" if text[m.end()].islower() else m.group(0), text)


def _read_pdf_pages(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        encrypted = reader.is_encrypted
    except Exception as exc:
        raise _pdf_failure(name, exc, limits, "opening it") from None
    if encrypted:
        _unlock_pdf(name, reader, limits)
    try:
        pages = list(reader.pages)
    except Exception as exc:
        raise _pdf_failure(name, exc, limits, "listing pages") from None
    if len(pages) > limits.max_pages:
        raise IngestError(name, f"has {len(pages):,} pages, more than the {limits.max_pages:,} allowed.")
    blocks: list[_Block] = []
    failed = partial = 0
    chars = 0
    hidden_layers = _hidden_layers(reader)
    layered = 0  # operations of hidden layers left out
    unseen = 0  # pages with invisible or white-on-white text left out
    for number, page in enumerate(pages, start=1):
        try:
            with _watching_streams() as damage:
                if hidden_layers:
                    layered += _visible_layers_only(name, page, hidden_layers)
                unseen += _shown_text_only(name, page) > 0
                text = _page_text(page)
            partial += damage.seen > 0
        except Exception as exc:
            error = _pdf_failure(name, exc, limits, f"reading page {number}")
            if "corrupt" not in error.reason:
                raise error from None
            failed += 1
            continue
        fields = _form_values(page)
        chars += len(text) + len(fields)
        if chars > limits.max_text_chars:
            raise _too_much_text(name, limits)
        blocks.append(_Block(_join_hyphenated(_rtl_in_reading_order(text)), page=number))
        if fields:
            blocks.append(_Block(fields, page=number))
    if failed == len(pages) and pages:
        raise IngestError(name, "is a corrupt or truncated PDF.")
    if failed:
        blocks.append(_Block("", notice=f"{counted(failed, 'page')} of {len(pages):,} skipped: damaged, so unreadable"))
    if partial:
        blocks.append(_Block("", notice=f"{counted(partial, 'page')} of {len(pages):,} read only in part: damaged"))
    if unseen:
        blocks.append(_Block("", notice=f"text a PDF viewer does not show (invisible, white on white, or off the page) left out "
                                        f"of {counted(unseen, 'page')}"))
    if not any(b.text.strip() for b in blocks):
        if not pages:
            raise IngestError(name, "is a corrupt or truncated PDF (it has no pages).")
        if unseen:
            raise IngestError(name, "has text only where a PDF viewer shows none (invisible, white on white, or off the page), "
                                    "so it shows no text to read.")
        if layered:
            raise IngestError(name, "has text only in layers a PDF viewer hides (optional content turned off), "
                                    "so it shows no text to read.")
        raise IngestError(name, "has no text layer (a scan?); please upload a PDF with selectable text.")
    if all(_PAGE_NUMBER.fullmatch(b.text.strip()) for b in blocks if b.text.strip()):
        raise IngestError(
            name, "has no text layer but page numbers (a scan?); please upload a PDF with selectable text."
        )
    return blocks


# What a scanned PDF's text layer may hold when a scanner or a printer stamped it: a page number or folio
# ('3', 'Page 3 of 12', 'iv', '- 3 -'), nothing to search.
_PAGE_NUMBER = re.compile(r"[-\u2013\u2014\s]*(?:page\s*)?(?:\d{1,5}|[ivxlcdm]{1,8})(?:\s*(?:/|of)\s*\d{1,5})?[-\u2013\u2014\s]*", re.I)
MAX_FORM_FIELDS = 1000  # per page: a form's fields, each a line, not a way around the element caps


def _form_values(page: Any) -> str:
    """A filled form's values on a page, one 'field: value' line each (the field's tooltip, else its
    name): a viewer draws them from the form, not the page's content, so pypdf's text leaves them out
    and 'Name:' was all a return said. Empty fields, unticked boxes and unreadable entries are left out. Text
    typed onto the page with a viewer's text tool (a FreeText annotation) is drawn from its annotation too,
    and read as its own line; comments (sticky notes) are not the page's text and are not read."""
    try:
        annotations = page.get("/Annots") or []
        widgets = [annot.get_object() for annot in list(annotations)[:MAX_FORM_FIELDS]]
    except Exception as exc:  # a damaged annotation array: the page's text is read all the same
        log.info("form fields unreadable: %r", exc)
        return ""
    lines = []
    for widget in widgets:
        if _annotation_unseen(widget):
            continue
        if hasattr(widget, "get") and widget.get("/Subtype") == "/FreeText":  # typed onto the page, drawn by the viewer
            lines.append(" ".join(str(widget.get("/Contents") or "").split()))
            continue
        if not hasattr(widget, "get") or widget.get("/Subtype") != "/Widget":
            continue
        field = widget if "/V" in widget or "/Parent" not in widget else widget["/Parent"].get_object()
        value = field.get("/V")
        label = str(field.get("/TU") or field.get("/T") or widget.get("/TU") or widget.get("/T") or "").strip()
        shown = str(value).lstrip("/") if value is not None and not isinstance(value, (list, dict)) else ""
        if shown and shown != "Off" and label:
            lines.append(f"{label}: {shown}")
    return "\n".join(dict.fromkeys(line for line in lines if line))


# An annotation's flags (/F) that keep a viewer from showing it: Hidden (2) and NoView (32).
_ANNOTATION_UNSEEN_FLAGS = 2 | 32


def _annotation_unseen(annotation: Any) -> bool:
    """Whether a viewer leaves an annotation (a typed note, a form field) off the page: its flags say
    hidden or not to be viewed, so its words, which no reader sees, are not the page's text."""
    if not hasattr(annotation, "get"):
        return False
    try:
        return bool(int(annotation.get("/F") or 0) & _ANNOTATION_UNSEEN_FLAGS)
    except (TypeError, ValueError):
        return False


def _unlock_pdf(name: str, reader: object, limits: LoadLimits) -> None:
    """Open PDFs encrypted with an empty user password (restrictions only, RC4 or AES); refuse real passwords."""
    from pypdf.errors import DependencyError

    try:
        unlocked = bool(reader.decrypt(""))  # type: ignore[attr-defined]
    except DependencyError as exc:
        raise _pdf_failure(name, exc, limits, "decrypting it") from None
    except Exception as exc:
        log.info("%s: decrypt failed: %r", name, exc)
        unlocked = False
    if not unlocked:
        raise IngestError(
            name, "is an encrypted (password-protected) PDF; please upload an unprotected copy."
        )


# ----------------------------------------------------------------------------------------------- docx


# What a zip's stored 'mimetype' entry (OpenDocument, EPUB) says it is: the sentence refusing it as Word.
_ZIP_MIMETYPES = {
    "application/vnd.oasis.opendocument.text": "is an OpenDocument text (LibreOffice), not a Word document; "
    "rename it .odt to add it.",
    "application/epub+zip": "is an EPUB e-book, not a Word document; rename it .epub to add it.",
}
_ZIP_MIMETYPE_BYTES = 100


def zip_mimetype(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> str:
    """What a zip's 'mimetype' entry says it is (OpenDocument and EPUB store one first), read only when that
    entry is small, as those formats store it; '' when there is none."""
    entry = next((info for info in infos if info.filename == "mimetype"), None)
    if entry is None or entry.file_size > _ZIP_MIMETYPE_BYTES:
        return ""
    return archive.read(entry).decode("ascii", "replace").strip()


ODT_MIMETYPES = ("application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.text-template")
EPUB_MIMETYPE = "application/epub+zip"
_ODF_PREFIX = "application/vnd.oasis.opendocument."


def zip_identity(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> str:
    """What a zip says it is, in a sentence's words ('' when it does not say): a Word document by its main
    part, an OpenDocument file or an EPUB by its 'mimetype' entry (the nouns of books.py's kinds)."""
    if word_main_part(archive, infos) is not None:
        return "a Word document"
    mimetype = zip_mimetype(archive, infos)
    if mimetype == EPUB_MIMETYPE:
        return "an EPUB e-book"
    if mimetype in ODT_MIMETYPES:
        return "an OpenDocument text"
    if mimetype.startswith(_ODF_PREFIX):
        return f"an OpenDocument {mimetype.removeprefix(_ODF_PREFIX).split('-')[0].split('+')[0][:30]}"
    return ""


# The package relationship naming a Word document's main part (transitional and strict OOXML), in
# _rels/.rels: Word writes word/document.xml, but Office online and other tools write word/document2.xml
# or another name, and python-docx reads whatever the relationship names.
_MAIN_PART_TYPES = (
    b"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument",
    b"http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument",
)
_RELATIONSHIP = re.compile(rb"<(?:[A-Za-z_][\w.\-]{0,40}:)?Relationship\s([^<>]{0,4000})>")
_REL_ATTRIBUTE = re.compile(rb"""\b(Type|Target|TargetMode)\s*=\s*["']([^"']{0,2000})["']""")
_RELS_BYTES = 1 << 16  # a package's _rels/.rels, read only when at most this big (Word's is under 1 kB)


def word_main_part(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> str | None:
    """The name of a zip's Word main part, or None when it has none: word/document.xml, else the part its
    _rels/.rels names as the office document (an internal target that is in the zip)."""
    names = {info.filename for info in infos}
    if "word/document.xml" in names:
        return "word/document.xml"
    rels = next((info for info in infos if info.filename == "_rels/.rels"), None)
    if rels is None or rels.file_size > _RELS_BYTES:
        return None
    for relationship in _RELATIONSHIP.finditer(archive.read(rels)):
        attributes = {key: value for key, value in _REL_ATTRIBUTE.findall(relationship.group(1))}
        if attributes.get(b"Type") in _MAIN_PART_TYPES and attributes.get(b"TargetMode", b"Internal") == b"Internal":
            target = attributes.get(b"Target", b"").decode("utf-8", "replace").lstrip("/")
            if target in names and target.lower().endswith(".xml"):
                return target
    return None


def _not_word(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> str:
    """Why a zip is no Word document: what its 'mimetype' entry names it (an .odt, an EPUB), read only
    when that entry is small, as those formats store it; else that it is some other zip archive."""
    mimetype = zip_mimetype(archive, infos)
    if mimetype in _ZIP_MIMETYPES:
        return _ZIP_MIMETYPES[mimetype]
    if mimetype.startswith("application/vnd.oasis.opendocument."):
        return "is an OpenDocument file (LibreOffice), not a Word document."
    return held_document(infos, "a Word document") or "is a zip archive but not a Word document."


# Documents a zip may hold when someone zipped a file before sending it (or a tool packed one in another).
_HELD_EXTENSIONS = (".pdf", ".docx", ".odt", ".ott", ".fodt", ".epub", ".txt", ".md")


def held_document(infos: list[zipfile.ZipInfo], noun: str) -> str:
    """What to tell someone who sent a zip of their file under the file's own extension (`noun`: what that
    extension promised, 'a Word document'): the first document of a kind read here that it holds, by its
    name (quoted, short), to unzip and add; '' when it holds none."""
    path = next((info.filename for info in infos if info.filename.lower().endswith(_HELD_EXTENSIONS)), "")
    held = "".join(ch for ch in path.rsplit("/", 1)[-1] if ch.isprintable())
    return f"is a zip archive holding {_shown(held)}, not {noun} itself; unzip it and add that file." if held else ""


MAX_SHOWN_PATH = 60  # characters of a part's name quoted in a refusal


def _shown(path: str) -> str:
    """A part's name as quoted in a refusal: printable, short, in quotes."""
    printable = "".join(ch for ch in path if ch.isprintable())
    return repr(printable[:MAX_SHOWN_PATH] + ("…" if len(printable) > MAX_SHOWN_PATH else ""))


def _check_docx_zip(name: str, data: bytes, limits: LoadLimits) -> None:
    """Reject non-zips, corrupt zips, non-Word zips and zip/XML bombs before python-docx unpacks anything."""
    if not data.startswith(b"PK\x03\x04"):
        kind = _content_kind(data)
        if kind and kind.startswith("an encrypted"):
            raise IngestError(
                name,
                "is an encrypted (password-protected) or old-style (.doc) Word file; please save it as an "
                "unprotected .docx.",
            )
        if kind:
            raise IngestError(
                name, f"is {kind}, not a Word document (the .docx extension does not match its content)."
            )
        raise IngestError(name, "is not a valid .docx file (it is not a zip archive).")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            _check_docx_sizes(name, infos, limits)
            if word_main_part(archive, infos) is None:
                raise IngestError(name, _not_word(archive, infos))
            _scan_docx_xml(name, archive, infos, limits)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:
        log.info("%s: bad zip: %r", name, exc)
        raise IngestError(name, "is a corrupt or truncated .docx file.") from None


def _check_docx_sizes(
    name: str, infos: list[zipfile.ZipInfo], limits: LoadLimits, holder: str = "a Word document",
    markup_suffixes: tuple[str, ...] = _DOCX_XML_SUFFIXES,
) -> None:
    """The sizes the archive declares (zipfile enforces them while unpacking, so they cannot lie): entries,
    total unpacked bytes, compression ratio, and the bytes of the parts named as markup (`markup_suffixes`);
    and no part named twice: which copy a reader takes differs between readers (Python's zipfile takes the
    last, most programs the first), so the text stored could differ from the text the person sees."""
    if len(infos) > DOCX_MAX_ENTRIES:
        raise IngestError(
            name,
            f"is a zip of {len(infos):,} files, more than the {DOCX_MAX_ENTRIES:,} {holder} may hold.",
        )
    total = sum(info.file_size for info in infos)
    packed = sum(info.compress_size for info in infos)
    if total > DOCX_MAX_UNCOMPRESSED or total > DOCX_MAX_RATIO * max(packed, 1024):
        log.warning("%s: refused as zip bomb: %d entries, %d -> %d bytes", name, len(infos), packed, total)
        raise IngestError(name, "unpacks to far more data than its size suggests (a zip bomb?).")
    markup = sum(info.file_size for info in infos if info.filename.lower().endswith(markup_suffixes))
    if markup > limits.max_expanded_bytes:
        log.warning("%s: %d bytes of XML unpacked", name, markup)
        raise _too_expanded(name, limits)
    twice = next((path for path, seen in Counter(info.filename for info in infos).items() if seen > 1), None)
    if twice is not None:
        raise IngestError(
            name, f"has two parts named {_shown(twice)} (a damaged or tampered file: programs differ on which they show)."
        )


# Why a .docx part in an encoding no codec knows is refused ({} is the encoding's name).
_WORD_UNKNOWN_ENCODING = "has a part in a text encoding Word never writes ({}); save it again from Word."


def _xml_decoder(
    name: str, head: bytes, unknown: str = _WORD_UNKNOWN_ENCODING
) -> codecs.IncrementalDecoder | None | bool:
    """How to read a zip part as XML from its first bytes: False if it is not XML (an image), None if it
    is UTF-8 XML, else a decoder for the encoding lxml would read it in (UTF-16, UTF-32, or what its
    declaration names: UTF-7, Latin-1...), so that the byte scans see what python-docx's parser sees."""
    for mark, encoding in _XML_BYTE_ORDERS:
        if head.startswith(mark):
            return codecs.getincrementaldecoder(encoding)()
    stripped = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if stripped and not stripped.startswith(b"<"):
        return False
    declared = _XML_ENCODING.match(stripped)
    if declared is None:
        return None
    encoding = declared.group(1).decode("ascii")
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise IngestError(name, unknown.format(encoding)) from None
    return None if info.name == "utf-8" else info.incrementaldecoder()


@dataclass(frozen=True)
class XmlRules:
    """What the byte scan of a zip's XML parts refuses, and how it words it: the declarations the format's
    writers never put in (an entity declaration is how an XML bomb expands), and the elements counted."""

    declarations: tuple[bytes, ...]
    elements: re.Pattern[bytes]
    counted: str  # "paragraphs, runs and table cells": what too many of is refused
    declared: str = "contains XML entity declarations, which Word never writes (an XML bomb?)."
    unknown_encoding: str = _WORD_UNKNOWN_ENCODING


_DOCX_RULES = XmlRules(_XML_DECLARATIONS, _DOCX_ELEMENT, "paragraphs, runs and table cells")


# The start tag of a part's body (an ODF office:body, an XHTML <body>), in any namespace prefix: what comes
# before it in a part (automatic styles, a <head>) is not text (`XmlTally.from_body`).
_BODY_TAG = re.compile(rb"<(?:[A-Za-z_][\w.\-]{0,40}:)?body[\s>/]")


@dataclass
class XmlTally:
    """What the byte scan counted in a zip's XML parts, part by part: every element, and those from the
    part's body tag on (0 where it has none): a reader caps the elements of the parts it walks as text
    apart from the rest (styles, navigation, images), so that a large styles part is not taken for text."""

    elements: dict[str, int]
    from_body: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.elements.values())


def _scan_docx_xml(
    name: str, archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], limits: LoadLimits,
    rules: XmlRules = _DOCX_RULES, cap: int | None = None,
) -> XmlTally:
    """Stream every XML part once: refuse entity declarations (XML bombs) and more than `cap` elements in
    all (`limits.max_elements` unless given), counted by `rules`.

    A part is XML by its content, not its name: the package's relationships can make any entry the main
    document (word/main.dat), and python-docx parses whatever they point at."""
    tally = XmlTally({}, {})
    markup = 0
    for info in infos:
        with archive.open(info) as part:
            head = part.read(_XML_HEAD)
            decoder = _xml_decoder(name, head, rules.unknown_encoding)
            if decoder is False:
                continue
            markup += info.file_size
            if markup > limits.max_expanded_bytes:
                log.warning("%s: more than %d bytes of XML unpacked", name, markup)
                raise _too_expanded(name, limits)
            scan_xml_stream(name, info.filename, part, head, decoder, limits, rules, tally, cap)
    return tally


def scan_xml_stream(
    name: str, part_name: str, part: Any, head: bytes, decoder: codecs.IncrementalDecoder | None,
    limits: LoadLimits, rules: XmlRules, tally: XmlTally, cap: int | None = None,
) -> None:
    """One XML part, from `head` (its first bytes, already read) to its end: declarations refused, its
    elements (and those from its body tag on) added to `tally`, the whole tally held to `cap`."""
    cap = limits.max_elements if cap is None else cap
    before = tally.total
    elements = 0
    body_at: int | None = None
    tail = b""
    pending = head
    while True:
        block = pending + part.read(_STREAM_BLOCK)
        pending = b""
        if not block:
            break
        if decoder is not None:
            block = decoder.decode(block).encode("utf-8", "replace")
        window = tail + block
        if any(marker in window for marker in rules.declarations):
            raise IngestError(name, rules.declared)
        if body_at is None and (body := _BODY_TAG.search(window)) is not None:
            body_at = elements + len(rules.elements.findall(window, len(tail), max(body.start(), len(tail))))
        elements += len(rules.elements.findall(window, len(tail)))
        if before + elements > cap:
            raise IngestError(name, f"has more than {limits.max_elements:,} {rules.counted}, over the limit.")
        tail = block[-16:]
    tally.elements[part_name] = elements
    tally.from_body[part_name] = 0 if body_at is None else elements - body_at


def _docx_heading_level(style_name: str) -> int | None:
    """Title is the outermost level 0; 'Heading N' is level N; anything else is body text."""
    if style_name == "Title":
        return 0
    match = re.fullmatch(r"Heading\s*(\d)", style_name)
    return int(match.group(1)) if match else None


def _read_docx(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """Paragraphs and tables in body order; Heading styles set the heading path."""
    return _docx_blocks(name, data, limits, depth=0)


MAX_EMBEDDED_DEPTH = 1  # Word documents embedded in one another (w:altChunk) read: 1, a document in the file
MAX_EMBEDDED_PARTS = 20  # embedded parts read from one document's body: each is a page parsed (one part named
# a thousand times would be parsed a thousand times), and a writer of them (html-docx-js) writes one


def _docx_blocks(name: str, data: bytes, limits: LoadLimits, *, depth: int) -> list[_Block]:
    """`_read_docx` of a Word file, or of one embedded `depth` deep in another's body: a Word document
    embedded deeper is left out, so a file of files inside each other cannot make the reading recurse."""
    _check_docx_zip(name, data, limits)
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = _open_docx(data)
        hidden_styles = _docx_hidden_styles(document)
        style_name = _docx_paragraph_style_names(document)
        blocks: list[_Block] = []
        path: list[tuple[int, str]] = []
        heading: tuple[str, ...] = ()
        # the embedded parts (w:altChunk) in table cells read into them first; they count with the body's
        placed, left_out, notices = _docx_cell_alt_chunks(name, document, limits, depth)
        blocks += [_Block("", notice=notice) for notice in notices]
        walked = 0  # the embedded parts met among the body's items
        for item in _docx_body_items(document, Paragraph, Table):
            if isinstance(item, Paragraph):
                level = _docx_heading_level(style_name(item._p.style))
                text = _docx_paragraph_text(item._p, hidden_styles)
                if level is not None and text.strip():
                    heading = _push_heading(path, level, _clean_heading(text))
                blocks.append(_Block(text, heading=heading))
            elif isinstance(item, Table):
                blocks.append(_Block(_docx_table_text(item, hidden_styles), heading=heading))
            else:  # a w:altChunk: a part Word reads into the body where it stands
                placed += 1
                walked += 1
                if placed > MAX_EMBEDDED_PARTS:
                    read: list[_Block] | str = f"a part past the first {MAX_EMBEDDED_PARTS}"
                else:
                    read = _docx_alt_chunk(name, document, item, limits, depth)
                if isinstance(read, list):
                    blocks += [replace(block, heading=heading + block.heading) for block in read]
                else:
                    left_out.append(read)
        blocks.extend(_Block(text) for text in _docx_notes(document, hidden_styles))
        unplaced = len(document.element.body.findall(f".//{_W}altChunk")) - walked  # in a text box, say
        left_out += ["a part where Word does not read one in"] * unplaced
        if left_out:
            blocks.append(_Block("", notice=_alt_chunks_left_out(left_out)))
    except IngestError:
        raise
    except Exception as exc:
        log.info("%s: python-docx failed: %r", name, exc)
        if "depth" in str(exc).lower():  # lxml's own nesting guard ("Excessive depth in document")
            raise IngestError(name, "is nested too deeply to read.") from None
        if "Resource limit exceeded" in str(exc):  # libxml2's 10 MB cap on one text node or attribute
            raise IngestError(
                name, "has a single piece of text over 10 MB (one run or value), longer than can be read."
            ) from None
        raise IngestError(name, "could not be read as a Word document (corrupt .docx?).") from None
    return blocks


_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
# What an embedded part (w:altChunk) is by its content type, or its name's extension where the package gives
# it none or only 'application/octet-stream' (html-docx-js writes an .mht part; others .htm, .rtf, .docx)
_ALT_CHUNK_TYPES = {
    "text/html": "html", "application/xhtml+xml": "html", "message/rfc822": "mht", "multipart/related": "mht",
    "application/x-mimearchive": "mht", "text/plain": "text", "application/rtf": "rtf", "text/rtf": "rtf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml": "docx",
}  # fmt: skip
_ALT_CHUNK_EXTENSIONS = {
    ".htm": "html", ".html": "html", ".xhtml": "html", ".mht": "mht", ".mhtml": "mht", ".txt": "text",
    ".rtf": "rtf", ".docx": "docx",
}  # fmt: skip
_ALT_CHUNK_KINDS = {"rtf": "an RTF part"}


def _alt_chunk_kind(part: Any) -> str:
    """What an embedded part holds ('html', 'mht', 'text', 'rtf', 'docx' or '' for anything else)."""
    content_type = str(part.content_type or "").split(";")[0].strip().lower()
    return _ALT_CHUNK_TYPES.get(content_type) or _ALT_CHUNK_EXTENSIONS.get(_extension(str(part.partname)), "")


def _docx_alt_chunk(name: str, document: Any, element: Any, limits: LoadLimits, depth: int) -> list[_Block] | str:
    """The blocks of the part a w:altChunk imports (an HTML page, a web archive's page, plain text, a Word
    document), read as that kind of file is; or, for a part that cannot be read here (RTF, a part the
    package lacks), what it is, for the notice that says it was left out."""
    rel = document.part.rels.get(element.get(f"{_R}id") or "")
    if rel is None or rel.is_external:
        return "a part the file names but does not hold"
    part = rel.target_part
    kind = _alt_chunk_kind(part)
    blob = part.blob or b""
    if kind == "html":
        text, _ = _decode_text(name, blob, _html_charset(blob))
        return _html_blocks(name, text, limits)
    if kind == "mht":
        return _web_archive_blocks(name, blob, limits)
    if kind == "text":
        return [_Block(_decode_text(name, blob)[0])]
    if kind == "docx" and depth < MAX_EMBEDDED_DEPTH:
        return _docx_blocks(name, blob, limits, depth=depth + 1)
    if kind == "docx":
        return "a Word document inside an embedded one"
    log.info("%s: an altChunk part %s of type %r left out", name, part.partname, part.content_type)
    return _ALT_CHUNK_KINDS.get(kind, f"a part of type {str(part.content_type or 'unknown')[:60]}")


_XML_UNFIT = re.compile("[\x00-\x08\x0e-\x1b\ufffe\uffff]")  # what XML 1.0 cannot hold (split() took the rest)


def _docx_cell_alt_chunks(name: str, document: Any, limits: LoadLimits, depth: int) -> tuple[int, list[str], list[str]]:
    """Each embedded part (w:altChunk) inside a table cell replaced by paragraphs of its text, so the cell
    reads it where Word shows it (a page imported into a cell, as report and mail-merge tools write one),
    a row under its header with it. Returns how many there were (they count against MAX_EMBEDDED_PARTS
    with the body's), what was left out (`_docx_alt_chunk`), and the parts' own notices."""
    from docx.oxml import OxmlElement

    chunks = [c for c in document.element.body.iter(f"{_W}altChunk") if next(c.iterancestors(f"{_W}tc"), None) is not None]
    left_out: list[str] = []
    notices: list[str] = []
    for placed, chunk in enumerate(chunks, 1):
        if placed > MAX_EMBEDDED_PARTS:
            read: list[_Block] | str = f"a part past the first {MAX_EMBEDDED_PARTS}"
        else:
            read = _docx_alt_chunk(name, document, chunk, limits, depth)
        if isinstance(read, str):
            left_out.append(read)
            read = []
        for block in read:
            notices += [block.notice] if block.notice else []
            if block.text.strip():
                paragraph, run, text = OxmlElement("w:p"), OxmlElement("w:r"), OxmlElement("w:t")
                text.text = _XML_UNFIT.sub("", " ".join(block.text.split()))  # lxml refuses control characters
                run.append(text)
                paragraph.append(run)
                chunk.addprevious(paragraph)
        chunk.getparent().remove(chunk)
    return len(chunks), left_out, notices


def _web_archive_blocks(name: str, data: bytes, limits: LoadLimits) -> list[_Block] | str:
    """The page a web archive (.mht: a MIME message of the page and its pictures) holds: its HTML part's
    visible text, else its plain text part's."""
    import email
    from email import policy

    message = email.message_from_bytes(data, policy=policy.default)
    parts = list(itertools.islice(message.walk(), 1000))
    for wanted in ("text/html", "text/plain"):
        part = next((p for p in parts if p.get_content_type() == wanted), None)
        if part is not None:
            text, _ = _part_text(name, part)
            return _html_blocks(name, text, limits) if wanted == "text/html" else [_Block(text)]
    return "a web archive with no page in it"


def _alt_chunks_left_out(what: list[str]) -> str:
    """The notice for embedded parts not read: how many, what they are, and how to bring them in."""
    kinds = _and_list(list(dict.fromkeys(what)))
    return (
        f"{counted(len(what), 'embedded part')} left out ({kinds}): Word reads such a part in when it opens the "
        "file, so open it in Word and save it again to make that text part of the document"
    )


# Word's main document part in a macro-enabled document (.docm), a template (.dotx) or a macro-enabled
# template (.dotm), often renamed .docx: the same XML as a .docx's, which python-docx refuses by its type.
# Its text is read like any other; its macros (vbaProject.bin) are never read, let alone run.
_WORD_MAIN_TYPES = (
    "application/vnd.ms-word.document.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
)


MAX_UNTYPED_PARTS = 8  # parts without a content type given one, each a pass over the package
_NO_CONTENT_TYPE = re.compile(r"no content type for partname '([^']{1,500})'")
_CONTENT_TYPES_END = re.compile(rb"</(?:[\w.-]+:)?Types\s*>")


def _typed_package(data: bytes, partname: str) -> bytes:
    """The package again with an untyped part typed as bytes ('application/octet-stream'), so the rest of
    it reads: writers of an embedded page (html-docx-js's kind) leave its part out of [Content_Types].xml,
    which Word passes over and python-docx refused as a corrupt file. What the part is, is then told by its
    name (`_alt_chunk_kind`)."""
    override = f'<Override PartName="{html.escape(partname)}" ContentType="application/octet-stream"/>'.encode()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == "[Content_Types].xml":
                ends = list(_CONTENT_TYPES_END.finditer(content))
                if not ends:
                    raise ValueError("no content types")
                content = content[: ends[-1].start()] + override + content[ends[-1].start() :]
            target.writestr(info.filename, content)
    return out.getvalue()


def _open_docx(data: bytes) -> Any:
    """A python-docx Document of a .docx, or of a .docm, .dotx or .dotm under a .docx name."""
    import docx
    from docx.opc.package import OpcPackage
    from docx.opc.part import PartFactory
    from docx.parts.document import DocumentPart

    for content_type in _WORD_MAIN_TYPES:
        PartFactory.part_type_for.setdefault(content_type, DocumentPart)
    for _ in range(MAX_UNTYPED_PARTS):
        try:
            package = OpcPackage.open(io.BytesIO(data))
            break
        except KeyError as error:
            untyped = _NO_CONTENT_TYPE.search(str(error))
            if untyped is None:
                raise
            data = _typed_package(data, untyped.group(1))
    else:
        raise ValueError("too many parts without a content type")
    part = package.main_document_part
    if not isinstance(part, DocumentPart):
        return docx.Document(io.BytesIO(data))  # raises, naming the content type it is
    return part.document


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_DOCX_NAMESPACES = {"w": _W[1:-1], "mc": "http://schemas.openxmlformats.org/markup-compatibility/2006"}
_OFF = {"0", "false", "off"}


_STYLE_CHAIN = 10  # basedOn links followed when asking whether a style hides its text


_DOCX_NOTES = ("/footnotes", "/endnotes")
_DOCX_NOTE_KINDS = frozenset({"normal"})  # not the separator lines Word keeps among the notes


def _docx_notes(document: object, hidden_styles: frozenset[str]) -> Iterator[str]:
    """The text of each footnote, then each endnote, as Word prints them (one per note, hidden runs left
    out). python-docx reads neither: their parts are raw bytes to it, parsed here with its own parser
    (no entities, no network); the zip scan has already capped their size and elements."""
    from docx.oxml.parser import parse_xml

    parts = [rel.target_part for rel in document.part.rels.values()  # type: ignore[attr-defined]
             if not rel.is_external and rel.reltype.endswith(_DOCX_NOTES)]
    for part in sorted(parts, key=lambda part: str(part.partname).endswith("endnotes.xml")):
        for note in parse_xml(part.blob):
            if note.get(f"{_W}type", "normal") not in _DOCX_NOTE_KINDS:
                continue
            text = " ".join(_docx_paragraph_text(p, hidden_styles) for p in _docx_all_paragraphs()(note))
            if text.strip():
                yield " ".join(text.split())


def _docx_vanish(properties: object | None) -> bool | None:
    """What run properties (w:rPr) say about hidden text: True, False (explicitly shown) or None."""
    if properties is None:
        return None
    for tag in ("vanish", "specVanish"):
        mark = properties.find(f"{_W}{tag}")  # type: ignore[attr-defined]
        if mark is not None:
            return mark.get(f"{_W}val", "true").lower() not in _OFF
    return None


def _docx_hidden_styles(document: object) -> frozenset[str]:
    """Ids of the styles whose run properties hide text, directly or through the styles they are based on."""
    try:
        root = document.styles.element  # type: ignore[attr-defined]
    except Exception:  # a broken styles part: python-docx reads the body without it
        return frozenset()
    styles = {style.get(f"{_W}styleId"): style for style in root.iterfind(f"{_W}style")}
    hidden = set()
    for style_id, style in styles.items():
        for _ in range(_STYLE_CHAIN):
            verdict = _docx_vanish(style.find(f"{_W}rPr"))
            based = style.find(f"{_W}basedOn")
            if verdict is not None or based is None or based.get(f"{_W}val") not in styles:
                break
            style = styles[based.get(f"{_W}val")]
        if verdict:
            hidden.add(style_id)
    return frozenset(hidden)


def _docx_paragraph_style_names(document: object) -> Callable[[str | None], str]:
    """A paragraph style's name by its id (a paragraph without one, or with an unknown one, has the default
    paragraph style), from a table read once: python-docx's `Paragraph.style` searches every style for the
    default on each call, 95% of reading a long document (8,000 paragraphs: 11 s)."""
    from docx.enum.style import WD_STYLE_TYPE

    try:
        styles = document.styles  # type: ignore[attr-defined]
        names = {s.style_id: s.name or "" for s in styles if s.type == WD_STYLE_TYPE.PARAGRAPH}
        default = styles.default(WD_STYLE_TYPE.PARAGRAPH)
    except Exception:  # a broken styles part: the body is read without headings
        log.info("the styles of a .docx could not be read", exc_info=True)
        names, default = {}, None
    default_name = (default.name or "") if default is not None else ""
    return lambda style_id: names.get(style_id, default_name) if style_id else default_name


def _docx_body_items(document: object, paragraph: type, table: type) -> Iterator[object]:
    """The body's paragraphs and tables in order, those inside content controls (w:sdt, as templates and
    cover pages wrap them) too, and after a paragraph those of the text boxes anchored in it; python-docx's
    own walk yields only the body's direct children."""
    body = document.element.body  # type: ignore[attr-defined]
    parent = document._body  # type: ignore[attr-defined]
    pending = list(reversed(body))  # a stack: nesting depth costs no recursion
    while pending:
        element = pending.pop()
        if element.tag == f"{_W}p":
            yield paragraph(element, parent)
            for box in reversed(_docx_text_boxes()(element)):
                if next(box.iterancestors(f"{_W}p")) is element:  # a box in a box: read with its own paragraph
                    pending.extend(reversed(box))
        elif element.tag == f"{_W}tbl":
            yield table(element, parent)
        elif element.tag == f"{_W}sdt":
            content = element.find(f"{_W}sdtContent")
            pending.extend(reversed(content) if content is not None else ())
        elif element.tag == f"{_W}altChunk":  # an embedded part Word imports here (`_docx_alt_chunk`)
            yield element


# The runs Word shows in a paragraph, wherever they sit in it (tracked insertions, links, smart tags,
# content controls, fields), not those it shows as deleted or moved away, nor the runs of a text box's own
# paragraphs or of the fallback copy of a drawing.
@functools.cache
def _docx_runs() -> Callable[[object], list[Any]]:
    """The compiled path (lxml imported when a .docx is first read, not with this module)."""
    from lxml import etree

    return etree.XPath(
        ".//w:r[not(ancestor::w:del or ancestor::w:moveFrom or ancestor::mc:Fallback)]", namespaces=_DOCX_NAMESPACES
    )


@functools.cache
def _docx_text_boxes() -> Callable[[object], list[Any]]:
    """The text boxes in a paragraph, each once: Word keeps a copy of each for old readers (mc:Fallback)."""
    from lxml import etree

    return etree.XPath(".//w:txbxContent[not(ancestor::mc:Fallback)]", namespaces=_DOCX_NAMESPACES)


@functools.cache
def _docx_all_paragraphs() -> Callable[[object], list[Any]]:
    """Every paragraph in an element, in text boxes and tables too, each once."""
    from lxml import etree

    return etree.XPath(".//w:p[not(ancestor::mc:Fallback)]", namespaces=_DOCX_NAMESPACES)


@functools.cache
def _docx_box_paragraphs() -> Callable[[object], list[Any]]:
    """The paragraphs of the text boxes in a paragraph (boxes in boxes too), each once."""
    from lxml import etree

    return etree.XPath(
        ".//w:txbxContent[not(ancestor::mc:Fallback)]//w:p[not(ancestor::mc:Fallback)]", namespaces=_DOCX_NAMESPACES
    )


def _docx_paragraph_text(p: object, hidden_styles: frozenset[str] = frozenset()) -> str:
    """A paragraph's text as Word shows it, less runs formatted as hidden text (w:vanish on the run, or a
    run or paragraph style that sets it), runs of 1 pt or less, and white runs on a white ground, which
    could carry instructions to an LLM that no reader of the document sees."""
    paragraph_style = p.find(f"{_W}pPr/{_W}pStyle")  # type: ignore[attr-defined]
    paragraph_hidden = paragraph_style is not None and paragraph_style.get(f"{_W}val") in hidden_styles
    parts = []
    shaded: bool | None = None  # whether the paragraph stands on a coloured ground: judged once, if asked
    for run in _docx_runs()(p):
        if next(run.iterancestors(f"{_W}p")) is not p:  # a text box's paragraph inside this one
            continue
        properties = run.find(f"{_W}rPr")
        verdict = _docx_vanish(properties)
        if verdict is None:
            run_style = properties.find(f"{_W}rStyle") if properties is not None else None
            verdict = (run_style is not None and run_style.get(f"{_W}val") in hidden_styles) or paragraph_hidden
        if not verdict and properties is not None and _docx_tiny(properties):
            verdict = True
        elif not verdict and properties is not None and _docx_white_run(properties):
            shaded = _docx_shaded(p) if shaded is None else shaded
            verdict = not shaded
        if not verdict:
            parts.append(run.text)
    return "".join(parts)


DOCX_TINY_HALF_POINTS = 2  # a run set this small or smaller (1 pt, Word's least) shows as a hairline, no words
_DOCX_PLAIN_GROUNDS = frozenset({"", "auto", "ffffff", "white", "none", "clear"})


def _docx_tiny(properties: Any) -> bool:
    """Whether a run's font is 1 pt or less (`w:sz` counts half points): a line no reader can read."""
    size = properties.find(f"{_W}sz")
    try:
        return size is not None and float(size.get(f"{_W}val", "")) <= DOCX_TINY_HALF_POINTS
    except ValueError:
        return False


def _docx_white_run(properties: Any) -> bool:
    """Whether a run is white (or the theme's background colour) with no highlight or shading of its
    own: on a white page it shows nothing (`_docx_shaded` is then asked about the ground under it)."""
    colour = properties.find(f"{_W}color")
    if colour is None:
        return False
    value, theme = (str(colour.get(f"{_W}{key}") or "").lower() for key in ("val", "themeColor"))
    if value not in ("ffffff", "white") and theme != "background1":
        return False
    highlight = properties.find(f"{_W}highlight")
    if highlight is not None and str(highlight.get(f"{_W}val") or "").lower() not in _DOCX_PLAIN_GROUNDS:
        return False
    return not _docx_coloured(properties.find(f"{_W}shd"))


def _docx_coloured(shading: Any) -> bool:
    """Whether a w:shd paints a ground that is not white (its fill, or a pattern in its colour)."""
    if shading is None:
        return False
    fill = str(shading.get(f"{_W}fill") or "").lower()
    pattern = str(shading.get(f"{_W}val") or "").lower()
    themed = shading.get(f"{_W}themeFill") is not None
    return themed or fill not in _DOCX_PLAIN_GROUNDS or pattern not in _DOCX_PLAIN_GROUNDS


def _docx_shaded(p: Any) -> bool:
    """Whether a paragraph stands on a coloured ground: its own shading, a table cell's around it, or
    the page's background colour (`w:background`), on which white text shows."""
    if _docx_coloured(p.find(f"{_W}pPr/{_W}shd")):
        return True
    if any(_docx_coloured(cell.find(f"{_W}tcPr/{_W}shd")) for cell in p.iterancestors(f"{_W}tc")):
        return True
    background = p.getroottree().getroot().find(f"{_W}background")
    return background is not None and str(background.get(f"{_W}color") or "").lower() not in _DOCX_PLAIN_GROUNDS


def _docx_cell_paragraph_text(p: object, hidden_styles: frozenset[str]) -> str:
    """A paragraph in a table cell and, after it, the paragraphs of the text boxes anchored in it: a
    cell is read as one piece of a line."""
    inner = _docx_box_paragraphs()(p)
    return " ".join(_docx_paragraph_text(paragraph, hidden_styles) for paragraph in [p, *inner])


def _docx_table_text(table: object, hidden_styles: frozenset[str] = frozenset()) -> str:
    """A table as one line per row, cells separated by ' | ' (merged cells repeated once); under a header
    row (`_docx_header_row`), a list item naming each cell by its column, as Markdown's and HTML's rows
    are read (`_labelled_row`), so a row reads alone in whichever chunk it lands. A table in a cell is
    part of that cell's text, its rows one after another (as HTML's are read). Nesting is bounded by
    lxml's depth limit, well inside Python's recursion limit."""
    rows = [_docx_row_cells(row, hidden_styles) for row in table.rows]  # type: ignore[attr-defined]
    if _docx_header_row(table, rows):
        header = [text for _, text in rows[0]]
        labelled = [_labelled_row(header, _docx_own_cells(row)) for row in rows[1:]]
        return "\n".join(line for line in labelled if line)
    lines = []
    for row in rows:
        cells: list[str] = []
        for _, text in row:
            if text and (not cells or cells[-1] != text):
                cells.append(text)
        if cells:
            lines.append(" | ".join(cells))
    return "\n".join(lines)


def _docx_row_cells(row: object, hidden_styles: frozenset[str]) -> list[tuple[object, str]]:
    """A table row's cells, one per grid column (python-docx repeats a merged cell in each column it
    spans): the cell's XML element and its text."""
    found = []
    for cell in row.cells:  # type: ignore[attr-defined]
        parts = (
            _docx_cell_paragraph_text(item._p, hidden_styles) if hasattr(item, "_p")
            else _docx_table_text(item, hidden_styles).replace("\n", " ")
            for item in cell.iter_inner_content()
        )
        found.append((cell._tc, " ".join(" ".join(parts).split())))
    return found


def _docx_own_cells(row: list[tuple[object, str]]) -> list[str]:
    """A row's texts by grid column, a merged cell's text in its first column only."""
    return [text if i == 0 or row[i - 1][0] is not cell else "" for i, (cell, text) in enumerate(row)]


MAX_HEADER_CELL_CHARS = MAX_LABEL_CHARS  # a column's name, not a cell of prose: what a row's label may be


def _docx_header_row(table: object, rows: list[list[tuple[object, str]]]) -> bool:
    """Whether a table's first row names its columns, by what a reader of the document sees: a row Word
    repeats as the header on each page (`w:tblHeader`), a row set in bold, or a table style that formats
    its first row, switched on for the table (`w:tblLook firstRow`). And it must read as names: at least
    two rows, every cell of the first filled and short, at least two different ones. A table without one
    (a key-value table, 'Born | 1850') keeps its ' | ' lines."""
    if len(rows) < 2 or not rows[0]:
        return False
    names = [text for _, text in rows[0]]
    if not all(names) or len(set(names)) < 2 or any(len(text) > MAX_HEADER_CELL_CHARS for text in names):
        return False
    tbl = table._tbl  # type: ignore[attr-defined]
    first = tbl.find(f"{_W}tr")
    if first is None:
        return False
    repeated = first.find(f"{_W}trPr/{_W}tblHeader")
    if repeated is not None and repeated.get(f"{_W}val", "1") not in _OFF:
        return True
    runs = [run for run in first.iter(f"{_W}r") if (run.findtext(f"{_W}t") or "").strip()]
    if runs and all(_docx_bold(run.find(f"{_W}rPr")) for run in runs):
        return True
    return _docx_styled_first_row(table)


def _docx_bold(properties: object | None) -> bool:
    """Whether run properties set bold (`<w:b/>`, not `<w:b w:val="0"/>`)."""
    bold = properties.find(f"{_W}b") if properties is not None else None  # type: ignore[attr-defined]
    return bold is not None and bold.get(f"{_W}val", "1") not in _OFF


def _docx_styled_first_row(table: object) -> bool:
    """Whether the table's style (or one it is based on) formats the first row, and the table turns that on."""
    look = table._tbl.find(f"{_W}tblPr/{_W}tblLook")  # type: ignore[attr-defined]
    if look is None:
        return False
    flag = look.get(f"{_W}firstRow")
    on = flag not in _OFF if flag is not None else bool(int(look.get(f"{_W}val", "0") or "0", 16) & 0x0020)
    style = getattr(table, "style", None) if on else None
    for _ in range(_STYLE_CHAIN):
        if style is None:
            return False
        if any(part.get(f"{_W}type") == "firstRow" for part in style.element.iter(f"{_W}tblStylePr")):
            return True
        style = style.base_style
    return False


# ----------------------------------------------------------------------------------------------- html

# MathML's `annotation`s are other notations of the formula shown (TeX, content MathML): not shown themselves.
_HTML_DROP = {"script", "style", "noscript", "template", "head", "svg", "iframe", "object", "annotation", "annotation-xml"}
# MathML's token elements: each a symbol, number or word of a formula, set apart so they do not run together.
_MATH_TOKENS = {"mi", "mn", "mo", "ms", "mtext"}
_HTML_BLOCKS = {
    "address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li", "main", "nav", "ol", "p",
    "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
    # form controls: each a box of its own on the page, so their words never run together
    "button", "dialog", "label", "legend", "option", "select", "textarea",
}  # fmt: skip
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_CELLS = {"td", "th"}


_HIDDEN_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)|color\s*:\s*transparent\s*(?:;|!|$)|(?:font-size|opacity)\s*:\s*(?:0+(?:\.0*)?|\.0+)\s*(?:px|pt|em|rem|%)?\s*(?:;|!|$)",
    re.IGNORECASE,
)


def _html_hidden(tag: object) -> bool:
    """An element a browser does not show (or hides from screen readers): its text could carry
    instructions to an LLM that no reader of the page ever sees."""
    attrs = tag.attrs  # type: ignore[attr-defined]
    if "hidden" in attrs or str(attrs.get("aria-hidden", "")).strip().lower() == "true":
        return True
    if tag.name == "dialog" and "open" not in attrs:  # type: ignore[attr-defined]  # a closed dialog is not shown
        return True
    style = attrs.get("style")
    return bool(style) and _HIDDEN_STYLE.search(str(style)) is not None


class _HtmlWalker:
    """Non-recursive walk over a BeautifulSoup tree, so deeply nested markup cannot hit the recursion limit."""

    def __init__(self, *, alts: bool = False) -> None:
        self.read_alts = alts  # a block of pictures alone reads as their alt text (web pages, not e-books' pages)
        self.blocks: list[_Block] = []
        self.buffer: list[str] = []
        self.path: list[tuple[int, str]] = []
        self.heading: tuple[str, ...] = ()
        self.heading_depth = 0
        self.rows: list[list[str]] = []  # the cells of the table rows being read (a stack: tables nest)
        self.headed: list[bool] = []  # for each of those rows: whether its cells so far are all <th>
        self.outside: list[list[str]] = []  # the text read before each of those rows began
        self.header: list[str] | None = None  # the column names of the outermost table being read
        self.header_block: _Block | None = None  # that header row as read, until a row it names follows
        self.pre = 0  # depth of the <pre> elements being read: their white space is kept
        self.pre_code = False  # the <pre> being read holds a <code> element
        self.alts: list[str] = []  # the alt texts of the pictures in the block being read
        # for each table being read (they nest): column -> the text of a cell spanning rows down into it,
        # and how many rows more it spans, so a row under a merged cell reads it in its column
        self.spanned: list[dict[int, tuple[str, int]]] = []
        self.term = ""  # a definition list's term (<dt>) waiting for its definition (<dd>)

    def flush(self) -> None:
        text = "".join(self.buffer)
        self.buffer = []
        alts, self.alts = self.alts, []
        if text.strip() and self.term:  # a definition reads with its term: "Lucerne: the frame that ..."
            text, self.term = f"{self.term}{'' if self.term[-1] in ':.?!' else ':'} {text.strip()}", ""
        if text.strip():
            self.blocks.append(_Block(text, heading=self.heading))
        elif alts:  # a block of pictures alone reads as what they show, as Markdown's line of images does
            self.blocks.append(_Block(" ".join(alts), heading=self.heading))

    def close_heading(self, level: int) -> None:
        self.heading_depth -= 1
        title = " ".join("".join(self.buffer).split())
        self.buffer = []
        if title:
            self.heading = _push_heading(self.path, level, _clean_heading(title))
            self.blocks.append(_Block(title, heading=self.heading))

    def walk(self, root: object) -> list[_Block]:
        from bs4 import NavigableString, Tag
        from bs4.element import TemplateString

        stack: list[object] = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, tuple):  # ("end", tag name[, a cell's spans]): leaving a block, heading or cell
                self.end_tag(node[1], *node[2:])
            elif type(node) is NavigableString or type(node) is TemplateString:  # the latter: a shadow root's
                self.buffer.append(str(node))
            elif isinstance(node, Tag) and node.name not in _HTML_DROP and not _html_hidden(node):
                self.start_tag(node.name)
                if self.read_alts and node.name in ("img", "area") and not self.rows and not self.pre:
                    self.alt(node)
                stack.append(("end", node.name, _cell_spans(node)) if node.name in _HTML_CELLS else ("end", node.name))
                shadow = _shadow_children(node)
                stack.extend(reversed(node.contents if shadow is None else shadow))
        self.flush()
        return self.blocks

    def alt(self, image: object) -> None:
        """A picture's alt text (its title when it has none), kept for a block that has no text but
        pictures: a page of captioned photos, a scanned notice with its words in the alt text."""
        attrs = image.attrs  # type: ignore[attr-defined]
        said = " ".join(str(attrs.get("alt") or attrs.get("title") or "").split())
        if said:
            self.alts.append(said if said[-1] in ".!?…" else f"{said}.")

    def start_tag(self, tag: str) -> None:
        if self.pre or (tag == "pre" and not self.rows and self.heading_depth == 0):
            self.start_pre(tag)
            return
        if tag == "table" and not self.rows:
            self.header = self.header_block = None
        if tag == "table":
            self.spanned.append({})
        if tag == "tr":
            if not self.rows:
                self.flush()
            self.rows.append([])
            self.headed.append(True)
            self.outside.append(self.buffer)  # the text of the cell a nested table sits in
            self.buffer = []
        elif tag in _HTML_CELLS and self.rows:
            self.buffer = []  # only white space stands between cells
        elif self.rows and (tag in _HTML_BLOCKS or tag in _HTML_HEADINGS):
            self.buffer.append(" ")  # a paragraph or heading inside a cell stays in the cell
        elif tag in _HTML_HEADINGS and self.heading_depth == 0:
            self.flush()
            self.heading_depth += 1
        elif tag in _HTML_HEADINGS:
            self.heading_depth += 1
        elif tag in _HTML_BLOCKS and self.heading_depth == 0:
            self.flush()

    def end_tag(self, tag: str, spans: tuple[int, int] = (1, 1)) -> None:
        if self.pre:
            self.end_pre(tag)
            return
        if tag == "table" and self.spanned:
            self.spanned.pop()
        if tag in _MATH_TOKENS:
            self.buffer.append(" ")
        if tag == "dt" and not self.rows and self.heading_depth == 0:
            self.end_term()
            return
        if tag == "dl" or (tag in _HTML_HEADINGS and self.heading_depth == 1):
            self.drop_term()
        if tag == "tr" and self.rows:
            self.fill_spanned()
            self.end_row()
        elif tag in _HTML_CELLS and self.rows:
            self.fill_spanned()
            text = " ".join("".join(self.buffer).split()).rstrip(";").replace("|", "/")
            columns, rows = spans
            if rows > 1 and self.spanned:  # a merged cell reads in each row it spans, in its column
                self.spanned[-1][len(self.rows[-1])] = (text, rows - 1)
            self.rows[-1].extend([text] + [""] * (columns - 1))  # a cell spanning columns fills them, once
            self.headed[-1] = self.headed[-1] and tag == "th"
            self.buffer = []
        elif self.rows and (tag in _HTML_BLOCKS or tag in _HTML_HEADINGS):
            self.buffer.append(" ")
        elif tag in _HTML_HEADINGS:
            if self.heading_depth == 1:
                self.close_heading(_HTML_HEADINGS[tag])
            else:
                self.heading_depth -= 1
        elif tag in _HTML_BLOCKS and self.heading_depth == 0:
            self.flush()
        elif tag in _HTML_BLOCKS:
            self.buffer.append(" ")

    def fill_spanned(self) -> None:
        """Put into the row being read the cells merged down into it from rows above (`rowspan`), at the
        columns it has reached: a table of offices lists each person's office, not the next column's
        value under 'Office'."""
        if not self.spanned or not self.spanned[-1]:
            return
        carried, row = self.spanned[-1], self.rows[-1]
        while len(row) in carried:
            text, more = carried.pop(len(row))
            if more > 1:
                carried[len(row)] = (text, more - 1)
            row.append(text)

    def end_term(self) -> None:
        """A definition list's term kept for the definition that follows (a glossary's "Colza" and "an oil
        pressed from rapeseed" are one line to search), several terms of one definition joined."""
        term = " ".join("".join(self.buffer).split())
        self.buffer = []
        if term:
            self.term = f"{self.term} / {term}" if self.term else term

    def drop_term(self) -> None:
        """A term no definition followed (the list or the section ended): read as a line of its own."""
        if self.term:
            self.blocks.append(_Block(self.term, heading=self.heading))
            self.term = ""

    def start_pre(self, tag: str) -> None:
        """Inside <pre> the text is read as a browser shows it, its line breaks and indentation kept."""
        if tag == "pre":
            if not self.pre:
                self.flush()
                self.pre_code = False
            self.pre += 1
        elif tag == "code":
            self.pre_code = True
        elif tag == "br":
            self.buffer.append("\n")

    def end_pre(self, tag: str) -> None:
        """The end of the outermost <pre>: code (`_pre_is_code`) becomes a block of code lines, kept as typed
        and indented four columns, as Markdown's indented code is, so `chunk.code_lines` reads each line
        as code; preformatted prose (a poem, an address) is read as any other block."""
        if tag != "pre":
            return
        self.pre -= 1
        if self.pre:
            return
        text = "".join(self.buffer).strip("\n")
        self.buffer = []
        if not _pre_is_code(text, self.pre_code):
            self.buffer = [text]
            self.flush()
            return
        code = "\n".join(f"    {line}" if line.strip() else "" for line in text.split("\n"))
        self.blocks.append(_Block(f"{_CODE_MARK}\n{code}\n{_CODE_MARK}", heading=self.heading, marked_code=True))

    def end_row(self) -> None:
        """A table row becomes one line, its cells separated by ' | ', as Word tables are read; under a
        header row of <th> cells, a list item naming each cell by its column, as Markdown's rows are read
        (`_labelled_row`), so a row reads alone in whichever chunk it lands."""
        cells = self.rows.pop()
        headed = self.headed.pop()
        self.buffer = self.outside.pop()
        if not any(cells):
            return
        line = " | ".join(cells)
        if self.rows:  # a table inside a cell: its rows are that cell's text, each ended as a clause
            inner = ", ".join(cell for cell in cells if cell)
            self.buffer.append(f" {inner}{'' if inner[-1] in '.!?;:' else ';'} ")
        elif self.header is None and headed and len(cells) > 1:
            self.header = cells
            self.header_block = _Block(line, heading=self.heading)
            self.blocks.append(self.header_block)
        elif self.header is not None and not headed:
            if self.header_block is not None:  # its names are in every row now
                self.header_block.text = ""
                self.header_block = None
            self.blocks.append(_Block(_labelled_row(self.header, cells), heading=self.heading))
        else:
            self.blocks.append(_Block(line, heading=self.heading))


MAX_CELL_SPAN = 100  # columns or rows one merged cell is read across, at most (HTML allows 1,000 and 65,534)


def _cell_spans(cell: object) -> tuple[int, int]:
    """A table cell's colspan and rowspan as a browser reads them: whole numbers of at least 1 (a missing,
    zero or unreadable one is 1), at most MAX_CELL_SPAN."""
    attrs = cell.attrs  # type: ignore[attr-defined]

    def span(name: str) -> int:
        match = re.match(r"\s*(\d{1,6})", str(attrs.get(name) or ""))
        return min(max(int(match.group(1)), 1), MAX_CELL_SPAN) if match else 1

    return span("colspan"), span("rowspan")


_SHADOW_ROOT_ATTRS = ("shadowrootmode", "shadowroot")  # a declarative shadow root's template (the older name too)


def _shadow_children(host: object) -> list[object] | None:
    """What a browser shows inside an element with a declarative shadow root (`<template
    shadowrootmode="open">` as its child, web components rendered on the server): the template's content,
    each `<slot>` in it filled with the element's own children assigned to it (by `slot="name"`, the rest
    to the unnamed slot; the slot's fallback content when none is). Children no slot takes are not shown.
    None for an element without one: its children as they are. Other templates stay inert (`_HTML_DROP`)."""
    from bs4 import Tag

    contents = list(host.contents)  # type: ignore[attr-defined]
    shadow = next((c for c in contents if isinstance(c, Tag) and c.name == "template"
                   and any(a in c.attrs for a in _SHADOW_ROOT_ATTRS)), None)
    if shadow is None:
        return None
    light = [c for c in contents if c is not shadow]
    for slot in list(shadow.find_all("slot")):
        name = slot.get("name") or None
        assigned = [c for c in light if (c.get("slot") or None if isinstance(c, Tag) else None) == name]
        if assigned:
            slot.clear()
            for child in assigned:
                light.remove(child)
                slot.append(child.extract())
    return list(shadow.contents)


def _pre_is_code(text: str, holds_code: bool) -> bool:
    """Whether a <pre> element's text is code: it holds a <code> element (as Markdown renderers and most
    sites write code), or a line of it is indented (a poem or an address in <pre> rarely is)."""
    return bool(text.strip()) and (holds_code or any(line[:1] in (" ", "\t") and line.strip() for line in text.split("\n")))


def _read_html(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """Visible text of an HTML page; h1-h6 set the heading path; scripts, styles and templates dropped.
    A page that is not UTF-8 is read in the encoding its <meta> declares."""
    text, notice = _decode_text(name, data, _html_charset(data))
    return [*_html_blocks(name, text, limits), _Block("", notice=notice)]


def _html_blocks(name: str, text: str, limits: LoadLimits) -> list[_Block]:
    """The visible text of an HTML page's text, in blocks (`_read_html`)."""
    soup = _html_soup(name, text, limits)
    hide_styled(soup, name=name)
    sheets = linked_sheets(soup)
    _embed_srcdoc_pages(name, soup, limits, _tag_count(text))
    _svg_labels(soup)
    furniture = _without_page_furniture(soup)
    try:
        blocks = _HtmlWalker(alts=True).walk(soup)
    except RecursionError:
        raise IngestError(name, "is nested too deeply to read.") from None
    if furniture:
        blocks.append(_Block("", notice=f"the page's {_and_list(furniture)} left out"))
    if sheets:
        blocks.append(_Block("", notice=_unread_sheets_notice(sheets)))
    return blocks


def _unread_sheets_notice(sheets: list[str]) -> str:
    """What to say of style sheets a page links that were not uploaded with it: its text is read as
    written, so what they hide is read and what they add is not."""
    shown = [f"'{sheet[:60]}'" for sheet in sheets[:3]] + ([f"{len(sheets) - 3} more"] if len(sheets) > 3 else [])
    one = len(sheets) == 1
    return (f"its style sheet{'' if one else 's'} {_and_list(shown)} {'was' if one else 'were'} not uploaded "
            "with it, so its styles were not available and its text was read as written")


def _text_outside(soup: Any, ids: set[int]) -> bool:
    """Whether `soup` shows text outside the elements of `ids` (by identity: bs4 compares tags by markup)."""
    for string in soup.find_all(string=True):
        if string.strip() and string.parent.name not in _HTML_DROP and not any(id(p) in ids for p in string.parents):
            return True
    return False


# A cookie or consent banner's id, class or label, as sites and consent tools write them (cookie-banner,
# cookieConsent, CybotCookiebotDialog, onetrust-consent-sdk, cc-window, gdpr-notice).
_CONSENT_NAME = re.compile(
    r"cookie[-_ ]?(?:banner|notice|consent|bar|popup|dialog|law|policy|message|box|settings|preferences|wall)"
    r"|cookiebot|onetrust|consent|gdpr|\bcc-(?:window|banner)\b",
    re.IGNORECASE,
)
CONSENT_MAX_CHARS = 2_000  # a banner is a few sentences; an element named so that holds more is content
_CHROME = ("header", "footer", "aside")  # outside <main>: the site's, repeated on every page


def _without_page_furniture(soup: Any) -> list[str]:
    """Remove what a site puts around every page rather than this page's content, and say what went:
    cookie and consent banners; navigation (`<nav>`, `role="navigation"`: menus of links, which on a
    page that is mostly menus buried its one article among 120 'Section 12 of the site' lines); and,
    where the page marks its main content (`<main>` or `role="main"`), the header, footer and asides
    outside it. Nothing is removed from a page whose only text it is."""
    names = ("banner", "navigation", "furniture")
    found: dict[str, list[Any]] = {key: [] for key in names}
    mains: list[Any] = []
    chrome: list[Any] = []
    for tag in soup.find_all(True):
        attrs = tag.attrs
        role = str(attrs.get("role") or "").lower() if attrs else ""
        if tag.name == "main" or role == "main":
            mains.append(tag)
        elif tag.name in _CHROME:
            chrome.append(tag)
        if attrs and ("id" in attrs or "class" in attrs or "aria-label" in attrs):
            label = f"{attrs.get('id') or ''} {' '.join(attrs.get('class') or [])} {attrs.get('aria-label') or ''}"
            if _CONSENT_NAME.search(label) and len(tag.get_text(" ", strip=True)) <= CONSENT_MAX_CHARS:
                found["banner"].append(tag)
                continue
        if tag.name == "nav" or role == "navigation":
            found["navigation"].append(tag)
    if len(mains) == 1:
        around = {id(parent) for parent in mains[0].parents}  # a <header> holding <main> is no furniture
        found["furniture"] = [tag for tag in chrome
                              if id(tag) not in around and all(parent is not mains[0] for parent in tag.parents)]
    removed = [tag for key in names for tag in found[key]]
    if not removed or not _text_outside(soup, {id(tag) for tag in removed}):
        return []  # nothing but furniture: read it all rather than nothing
    for tag in removed:
        if not tag.decomposed:
            tag.decompose()
    words = {"banner": "cookie notices", "navigation": "menus", "furniture": "the header, footer and side panels outside its main content"}
    return [words[key] for key in names if found[key]]


SRCDOC_DEPTH = 3  # pages inside pages (`<iframe srcdoc>` in a srcdoc) read; deeper ones are dropped
_SHOWN_ATTRS = ("hidden", "aria-hidden", "style")  # what `_html_hidden` reads: a hidden frame hides its page


def _tag_count(text: str) -> int:
    return sum(1 for _ in _HTML_TAG.finditer(text))


def _embed_srcdoc_pages(name: str, soup: Any, limits: LoadLimits, tags: int) -> None:
    """Each `<iframe srcdoc="...">` of `soup` replaced by the page it holds, parsed: a browser shows that
    page in the frame (a blog's embedded post, a mail archive's message), so its text is the page's. Its
    tags count with the page's (`tags` so far) against `limits.max_elements`; frames nested deeper than
    SRCDOC_DEPTH stay dropped with the other iframes (`_HTML_DROP`)."""
    for _ in range(SRCDOC_DEPTH):
        frames = [frame for frame in soup.find_all("iframe") if str(frame.get("srcdoc") or "").strip()]
        if not frames:
            return
        for frame in frames:
            page = str(frame["srcdoc"])
            tags += _tag_count(page)
            if tags > limits.max_elements:
                raise IngestError(name, f"has more than {limits.max_elements:,} HTML tags, over the limit.")
            box = soup.new_tag("div", attrs={key: frame[key] for key in _SHOWN_ATTRS if key in frame.attrs})
            inner = _html_soup(name, page, limits)
            hide_styled(inner, name=name)  # the framed page's own style sheets, not the page around it
            box.extend(list(inner.contents))
            frame.replace_with(box)


# SVG elements whose <text> is never drawn where it stands: definitions, symbols used elsewhere, masks.
_SVG_UNDRAWN = {"defs", "symbol", "clippath", "mask", "pattern", "marker", "lineargradient", "radialgradient"}


def _svg_labels(soup: Any) -> None:
    """Each inline `<svg>` of `soup` replaced by its drawn `<text>` labels, one paragraph each, in the
    order the file writes them: a diagram's labels (a floor plan, a chart's axis names) are words the
    page shows. Text inside definitions (`_SVG_UNDRAWN`), or hidden by its attributes or style, stays out;
    the rest of the picture (paths, titles, scripts) is no text. A hidden picture hides its labels."""
    for svg in soup.find_all("svg"):
        if svg.find_parent("svg") is not None:
            continue  # an inner <svg>: its labels are its outer picture's
        box = soup.new_tag("div", attrs={key: svg[key] for key in _SHOWN_ATTRS if key in svg.attrs})
        judged: dict[int, bool] = {}  # element id -> hidden, so each element around the labels is judged once
        for label in svg.find_all("text"):
            if _svg_hidden(label, svg, judged):
                continue
            words = " ".join(label.get_text(" ").split())
            if words:
                paragraph = soup.new_tag("p")
                paragraph.string = words
                box.append(paragraph)
        svg.replace_with(box)


def _svg_hidden(label: Any, svg: Any, judged: dict[int, bool]) -> bool:
    """Whether an SVG `<text>` is not drawn: inside a definition, or hidden by it or an element around it
    (`_svg_hides`). `judged` keeps each element's answer: walked afresh from every label, 4,000 labels in
    4,000 nested groups took 10.5 s of CPU (quadratic; 8,000 take 0.5 s now)."""
    chain = []
    element = label
    while element is not None and element is not svg and id(element) not in judged:
        chain.append(element)
        element = element.parent
    hidden = judged.get(id(element), False) if element is not None and element is not svg else False
    for inner in reversed(chain):
        hidden = hidden or _svg_hides(inner)
        judged[id(inner)] = hidden
    return hidden


def _svg_hides(element: Any) -> bool:
    """Whether an element of an SVG hides what it holds: a definition (`_SVG_UNDRAWN`), hidden as HTML is,
    `display="none"`, `visibility="hidden"`, or `opacity="0"`."""
    if element.name in _SVG_UNDRAWN or _html_hidden(element):
        return True
    attrs = element.attrs
    if str(attrs.get("display", "")).strip() == "none" or str(attrs.get("visibility", "")).strip() == "hidden":
        return True
    return str(attrs.get("opacity", attrs.get("fill-opacity", ""))).strip() in ("0", "0.0")


def _html_soup(name: str, text: str, limits: LoadLimits) -> Any:
    """An HTML page's text parsed by BeautifulSoup (html.parser: it expands no entities it does not know
    and fetches nothing), after its tags are counted against `limits.max_elements`."""
    text = text.replace(_CODE_MARK[-1], "")  # a noncharacter: never text, and the reader's own mark around code
    unclosed = text.find("<!--", text.rfind("-->") + 1)
    if unclosed >= 0:  # a browser hides an unclosed comment to the end; html.parser would show it as text
        text = text[:unclosed]
    if next(itertools.islice(_HTML_TAG.finditer(text), limits.max_elements, None), None) is not None:
        raise IngestError(name, f"has more than {limits.max_elements:,} HTML tags, over the limit.")
    from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning

    try:
        with warnings.catch_warnings():  # short uploads like "a.html" trip a spurious "looks like a path"
            warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
            return BeautifulSoup(text, "html.parser")
    except RecursionError:
        raise IngestError(name, "is nested too deeply to read.") from None
    except Exception as exc:
        log.info("%s: HTML parse failed: %r", name, exc)
        raise IngestError(name, "could not be parsed as HTML.") from None


# ---------------------------------------------------------------------------------------------- email

# An email's header block: 'Name: value' lines (folded lines indented), From among them, then a blank line.
_EMAIL_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9-]{0,60}:[^\r\n]*\r?\n(?:[ \t][^\r\n]*\r?\n)*")
_EMAIL_NEEDS = (b"from", b"content-type", b"mime-version", b"content-transfer-encoding")
_EMAIL_SHOWN = ("From", "To", "Cc", "Date")  # header lines kept above the body: who wrote it, to whom, when
EMAIL_SCAN_BYTES = 1 << 16


def _is_email(data: bytes) -> bool:
    """Whether a .txt holds an email as a mail program saves it: a header block naming its sender and
    its MIME type or encoding, then a blank line (its body may be base64, which no reader can search)."""
    head = data[:EMAIL_SCAN_BYTES].removeprefix(b"\xef\xbb\xbf")
    names, at = set(), 0
    while (found := _EMAIL_HEADER.match(head, at)) is not None:
        names.add(found.group(0).split(b":", 1)[0].lower())
        at = found.end()
    ended = head[at : at + 2] in (b"\n", b"\r\n") or head[at : at + 1] == b"\n"
    return ended and b"from" in names and any(name in names for name in _EMAIL_NEEDS[1:])


def _read_email(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """An email's subject (its heading), sender, recipients and date, and its text body: the plain text
    part, else the HTML part's visible text, its transfer encoding (base64, quoted-printable) and charset
    undone. Attachments are not read (a notice counts them)."""
    import email
    from email import policy

    try:
        message = email.message_from_bytes(data, policy=policy.default)
        subject = " ".join(str(message.get("subject", "") or "").split())
        shown = [f"{field}: {' '.join(str(message[field]).split())}" for field in _EMAIL_SHOWN if message[field]]
        body = _text_body(message)
        forwarded = body is None and (body := _forwarded_body(message)) is not None
        content, charset_notice = _part_text(name, body) if body is not None else ("", "")
        attachments = sum(1 for _ in message.iter_attachments()) if message.is_multipart() else 0
        attachments = max(0, attachments - forwarded)  # the forwarded message read is not left unread
    except RecursionError:
        raise IngestError(name, "is nested too deeply to read.") from None
    except IngestError as error:  # a body in an unknown charset whose bytes are no text
        raise IngestError(name, error.reason) from None
    except Exception as exc:  # a damaged MIME structure
        log.info("%s: email parse failed: %r", name, exc)
        raise IngestError(name, "could not be read as an email (its MIME structure or charset is damaged).") from None
    if not isinstance(content, str) or not content.strip():
        raise IngestError(name, "is an email with no text body (only attachments?).")
    heading = (_clean_heading(subject),) if subject else ()
    blocks = [_Block(subject, heading=heading)] if subject else []
    blocks.append(_Block("\n".join(shown), heading=heading))
    if body.get_content_type() == "text/html":
        blocks += [replace(block, heading=heading + block.heading) for block in _html_blocks(name, content, limits)]
    else:
        blocks.append(_Block(content, heading=heading))
    if attachments:
        blocks.append(_Block("", notice=f"{counted(attachments, 'attachment')} not read"))
    if forwarded:
        blocks.append(_Block("", notice="read from the message it forwards as an attachment"))
    if charset_notice:
        blocks.append(_Block("", notice=charset_notice))
    return blocks


def _part_text(name: str, part: Any) -> tuple[str, str]:
    """A text part's words and a notice: in the charset it names, or, where Python knows no such charset
    (a typo, 'x-user-defined', a vendor's name), in the encoding its bytes read as (`_decode_text`), as a
    mail program shows it rather than refusing the message."""
    try:
        return part.get_content(), ""
    except LookupError:
        raw = part.get_payload(decode=True) or b""
        text, how = _decode_text(name, raw if isinstance(raw, bytes) else str(raw).encode())
        charset = " ".join(str(part.get_content_charset() or "").split())[:40]
        return text, f"its charset '{charset}' is unknown; {how or 'read as UTF-8'}"


MAX_FORWARDS = 3  # messages inside messages followed to find a text body


def _forwarded_body(message: Any) -> Any | None:
    """The text body of the message an email forwards as an attachment (a message/rfc822 part, or the
    whole body), when it has none of its own: 'Forward as attachment' leaves the words only there."""
    for _ in range(MAX_FORWARDS):
        inner = next((part for part in itertools.islice(message.walk(), 1000)
                      if part.get_content_type() == "message/rfc822"), None)  # fmt: skip
        if inner is None:
            return None
        content = inner.get_content()
        message = content[0] if isinstance(content, list) and content else content
        if not hasattr(message, "get_body"):
            return None
        body = _text_body(message)
        if body is not None:
            return body
    return None


def _text_body(message: Any) -> Any | None:
    """A message's text body: its plain text part, or its HTML part where the plain one is missing or
    blank (a mail program that writes the plain alternative empty, or only white space)."""
    body = message.get_body(preferencelist=("plain", "html"))
    if body is not None and body.get_content_type() == "text/plain":
        content = _part_text("", body)[0]
        if isinstance(content, str) and not content.strip():
            return message.get_body(preferencelist=("html",)) or body
    return body


# ------------------------------------------------------------------------------------------- notebook

_NOTEBOOK_OPENING = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"(?:cells|metadata|nbformat(?:_minor)?)"\s*:')
_BACKTICK_RUN = re.compile(r"`{3,}")


def _fence_around(code: str) -> str:
    """A backtick fence for `code`: three marks, or one more than its longest run of backticks, so no
    line of it closes the block."""
    return "`" * max([3, *(len(run) + 1 for run in _BACKTICK_RUN.findall(code))])


def _is_notebook(data: bytes) -> bool:
    """Whether a .txt holds a Jupyter notebook's JSON (its first key one a notebook opens with, and it
    names its format version)."""
    return bool(_NOTEBOOK_OPENING.match(data)) and b'"nbformat"' in data


def _read_notebook(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """A Jupyter notebook as the Markdown it shows: Markdown cells as written, code cells as fenced blocks
    in the notebook's language (a fence longer than any backtick run inside), raw cells as text. Outputs
    are not read (results and pictures, not the author's words): a notice counts the cells that had them."""
    import json

    text, notice = _decode_text(name, data)
    try:
        notebook = json.loads(text)
        cells = _notebook_cells(notebook) if isinstance(notebook, dict) else None
    except RecursionError:
        raise IngestError(name, "is nested too deeply to read.") from None
    except (ValueError, KeyError):
        cells = None
    if not isinstance(cells, list):
        raise IngestError(name, "is not a valid Jupyter notebook (its JSON is damaged or has no cells).")
    language = _notebook_language(notebook, cells)
    parts: list[str] = []
    with_output = 0
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        source = cell.get("input" if cell.get("cell_type") == "code" and "input" in cell else "source", "")
        source = "".join(piece for piece in source if isinstance(piece, str)) if isinstance(source, list) else str(source)
        with_output += bool(cell.get("outputs"))
        if cell.get("cell_type") == "code" and source.strip():
            fence = _fence_around(source)
            parts.append(f"{fence}{language}\n{source.strip(chr(10))}\n{fence}")
        elif cell.get("cell_type") == "heading" and source.strip():  # nbformat 3: a heading is a cell of its own
            level = cell.get("level") if isinstance(cell.get("level"), int) and 1 <= cell["level"] <= 6 else 1
            parts.append(f"{'#' * level} {' '.join(source.split())}")
        elif source.strip():
            parts.append(source)
    blocks = _markdown_blocks("\n\n".join(parts))
    if with_output:
        blocks.append(_Block("", notice=f"the outputs of {counted(with_output, 'cell')} not read"))
    return [_Block("", notice=notice), *blocks]


def _notebook_cells(notebook: dict[str, Any]) -> list[Any] | None:
    """A notebook's cells: nbformat 4's `cells`, or nbformat 3's (IPython 1-2, still in old repositories
    and courses) in its `worksheets`, one after another; None when it has neither."""
    if isinstance(notebook.get("cells"), list):
        return notebook["cells"]
    worksheets = notebook.get("worksheets")
    if not isinstance(worksheets, list) or not any(isinstance(w, dict) and isinstance(w.get("cells"), list) for w in worksheets):
        return None
    return [cell for sheet in worksheets if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list) for cell in sheet["cells"]]


def _notebook_language(notebook: dict[str, Any], cells: list[Any]) -> str:
    """The notebook's programming language, for its code fences' info string ('' when it names none); its
    `cells` (`_notebook_cells`) for nbformat 3, which names it in each code cell."""
    metadata = notebook.get("metadata")
    info = metadata.get("language_info") if isinstance(metadata, dict) else None
    kernel = metadata.get("kernelspec") if isinstance(metadata, dict) else None
    first_code = next((cell for cell in cells if isinstance(cell, dict) and cell.get("cell_type") == "code"), None)
    for source, key in ((info, "name"), (kernel, "language"), (first_code, "language")):
        if isinstance(source, dict) and isinstance(source.get(key), str):
            word = source[key].strip().lower()
            if re.fullmatch(r"[a-z0-9+#._-]{1,30}", word):
                return word
    return ""


# ------------------------------------------------------------------------------------- code and logs

JSON_MINIFIED_LINE = 200  # a .json line longer than this is minified: re-indented, so it chunks into readable pieces
JSON_REINDENT_MAX_CHARS = 2_000_000  # a .json larger than this is read as it is (re-indenting it costs memory)
# Re-indented JSON may grow to this many times its minified size (a list of short values grows about twice); a
# deeply nested one, whose indentation would grow past it (1,000 levels: 2,000 spaces a value), is read as it is.
JSON_REINDENT_MAX_GROWTH = 4
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+')


def _read_code(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """A source, configuration or log file as one fenced block in its language (`CODE_LANGUAGES`) under
    the file's name as its heading: every line of it is code to the chunker and the answer (`Chunk.code`),
    kept as typed (indentation included), one sentence a line, never joined to the next nor cut at a full
    stop. The fence is longer than any backtick run inside, so no line of the file closes it."""
    text, notice = _decode_text(name, data)
    ext = _extension(name)
    if ext == ".json":
        rows = _json_records(text)
        if rows:
            return [_Block("\n".join(rows), heading=(name,), notice=notice)]
        text = _reindented_json(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    fence = _fence_around(text)
    return [_Block(f"{fence}{CODE_LANGUAGES[ext]}\n{text}\n{fence}", heading=(name,), notice=notice)]


JSON_RECORDS_MIN = 2  # a JSON list of at least this many flat objects is a table's export, read as rows


def _json_records(text: str) -> list[str]:
    """A JSON file that is a table's export (a list of flat objects, at the top or as the one value of
    an object: `[{"name": ..., "from": ...}, ...]`, as APIs and spreadsheet tools write one) as one
    labelled row a record (`_labelled_row`, as a CSV's rows are read), so a record's fields stay together
    in whichever chunk it lands: read as code lines, "Who locked the door?" found the line of the note
    and not the name three lines above. Values are kept as written (numbers unparsed). Empty for any
    other JSON: configuration stays fenced code."""
    import json

    if len(text) > JSON_REINDENT_MAX_CHARS:
        return []
    try:
        value = json.loads(text, parse_float=str, parse_int=str, parse_constant=str)
    except (ValueError, RecursionError):
        value = _json_lines(text)
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    if not isinstance(value, list) or len(value) < JSON_RECORDS_MIN or not all(_flat_record(v) for v in value):
        return []
    header = list(dict.fromkeys(key for record in value for key in record))
    rows = [_labelled_row(header, [_json_cell(record.get(key)) for key in header]) for record in value]
    return [row for row in rows if row]


def _json_lines(text: str) -> list[Any]:
    """JSON Lines saved as .json (one object a line: a log's, a database's or an API's export, which a
    JSON reader calls invalid past its first line) as the list of its lines' values; empty where any line
    that is not blank is not JSON on its own."""
    import json

    values: list[Any] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line, parse_float=str, parse_int=str, parse_constant=str))
        except (ValueError, RecursionError):
            return []
    return values


def _flat_record(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(not isinstance(v, (dict, list)) for v in value.values())


def _json_cell(value: Any) -> str:
    """A JSON value as its cell: strings as they are, true/false as written, null as empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return " ".join(str(value).split())


def _reindented_json(text: str) -> str:
    """Minified JSON (a line over `JSON_MINIFIED_LINE` characters) re-indented two spaces a level, or the
    text as it is: JSON written over lines, too large (before or after: `JSON_REINDENT_MAX_GROWTH`), or
    not valid. Only valid JSON (json.loads) is
    re-indented, token by token, so numbers and strings stay as written (json.dumps would write '1.10'
    as '1.1' and '1e3' as '1000.0', which the file does not say)."""
    import json

    if len(text) > JSON_REINDENT_MAX_CHARS or max(map(len, text.split("\n"))) <= JSON_MINIFIED_LINE:
        return text
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return text
    out: list[str] = []
    depth = size = 0
    tokens = _JSON_TOKEN.findall(text)
    for i, token in enumerate(tokens):
        size += 2 * depth + len(token) + 2
        if size > JSON_REINDENT_MAX_GROWTH * len(text):
            return text
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in "{[":
            empty = following in "}]" and following != ""
            depth += not empty
            out.append(token if empty else f"{token}\n{'  ' * depth}")
        elif token in "}]":
            if out and out[-1] in "{[":  # an empty object or array: '{}' on one line
                out.append(token)
                continue
            depth -= 1
            out.append(f"\n{'  ' * depth}{token}")
        elif token == ",":
            out.append(f",\n{'  ' * depth}")
        elif token == ":":
            out.append(": ")
        else:
            out.append(token)
    return "".join(out)
