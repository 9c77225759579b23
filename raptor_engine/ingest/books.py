"""Read OpenDocument text (.odt) and EPUB e-books (.epub): zips of XML, read with a .docx's guards.

Before anything is parsed, the zip passes the checks a .docx does (`load._check_docx_sizes`: entries,
unpacked bytes, compression ratio, XML bytes) and every XML part is streamed once (`load._scan_docx_xml`:
entity declarations refused, elements counted). Parts are then parsed by lxml with entities left
unresolved, no DTD loaded and nothing fetched, nesting bounded by its depth limit. Each refusal is one
sentence; the worker process's memory limit and deadline (`parse_worker`) stay the backstop.
"""

from __future__ import annotations

import contextlib
import io
import logging
import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import IngestError
from .load import (
    _XML_HEAD,
    MAX_HEADER_CELL_CHARS,
    LoadLimits,
    XmlRules,
    XmlTally,
    _Block,
    _check_docx_sizes,
    _clean_heading,
    _content_kind,
    _extension,
    _html_soup,
    _HtmlWalker,
    _labelled_row,
    _push_heading,
    _scan_docx_xml,
    _shown,
    _unread_sheets_notice,
    _xml_decoder,
    add_reader,
    held_document,
    scan_xml_stream,
    zip_identity,
)
from .stylesheets import hide_styled, print_only

log = logging.getLogger(__name__)

# what zipfile raises on a damaged archive: besides the obvious, NotImplementedError for a part needing a
# newer zip version or an unknown compression method, RuntimeError for an encrypted part
_ZIP_ERRORS = (zipfile.BadZipFile, ValueError, OSError, EOFError, zlib.error, NotImplementedError, RuntimeError)
_ANY_ELEMENT = re.compile(rb"<[A-Za-z_]")  # an element's start tag, whatever its namespace prefix
_MARKUP_SUFFIXES = (".xml", ".xhtml", ".html", ".htm", ".opf", ".ncx", ".rdf", ".svg")


@dataclass(frozen=True)
class _Kind:
    """One package format: its extension, what it is called in a sentence, and its XML scan's rules."""

    ext: str
    noun: str
    rules: XmlRules


_ODT = _Kind(
    ".odt",
    "an OpenDocument text",
    XmlRules(
        (b"<!DOCTYPE", b"<!ENTITY"), _ANY_ELEMENT, "XML elements",
        declared="contains an XML doctype or entity declarations, which LibreOffice never writes (an XML bomb?).",
        unknown_encoding="has a part in a text encoding LibreOffice never writes ({}); save it again.",
    ),
)
# EPUB 2's XHTML opens with a doctype naming the XHTML DTD (never loaded here): only entities are refused.
_EPUB = _Kind(
    ".epub",
    "an EPUB e-book",
    XmlRules(
        (b"<!ENTITY",), _ANY_ELEMENT, "XML elements",
        declared="contains XML entity declarations, which e-books never need (an XML bomb?).",
        unknown_encoding="has a part in an unknown text encoding ({}).",
    ),
)


@dataclass
class _Package:
    """An opened, checked zip: its parts by name."""

    name: str
    kind: _Kind
    archive: zipfile.ZipFile
    entries: dict[str, zipfile.ZipInfo] = field(default_factory=dict)
    tally: XmlTally = field(default_factory=lambda: XmlTally({}, {}))

    def check_elements(self, text: int, limits: LoadLimits) -> None:
        """Hold the elements read as text (`text`: a body, chapters) and the rest (styles, navigation,
        images, each parsed or skipped whole) to `limits.max_elements` each, so that neither a large
        styles part nor a large body is refused for the other's size, and neither is unbounded."""
        check_elements(self.name, text, self.tally.total - text, limits)

    def read(self, path: str) -> bytes | None:
        info = self.entries.get(path)
        return None if info is None else self.archive.read(info)

    def xml(self, path: str, what: str) -> Any:
        """A part parsed as XML, or the sentence saying why the file cannot be read without it."""
        data = self.read(path)
        if data is None:
            held = held_document(list(self.entries.values()), self.kind.noun)
            if held:
                raise IngestError(self.name, held)
            raise IngestError(self.name, f"is not a valid {self.kind.ext} file (it has no {what}).")
        return parse_xml(self.name, data, what)


def parse_xml(name: str, data: bytes, what: str, broken: str = "") -> Any:
    """lxml's tree of a part: entities never expanded, no DTD loaded, nothing fetched, depth bounded.
    `broken` is the sentence for XML that does not parse (else: its `what` is not well-formed)."""
    from lxml import etree

    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, remove_comments=True, remove_pis=True
    )
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        log.info("%s: %s does not parse: %s", name, what, exc)
        if "depth" in str(exc).lower():  # libxml2's nesting guard ("Excessive depth in document: 256")
            raise IngestError(name, "is nested too deeply to read.") from None
        if "Resource limit exceeded" in str(exc):  # libxml2's 10 MB cap on one text node or attribute
            raise IngestError(name, "has a single piece of text over 10 MB, longer than can be read.") from None
        raise IngestError(name, broken or f"has a {what} that is not well-formed XML (a damaged file?).") from None


def _outside(path: str) -> bool:
    """A part name that would lead out of the archive were it unpacked (absolute, '..', a drive)."""
    parts = path.replace("\\", "/").split("/")
    return path.startswith(("/", "\\")) or ".." in parts or re.match(r"[A-Za-z]:", path) is not None


def check_elements(name: str, text: int, rest: int, limits: LoadLimits) -> None:
    """`_Package.check_elements`, for a package or a flat file."""
    if text > limits.max_elements:
        raise IngestError(name, f"has more than {limits.max_elements:,} XML elements, over the limit.")
    if rest > limits.max_elements:
        raise IngestError(
            name, f"has more than {limits.max_elements:,} XML elements outside its text (styles, navigation, "
            "images), over the limit.",
        )


def _named(kind: _Kind, name: str) -> _Kind:
    """`kind` with the extension the file's name has (an .ott, a .fodt), which refusals quote."""
    ext = _extension(name)
    return kind if ext == kind.ext or not ext else replace(kind, ext=ext)


@contextlib.contextmanager
def _opened(name: str, data: bytes, limits: LoadLimits, kind: _Kind) -> Iterator[_Package]:
    """The zip, once it has passed the .docx checks, is what its extension says, and names no part outside itself."""
    if not data.startswith(b"PK\x03\x04"):
        what = _content_kind(data)
        if what:
            raise IngestError(name, f"is {what}, not {kind.noun} (the {kind.ext} extension does not match its content).")
        raise IngestError(name, f"is not a valid {kind.ext} file (it is not a zip archive).")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            _check_docx_sizes(name, infos, limits, kind.noun, _MARKUP_SUFFIXES)
            bad = next((info.filename for info in infos if _outside(info.filename)), None)
            if bad is not None:
                raise IngestError(name, f"has a part named to lead outside the archive ({_shown(bad)}), which no {kind.ext} file has.")
            identity = zip_identity(archive, infos)
            if identity and identity != kind.noun:
                raise IngestError(name, f"is {identity}, not {kind.noun} (the {kind.ext} extension does not match its content).")
            tally = _scan_docx_xml(name, archive, infos, limits, kind.rules, 2 * limits.max_elements)
            yield _Package(name, kind, archive, {info.filename: info for info in infos}, tally)
    except _ZIP_ERRORS as exc:
        log.info("%s: bad zip: %r", name, exc)
        raise IngestError(name, f"is a corrupt or truncated {kind.ext} file.") from None


# ------------------------------------------------------------------------------------------------ odt

_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_MANIFEST = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}"
_SVG = "{urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0}"
_FO = "{urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0}"
# What is never read as the document's text: deleted text kept for change tracking, comments, generated
# indexes (a table of contents repeats the headings with page numbers), declarations, forms, the
# descriptions of images, and ruby annotations (their base text is read).
_ODT_SKIPPED = frozenset({
    f"{_TEXT}tracked-changes", f"{_OFFICE}annotation", f"{_OFFICE}annotation-end", f"{_OFFICE}forms",
    f"{_TEXT}table-of-content", f"{_TEXT}illustration-index", f"{_TEXT}table-index", f"{_TEXT}object-index",
    f"{_TEXT}user-index", f"{_TEXT}alphabetical-index", f"{_TEXT}bibliography",
    f"{_TEXT}sequence-decls", f"{_TEXT}variable-decls", f"{_TEXT}user-field-decls", f"{_TEXT}dde-connection-decls",
    f"{_SVG}title", f"{_SVG}desc", f"{_TEXT}ruby-text", f"{_TEXT}note-citation", f"{_DRAW}image",
})  # fmt: skip
_ODT_WHITESPACE = re.compile(r"[ \t\r\n]+")  # collapsed to one space, as ODF readers show text
MAX_ODT_SPACES = 100  # text:s c="N": at most this many spaces written out
_STYLE_CHAIN = 10  # parent styles followed when asking whether a style hides its text
_TITLE_STYLES = frozenset({"Title"})
# A cell, and the place of a cell merged into the one before it (read as empty: columns keep their names).
_TABLE_CELLS = frozenset({f"{_TABLE}table-cell", f"{_TABLE}covered-table-cell"})
_TABLE_HEADING_STYLES = frozenset({"Table_20_Heading", "Table Heading"})


_ODT_WHITE = frozenset({"#ffffff", "#fff", "white"})
_ODT_PLAIN = frozenset({"transparent", "#ffffff", "#fff", "white", ""})
ODT_TINY_POINTS = 1.0  # a font this small or smaller shows a hairline, no words


def _odt_tiny(size: str) -> bool:
    """Whether an fo:font-size is 1 pt or less (in pt, or in another absolute unit); a percentage is of
    the parent's size, and is not judged."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(pt|px|mm|cm|in|pc)\s*", size)
    if match is None:
        return False
    points = float(match.group(1)) * {"pt": 1, "px": 0.75, "mm": 2.835, "cm": 28.35, "in": 72, "pc": 12}[match.group(2)]
    return points <= ODT_TINY_POINTS


class _OdtStyles:
    """Each style's parent and what of it decides whether its text is seen, from content.xml's automatic
    styles and styles.xml's named ones: text:display="none"; a font of 1 pt or less; white letters
    (fo:color) and whether it paints a ground (fo:background-color, of its text or its paragraph), on
    which white letters show."""

    def __init__(self, *roots: Any) -> None:
        self.parent: dict[str, str | None] = {}
        self.display: dict[str, bool] = {}
        self.tiny: dict[str, bool] = {}
        self.white: dict[str, bool] = {}
        self.ground: dict[str, bool] = {}
        for root in roots:
            for style in root.iter(f"{_STYLE}style"):
                style_name = style.get(f"{_STYLE}name")
                if style_name is None:
                    continue
                self.parent[style_name] = style.get(f"{_STYLE}parent-style-name")
                properties = style.find(f"{_STYLE}text-properties")
                display = properties.get(f"{_TEXT}display") if properties is not None else None
                if display is not None:
                    self.display[style_name] = display == "none"
                if properties is not None:
                    self._note_looks(style_name, properties, style.find(f"{_STYLE}paragraph-properties"))

    def _note_looks(self, style_name: str, text: Any, paragraph: Any) -> None:
        size = text.get(f"{_FO}font-size")
        if size is not None:
            self.tiny[style_name] = _odt_tiny(size)
        colour = text.get(f"{_FO}color")
        if colour is not None:
            self.white[style_name] = colour.strip().lower() in _ODT_WHITE
        grounds = [props.get(f"{_FO}background-color") for props in (text, paragraph) if props is not None]
        if any(ground is not None for ground in grounds):
            self.ground[style_name] = any((ground or "").strip().lower() not in _ODT_PLAIN for ground in grounds)

    def _says(self, table: dict[str, bool], element: Any) -> bool | None:
        for style_name in self.chain(element.get(f"{_TEXT}style-name")):
            if style_name in table:
                return table[style_name]
        return None

    def grounded(self, element: Any) -> bool:
        """Whether an element's style paints a ground under its text."""
        return bool(self._says(self.ground, element))

    def unseen(self, element: Any, grounded: bool = False) -> bool:
        """Whether an element's style sets its text in 1 pt or less, or white where no ground shows it
        (none of its own, nor `grounded`: the paragraph it sits in has one)."""
        if self._says(self.tiny, element):
            return True
        return bool(self._says(self.white, element)) and not grounded and not self.grounded(element)

    def chain(self, style_name: str | None) -> list[str]:
        names: list[str] = []
        while style_name is not None and len(names) < _STYLE_CHAIN:
            names.append(style_name)
            style_name = self.parent.get(style_name)
        return names

    def hidden(self, element: Any) -> bool:
        """Whether an element's style (or the nearest of its parents that says) hides its text."""
        for style_name in self.chain(element.get(f"{_TEXT}style-name")):
            if style_name in self.display:
                return self.display[style_name]
        return False

    def is_one_of(self, element: Any, names: frozenset[str]) -> bool:
        return any(style_name in names for style_name in self.chain(element.get(f"{_TEXT}style-name")))


class _OdtReader:
    """The body's paragraphs, headings, lists and tables in order, as blocks; notes kept aside, to follow
    the text as a .docx's footnotes and endnotes do, rather than splice into the sentence citing them."""

    def __init__(self, styles: _OdtStyles, notes: list[tuple[bool, str]]) -> None:
        self.styles = styles
        self.notes = notes  # (an endnote?, its text)
        self.blocks: list[_Block] = []
        self.path: list[tuple[int, str]] = []
        self.heading: tuple[str, ...] = ()
        self.grounded = False  # whether the paragraph being read paints a ground (white letters show on it)

    def items(self, parent: Any) -> None:
        """Block-level children: paragraphs and headings, lists, tables, sections, frames and shapes."""
        for element in parent:
            tag = element.tag
            if not isinstance(tag, str) or tag in _ODT_SKIPPED:
                continue
            if tag in (f"{_TEXT}p", f"{_TEXT}h"):
                self.paragraph(element)
            elif tag == f"{_TABLE}table":
                self.blocks.append(_Block(self.table(element), heading=self.heading))
            elif tag == f"{_TEXT}section" and (
                element.get(f"{_TEXT}display") == "none" or self.styles.hidden(element)
            ):
                continue
            else:  # lists and their items, sections, a page's frames, text boxes and shapes
                self.items(element)

    def paragraph(self, p: Any) -> None:
        if self.styles.hidden(p) or _hides_paragraph(p) or self.styles.unseen(p):
            return
        self.grounded = self.styles.grounded(p)
        boxes: list[Any] = []
        text = self.inline(p, boxes).strip()
        level = _outline_level(p) if p.tag == f"{_TEXT}h" else None
        if level is None and self.styles.is_one_of(p, _TITLE_STYLES):
            level = 0
        if level is not None and text:
            self.heading = _push_heading(self.path, level, _clean_heading(text))
        self.blocks.append(_Block(text, heading=self.heading))
        for box in boxes:  # text boxes and shapes anchored in the paragraph: read after it
            self.items(box)

    def inline(self, element: Any, boxes: list[Any]) -> str:
        """An element's text as shown: spaces, tabs and line breaks written out, hidden spans, comments and
        notes left out (a note's text is kept aside), frames put in `boxes`."""
        parts = [_ODT_WHITESPACE.sub(" ", element.text or "")]
        for child in element:
            tag = child.tag
            if isinstance(tag, str) and tag not in _ODT_SKIPPED:
                parts.append(self.inline_child(child, tag, boxes))
            parts.append(_ODT_WHITESPACE.sub(" ", child.tail or ""))
        return "".join(parts)

    def inline_child(self, child: Any, tag: str, boxes: list[Any]) -> str:
        if tag == f"{_TEXT}s":
            return " " * _count(child.get(f"{_TEXT}c"))
        if tag == f"{_TEXT}tab":
            return "\t"
        if tag == f"{_TEXT}number":  # a list item's or heading's number as last laid out ('2.1')
            return f"{self.inline(child, boxes)} "
        if tag == f"{_TEXT}line-break":
            return "\n"
        if tag == f"{_TEXT}note":
            self.note(child)
            return ""
        if tag.startswith(_DRAW):
            boxes.append(child)
            return ""
        if tag == f"{_TEXT}hidden-text" and child.get(f"{_TEXT}is-hidden", "false") != "false":
            return ""
        if tag == f"{_TEXT}span" and (self.styles.hidden(child) or self.styles.unseen(child, self.grounded)):
            return ""
        return self.inline(child, boxes)

    def note(self, note: Any) -> None:
        body = note.find(f"{_TEXT}note-body")
        if body is None:
            return
        reader = _OdtReader(self.styles, self.notes)
        reader.items(body)
        text = " ".join(" ".join(block.text for block in reader.blocks).split())
        if text:
            self.notes.append((note.get(f"{_TEXT}note-class") == "endnote", text))

    def table(self, table: Any) -> str:
        """Rows as a .docx's are read: cells joined by ' | ' (a cell repeated by a merge once); under a header
        row (table:table-header-rows, or a first row in the Table Heading style) that reads as names, a list
        item naming each cell by its column (`_labelled_row`)."""
        rows = [(header, [self.cell(cell) if cell.tag == f"{_TABLE}table-cell" else "" for cell in row
                          if cell.tag in _TABLE_CELLS]) for header, row in _table_rows(table, False)]
        if _has_header(rows, self.styles, table):
            names = rows[0][1]
            return "\n".join(line for line in (_labelled_row(names, cells) for _, cells in rows[1:]) if line)
        lines = []
        for _, row in rows:
            cells: list[str] = []
            for text in row:
                if text and (not cells or cells[-1] != text):
                    cells.append(text)
            if cells:
                lines.append(" | ".join(cells))
        return "\n".join(lines)

    def cell(self, cell: Any) -> str:
        """A cell's paragraphs, lists and tables as one piece of a line (a nested table's rows too)."""
        reader = _OdtReader(self.styles, self.notes)
        reader.items(cell)
        return " ".join(" ".join(block.text for block in reader.blocks).split())


def _count(value: str | None) -> int:
    try:
        return max(1, min(int(value or 1), MAX_ODT_SPACES))
    except ValueError:
        return 1


def _outline_level(h: Any) -> int:
    try:
        return max(1, min(int(h.get(f"{_TEXT}outline-level") or 1), 10))
    except ValueError:
        return 1


def _hides_paragraph(p: Any) -> bool:
    """A hidden-paragraph field whose condition holds hides the paragraph it sits in."""
    return any(field.get(f"{_TEXT}is-hidden", "false") != "false" for field in p.iter(f"{_TEXT}hidden-paragraph"))


def _table_rows(element: Any, header: bool) -> Iterator[tuple[bool, Any]]:
    """A table's rows in order, each with whether it is a header row, through row groups."""
    for child in element:
        if child.tag == f"{_TABLE}table-row":
            yield header, child
        elif child.tag in (f"{_TABLE}table-header-rows", f"{_TABLE}table-rows", f"{_TABLE}table-row-group"):
            yield from _table_rows(child, header or child.tag == f"{_TABLE}table-header-rows")


def _has_header(rows: list[tuple[bool, list[str]]], styles: _OdtStyles, table: Any) -> bool:
    """Whether a table's first row names its columns: marked as a header row (repeated on each page) or
    set in the Table Heading style, and read as names: two rows at least, its cells filled, short, not all
    the same."""
    if len(rows) < 2 or not rows[0][1]:
        return False
    names = rows[0][1]
    if not all(names) or len(set(names)) < 2 or any(len(text) > MAX_HEADER_CELL_CHARS for text in names):
        return False
    if rows[0][0]:
        return True
    first = next((row for _, row in _table_rows(table, False)), None)
    paragraphs = list(first.iter(f"{_TEXT}p")) if first is not None else []
    return bool(paragraphs) and all(styles.is_one_of(p, _TABLE_HEADING_STYLES) for p in paragraphs)


def read_odt(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """An OpenDocument text's body: text:h headings at their outline level set the heading path; paragraphs
    and list items are paragraphs; tables read as a .docx's; footnotes and endnotes after the text. A zip
    (.odt, .ott) or a flat file (.fodt: the same XML in one file), whichever its bytes are."""
    kind = _named(_ODT, name)
    if not data.startswith(b"PK\x03\x04") and _content_kind(data) is None and (
        kind.ext == ".fodt" or _xml_decoder(name, data[:_XML_HEAD], kind.rules.unknown_encoding) is not False
    ):
        return _read_flat_odt(name, data, limits, kind)
    with _opened(name, data, limits, kind) as package:
        manifest = package.read("META-INF/manifest.xml")
        if manifest is not None and next(
            parse_xml(name, manifest, "manifest").iter(f"{_MANIFEST}encryption-data"), None
        ) is not None:
            raise IngestError(name, "is password-protected (encrypted); please save it again without a password.")
        package.check_elements(package.tally.from_body.get("content.xml", 0), limits)
        content = package.xml("content.xml", "content.xml")
        styles_xml = package.read("styles.xml")
        named_styles = parse_xml(name, styles_xml, "styles.xml") if styles_xml is not None else None
    if content.tag != f"{_OFFICE}document-content":
        raise IngestError(name, f"is not a valid {kind.ext} file (its content.xml is not an OpenDocument document).")
    return _odt_blocks(name, content, *(root for root in (named_styles, content) if root is not None))


# A picture embedded in a flat file: base64 inside office:binary-data (a zipped .odt keeps it in Pictures/).
_FLAT_PICTURE = re.compile(rb"(<office:binary-data\b[^<>]{0,200}>)[^<]*+(</office:binary-data>)")


def _read_flat_odt(name: str, data: bytes, limits: LoadLimits, kind: _Kind) -> list[_Block]:
    """A flat OpenDocument text (office:document: styles and body in one XML file), under the zipped
    kind's guards: its size as the unpacked XML's, declarations refused, elements counted before parsing."""
    data = _FLAT_PICTURE.sub(rb"\1\2", data)  # pictures: never text, and one over 10 MB is over libxml2's cap
    if len(data) > limits.max_expanded_bytes:  # the cap on a zipped one's unpacked XML, met without unpacking
        raise IngestError(name, f"is more than {limits.max_expanded_bytes / (1024 * 1024):g} MB of XML, over the limit.")
    stream = io.BytesIO(data)
    head = stream.read(_XML_HEAD)
    tally = XmlTally({}, {})
    decoder = _xml_decoder(name, head, kind.rules.unknown_encoding)
    readable = None if isinstance(decoder, bool) else decoder  # False (not XML) fails in the parse, named
    scan_xml_stream(name, "", stream, head, readable, limits, kind.rules, tally, 2 * limits.max_elements)
    check_elements(name, tally.from_body[""], tally.total - tally.from_body[""], limits)
    root = parse_xml(name, data, "", broken=f"is not well-formed XML, so not a readable {kind.ext} file (a damaged file?).")
    if root.tag not in (f"{_OFFICE}document", f"{_OFFICE}document-content"):
        raise IngestError(name, f"is not a valid {kind.ext} file (it is XML, but not an OpenDocument document).")
    return _odt_blocks(name, root, root)


def _odt_blocks(name: str, content: Any, *style_roots: Any) -> list[_Block]:
    """The blocks of an OpenDocument document's office:body/office:text, its styles from `style_roots`."""
    body = content.find(f"{_OFFICE}body")
    text = body.find(f"{_OFFICE}text") if body is not None else None
    if text is None:
        other = next((child for child in (body if body is not None else ()) if isinstance(child.tag, str)), None)
        kind = other.tag.rsplit("}", 1)[-1][:30] if other is not None else "nothing"
        raise IngestError(name, f"is not an OpenDocument text (its content is {kind}, not a text document).")
    notes: list[tuple[bool, str]] = []
    reader = _OdtReader(_OdtStyles(*style_roots), notes)
    reader.items(text)
    notes.sort(key=lambda note: note[0])  # footnotes, then endnotes, as a .docx's are read
    return [*reader.blocks, *(_Block(note) for _, note in notes)]


# ----------------------------------------------------------------------------------------------- epub

_OPF = "{http://www.idpf.org/2007/opf}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_XMLENC = "{http://www.w3.org/2001/04/xmlenc#}"
# Font obfuscation (IDPF's and Adobe's): fonts scrambled so they cannot be lifted, the text left readable.
_FONT_OBFUSCATION = frozenset({"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"})
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html"})
_PACKAGE_TYPE = "application/oebps-package+xml"
# epub:type (and ARIA role) values of the notes: read after the book's text, as a .docx's notes are.
_NOTE_TYPES = frozenset({
    "footnote", "footnotes", "endnote", "endnotes", "rearnote", "rearnotes", "note",
    "doc-footnote", "doc-endnote", "doc-endnotes",
})  # fmt: skip
# A note's mark in the text, a page break's number, the link back from a note: none is a word of the text.
_DROPPED_TYPES = frozenset({"noteref", "doc-noteref", "backlink", "doc-backlink", "pagebreak", "doc-pagebreak"})
# XML documents a spine may name by mistake (or to feed a reader its own metadata as text) that are no page:
# the package file, the old navigation file, the container; left out of the reading order with a notice.
_NOT_PAGES = frozenset({"package", "ncx", "container", "encryption"})
_FIRST_ELEMENT = re.compile(r"<(?![?!/])(?:[\w.\-]{1,40}:)?([\w.\-]{1,40})")


def _is_page(text: str) -> bool:
    """Whether a spine item is a page: its first element (past the declaration and doctype) is not the root
    of a package, navigation or container file."""
    first = _FIRST_ELEMENT.search(text, 0, 1 << 16)
    return first is None or first.group(1).lower() not in _NOT_PAGES


# What draws a page as a picture: a fixed-layout book's pages are each one of these and nothing else.
_PICTURE_TAGS = ["img", "image", "svg", "picture", "object", "embed", "canvas"]
_MARK_NODES = 6  # elements and strings inside a note's superscript mark, at most
_NOTE_MARK = re.compile(r"[\[(]?[\d*\u2020\u2021\u00a7]{1,4}[\])]?")  # '1', '[12]', '*', '†' in a <sup> link


def _resolved(name: str, base: str, href: str, what: str) -> str:
    """A reference's part name in the zip, from the folder of the part that makes it; refused when it
    leads outside the book (a URL, an absolute path, '..' past the top)."""
    parts = urlsplit(href)
    path = posixpath.normpath(posixpath.join(base, unquote(parts.path))) if parts.path else ""
    if parts.scheme or parts.netloc or not path or path.startswith(("/", "../")) or path == "..":
        raise IngestError(name, f"names a {what} outside the book ({_shown(href)}).")
    return path


def _rootfile(package: _Package) -> str:
    container = package.xml("META-INF/container.xml", "META-INF/container.xml")
    rootfiles = list(container.iter(f"{_CONTAINER}rootfile"))
    chosen = next((r for r in rootfiles if r.get("media-type") == _PACKAGE_TYPE), rootfiles[0] if rootfiles else None)
    if chosen is None or not chosen.get("full-path"):
        raise IngestError(package.name, "is not a valid .epub file (its container names no package file).")
    path = _resolved(package.name, "", chosen.get("full-path"), "package file")
    if path not in package.entries:
        raise IngestError(package.name, f"is not a valid .epub file (its package file {_shown(path)} is missing).")
    return path


def _chapters(package: _Package, opf_path: str) -> list[str]:
    """The content documents in the spine's reading order (not the zip's order), each once; the navigation
    document (nav.xhtml, toc.ncx), images and other media left out."""
    name = package.name
    root = package.xml(opf_path, "package file")
    if root.tag != f"{_OPF}package":
        raise IngestError(name, "is not a valid .epub file (its package file is not an EPUB package).")
    base = posixpath.dirname(opf_path)
    manifest = {item.get("id"): item for item in root.iterfind(f"{_OPF}manifest/{_OPF}item")}
    refs = [ref.get("idref") for ref in root.iterfind(f"{_OPF}spine/{_OPF}itemref")]
    if not refs:
        raise IngestError(name, "is an e-book with no chapters (its spine lists none).")
    chapters: list[str] = []
    for ref in refs:
        item = manifest.get(ref)
        if item is None:
            raise IngestError(name, f"is not a valid .epub file (its spine names {_shown(ref or '')}, which its manifest lacks).")
        path = _resolved(name, base, item.get("href") or "", "chapter")
        if item.get("media-type") not in _CHAPTER_TYPES or "nav" in (item.get("properties") or "").split():
            continue
        if path not in package.entries:
            raise IngestError(name, f"is not a valid .epub file (its chapter {_shown(path)} is missing).")
        if path not in chapters:
            chapters.append(path)
    return chapters


def _check_not_drm(package: _Package, chapters: list[str]) -> None:
    """Refuse a book whose chapters META-INF/encryption.xml says are encrypted (DRM): their bytes are not
    text. Fonts obfuscated against copying leave the text readable."""
    data = package.read("META-INF/encryption.xml")
    if data is None:
        return
    encrypted = set()
    for entry in parse_xml(package.name, data, "encryption.xml").iter(f"{_XMLENC}EncryptedData"):
        method = entry.find(f"{_XMLENC}EncryptionMethod")
        if method is not None and method.get("Algorithm") in _FONT_OBFUSCATION:
            continue
        for reference in entry.iter(f"{_XMLENC}CipherReference"):
            encrypted.add(posixpath.normpath(unquote(reference.get("URI") or "").lstrip("/")))
    if encrypted.intersection(chapters):
        raise IngestError(package.name, "is protected by DRM (its chapters are encrypted); only DRM-free e-books can be read.")


_LINK_TAG = re.compile(r"<link\b[^>]*>", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"""([-\w:]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
MAX_LINKED_SHEETS = 20  # style sheets read for one chapter


def _linked_css(package: _Package, path: str, text: str, missing: list[str]) -> str:
    """The text of the style sheets a chapter links (`<link rel="stylesheet" href="...">`) inside the
    book, for screens; a sheet outside the book, missing, or for print is not read, and the names of the
    first two kinds are added to `missing` (what they hide cannot be told)."""
    sheets: list[str] = []
    for tag in _LINK_TAG.findall(text)[:MAX_LINKED_SHEETS]:
        attrs = {key.lower(): next(v for v in values if v is not None) for key, *values in _ATTRIBUTE.findall(tag)}
        if "stylesheet" not in attrs.get("rel", "").lower().split() or not attrs.get("href"):
            continue
        if print_only(attrs.get("media", "")):
            continue
        try:
            sheet = package.read(_resolved(package.name, posixpath.dirname(path), attrs["href"], "style sheet"))
        except IngestError:  # a sheet on the web or outside the book: nothing of it is read
            sheet = None
        if sheet is None:
            missing.append(attrs["href"].split("?")[0].split("#")[0].rstrip("/").rsplit("/", 1)[-1] or attrs["href"])
        elif sheet:
            sheets.append(sheet.decode("utf-8", "replace"))
    return "\n".join(sheets)


def _chapter_text(name: str, path: str, data: bytes) -> str:
    """A chapter's XHTML as text, in the encoding its byte-order mark or XML declaration names."""
    decoder = _xml_decoder(name, data[:256], _EPUB.rules.unknown_encoding)
    if decoder is False:
        raise IngestError(name, f"has a chapter that is not XHTML ({_shown(path)}), as a DRM-protected book's are.")
    text = data.decode("utf-8", "replace") if decoder is None else decoder.decode(data, final=True)
    return text.removeprefix("\ufeff")


def _types(tag: Any) -> set[str]:
    return set(f"{tag.get('epub:type', '')} {tag.get('role', '')}".lower().split())


def _set_notes_aside(soup: Any) -> list[Any]:
    """Take the notes out of a chapter (to be read after the book) and drop the marks citing them, page
    break numbers and the links back, so no note or number is spliced into the sentence it annotates."""
    notes = []
    gone: set[int] = set()  # the elements inside a mark dropped
    in_notes: set[int] = set()  # the elements inside a note taken out (read with it)
    for tag in soup.find_all(True):
        if id(tag) in gone:
            continue
        types = _types(tag)
        if types & _DROPPED_TYPES or tag.name == "epub:case":  # epub:switch shows its epub:default
            _drop(tag, gone)
        elif types & _NOTE_TYPES and id(tag) not in in_notes:
            in_notes.update(id(inner) for inner in tag.descendants)
            notes.append(tag.extract())
        elif tag.name == "sup" and (link := _note_mark_link(tag)) is not None:
            _drop(link if link is tag.parent else tag, gone)
    return notes


def _note_mark_link(sup: Any) -> Any | None:
    """The link of a note's mark set as a superscript ('<sup><a href="#n2">2</a></sup>', or the link around
    the <sup>), or None. A mark is a few nodes: no more are looked at, so a deep <sup> costs no walk of its
    depth (bs4's `descendants` and `find` walk to the last descendant first)."""
    from bs4 import NavigableString, Tag

    inner: list[Any] = []
    pending = list(reversed(sup.contents))
    while pending and len(inner) <= _MARK_NODES:
        node = pending.pop()
        inner.append(node)
        if isinstance(node, Tag):
            pending.extend(reversed(node.contents))
    text = "".join(node for node in inner if isinstance(node, NavigableString))
    if pending or len(inner) > _MARK_NODES or not _NOTE_MARK.fullmatch(text.strip()):
        return None
    parent = sup.parent
    around = parent is not None and parent.name == "a" and len(parent.contents) <= _MARK_NODES and all(
        node is sup or (isinstance(node, NavigableString) and not node.strip()) for node in parent.contents
    )  # a link holding only the mark, not a link holding a sentence with a superscript in it
    link = parent if around else next((node for node in inner if isinstance(node, Tag) and node.name == "a"), None)
    return link if link is not None and link.get("href") else None


def _drop(tag: Any, gone: set[int]) -> None:
    """Take an element and its text out of the tree. (Its descendants are noted first: asking a decomposed
    bs4 Tag whether it is one searches its children, so a deep chapter would cost a search per element.)"""
    gone.update(id(inner) for inner in tag.descendants)
    tag.decompose()


def read_epub(name: str, data: bytes, limits: LoadLimits) -> list[_Block]:
    """An EPUB's chapters in the spine's order, read as HTML pages are (h1-h6 set the heading path, which
    carries from one chapter into the next, hidden elements dropped); its notes after its text."""
    with _opened(name, data, limits, _EPUB) as package:
        chapters = _chapters(package, _rootfile(package))
        package.check_elements(sum(package.tally.elements.get(path, 0) for path in chapters), limits)
        _check_not_drm(package, chapters)
        texts = [(path, _chapter_text(name, path, package.read(path) or b"")) for path in chapters]
        missing: list[str] = []  # linked style sheets the book does not hold
        sheets = {path: _linked_css(package, path, text, missing) for path, text in texts}
    pages: list[tuple[str, str]] = []
    skipped: list[str] = []  # spine items that are no page
    for path, text in texts:
        if _is_page(text):
            pages.append((path, text))
        else:
            skipped.append(path)
    walker = _HtmlWalker()
    notes: list[str] = []
    pictures = 0
    for path, text in pages:
        soup = _html_soup(name, text, limits)
        hide_styled(soup, sheets[path], name=name)  # a class its style sheets hide ('.note { display: none }')
        pictures += len(soup.find_all(_PICTURE_TAGS, limit=1))
        asides = _set_notes_aside(soup)
        try:
            walker.walk(soup)
            notes.extend(" ".join(block.text for block in _HtmlWalker().walk(note)) for note in asides)
        except RecursionError:
            raise IngestError(name, "is nested too deeply to read.") from None
    blocks = [*walker.blocks, *(_Block(" ".join(note.split())) for note in notes)]
    if skipped:
        log.info("%s: spine items that are not pages left out: %s", name, skipped)
        blocks.append(_Block("", notice=f"{len(skipped)} of its reading order's items left out: not pages "
                                        f"(its package or navigation file, as {_shown(skipped[0])})"))
    if missing:
        blocks.append(_Block("", notice=_unread_sheets_notice(list(dict.fromkeys(missing)))))
    if pictures and not any(block.text.strip() for block in blocks):
        # a fixed-layout book of scanned pages or a comic: its words are in its pictures, as a scanned PDF's
        raise IngestError(name, "has pages that are images, with no text layer (a scan or a comic?); please "
                                "upload an e-book with selectable text.")
    return blocks


add_reader("odt", read_odt)
add_reader("epub", read_epub)
