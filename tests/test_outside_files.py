"""Files people upload that they did not make, found by the outside pass (docs/ROBUSTNESS.md, "Files from
outside"): each is read whole and in order, or refused in one sentence about that file."""

from __future__ import annotations

import gzip
import io
import warnings
import zipfile

import pytest

from raptor_engine.errors import IngestError
from raptor_engine.ingest.load import load_document
from raptor_tools.book_files import epub_file, odt_file, xhtml, zipped
from raptor_tools.robustness import small_docx

_DOCX = small_docx(["The tide gauge was read at noon.", "The keeper logged it in ink."])


def _renamed_main_part(data: bytes, main: str) -> bytes:
    """`data` (a .docx) with its main part moved to `main`, as its package relationships then name it."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            part = source.read(info)
            path = info.filename.replace("document.xml", main.rsplit("/", 1)[-1])
            if info.filename in ("_rels/.rels", "[Content_Types].xml"):
                part = part.replace(b"word/document.xml", main.encode())
            archive.writestr(path if path.startswith("word/") else info.filename, part)
    return buffer.getvalue()


@pytest.mark.parametrize("main", ["word/document2.xml", "word/main.xml"])
def test_a_docx_whose_main_part_its_relationships_name_elsewhere_is_read(main: str) -> None:
    """Office online writes word/document2.xml; python-docx follows the package's relationship, and so
    must the checks before it (they refused it as 'a zip archive but not a Word document')."""
    data = _renamed_main_part(_DOCX, main)
    assert "word/document.xml" not in zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert (
        load_document("report.docx", data).text
        == "The tide gauge was read at noon.\n\nThe keeper logged it in ink."
    )
    with pytest.raises(IngestError) as refused:
        load_document("report.odt", data)  # and it is still named for what it is under another extension
    assert refused.value.reason.startswith("is a Word document, not an OpenDocument text")


def _with_second(data: bytes, path: str, part: bytes) -> bytes:
    buffer = io.BytesIO(data)
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "a") as archive:
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it is asked to write
        archive.writestr(path, part)
    return buffer.getvalue()


@pytest.mark.parametrize(("name", "data", "path"), [
    ("twice.docx", _DOCX, "word/document.xml"),
    ("twice.odt", odt_file("<text:p>Shown.</text:p>"), "content.xml"),
    ("twice.epub", epub_file([("one.xhtml", xhtml("<p>Shown.</p>"))]), "OEBPS/one.xhtml"),
])  # fmt: skip
def test_a_zip_naming_a_part_twice_is_refused_rather_than_read_either_way(
    name: str, data: bytes, path: str
) -> None:
    """Python's zipfile reads the last copy, most programs show the first: the text stored could be
    other than what the person sees in their program."""
    original = zipfile.ZipFile(io.BytesIO(data)).read(path)
    smuggled = _with_second(
        data, path, original.replace(b"Shown", b"Hidden").replace(b"tide gauge", b"hidden text")
    )
    with pytest.raises(IngestError) as refused:
        load_document(name, smuggled)
    assert refused.value.reason == (
        f"has two parts named {path!r} (a damaged or tampered file: programs differ on which they show)."
    )


def test_an_epub_whose_spine_names_its_own_package_file_reads_its_pages_only() -> None:
    data = epub_file(
        [("one.xhtml", xhtml("<p>The fog lifted.</p>"))],
        spine_extra='<itemref idref="me"/><itemref idref="ncx2"/>',
        manifest_extra='<item id="me" href="content.opf" media-type="application/xhtml+xml"/>'
        '<item id="ncx2" href="toc.ncx" media-type="application/xhtml+xml"/>',
    )
    doc = load_document("self.epub", data)
    assert doc.text == "The fog lifted."  # not the package's metadata ('b1Booken') nor the table of contents
    assert doc.notices == (
        "2 of its reading order's items left out: not pages (its package or navigation file, as 'OEBPS/content.opf')",
    )


@pytest.mark.parametrize("markers", [">>", "> > >", ">" * 100_000])
def test_a_block_quote_nested_any_depth_keeps_one_marker(markers: str) -> None:
    """100,000 '>' before a line were stored as 100,000 characters (1,112 chunks, 29 s to build)."""
    doc = load_document(
        "quotes.md", f"Intro.\n\n{markers} The deepest quote.\n\n```\n>> kept in code\n```\n".encode()
    )
    assert doc.text == "Intro.\n\n> The deepest quote.\n\n```\n>> kept in code\n```"


_FORWARD_HEAD = "From: a@example.com\nTo: b@example.com\nSubject: Fwd: the log\nMIME-Version: 1.0\n"
_INNER = (
    "From: keeper@example.com\nSubject: The log\nContent-Type: text/plain\n\nThe keeper's log is inside.\n"
)


@pytest.mark.parametrize("body", [
    f"Content-Type: message/rfc822\n\n{_INNER}",
    'Content-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: message/rfc822\n'
    f'Content-Disposition: attachment; filename="log.eml"\n\n{_INNER}--B--\n',
], ids=["whole", "attached"])  # fmt: skip
def test_an_email_forwarded_as_an_attachment_reads_the_message_it_carries(body: str) -> None:
    doc = load_document("fwd.eml", (_FORWARD_HEAD + body).encode())
    assert doc.text.endswith("The keeper's log is inside.")
    assert doc.notices == ("read from the message it forwards as an attachment",)


def _pdf(objects: list[bytes]) -> bytes:
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    return out + b"trailer<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


def test_text_typed_onto_a_pdf_with_a_viewers_text_tool_is_read_and_comments_are_not() -> None:
    """A FreeText annotation is drawn on the page by the viewer; pypdf's page text leaves it out, so a
    PDF filled in that way was refused as 'no text layer (a scan?)'."""
    data = _pdf([
        b"<</Type/Catalog/Pages 2 0 R>>", b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Annots[4 0 R 5 0 R]>>",
        b"<</Type/Annot/Subtype/FreeText/Rect[72 700 400 720]/Contents(The keeper saw three ships in May.)>>",
        b"<</Type/Annot/Subtype/Text/Rect[72 600 90 620]/Contents(A reviewer's sticky note.)>>",
    ])  # fmt: skip
    assert load_document("typed.pdf", data).text == "The keeper saw three ships in May."


@pytest.mark.parametrize(("name", "data", "what"), [
    ("notes.txt", b"PK\x03\x04" + bytes(range(256)) * 4, "a zip archive"),
    ("notes.md", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "a PNG image"),
    ("table.csv", gzip.compress(bytes(range(256)) * 4), "a gzip archive"),
    ("run.sh", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4, "a program (an executable)"),
    ("data.json", b"SQLite format 3\x00" + bytes(range(256)) * 4, "an SQLite database"),
])  # fmt: skip
def test_binary_data_under_a_text_name_says_what_it_is(name: str, data: bytes, what: str) -> None:
    with pytest.raises(IngestError) as refused:
        load_document(name, data)
    ext = name[name.rindex(".") :]
    assert refused.value.reason == f"is {what}, not text (the {ext} extension does not match its content)."


@pytest.mark.parametrize(("name", "inner", "noun"), [
    ("nested.odt", "inner.odt", "an OpenDocument text"),
    ("nested.epub", "my book.epub", "an EPUB e-book"),
    ("nested.docx", "Report.docx", "a Word document"),
])  # fmt: skip
def test_a_document_zipped_under_its_own_extension_names_the_file_inside(
    name: str, inner: str, noun: str
) -> None:
    """Someone zipped their file before sending it: the refusal names the file to unzip and add, rather
    than that the outer file lacks a content.xml or a container."""
    data = odt_file("<text:p>x</text:p>") if inner.endswith(".odt") else _DOCX
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"folder/{inner}", data)
    with pytest.raises(IngestError) as refused:
        load_document(name, buffer.getvalue())
    assert (
        refused.value.reason
        == f"is a zip archive holding {inner!r}, not {noun} itself; unzip it and add that file."
    )


@pytest.mark.parametrize(("name", "data", "what"), [
    ("report.pdf", _DOCX, "a Word document, not a PDF"),
    ("report.txt", _DOCX, "a Word document, not text"),
    ("renamed.pdf", _renamed_main_part(_DOCX, "word/document2.xml"), "a Word document, not a PDF"),
    ("book.md", epub_file([("one.xhtml", xhtml("<p>x</p>"))]), "an EPUB e-book, not text"),
    ("notes.pdf", odt_file("<text:p>x</text:p>"), "an OpenDocument text, not a PDF"),
    # any OpenDocument kind, named as books name it (`zip_identity`)
    ("plan.txt", zipped({"content.xml": "<x/>"}, mimetype="application/vnd.oasis.opendocument.graphics"),
     "an OpenDocument graphics, not text"),
])  # fmt: skip
def test_a_document_under_another_kinds_name_is_named_for_what_it_is(
    name: str, data: bytes, what: str
) -> None:
    """Not 'a zip archive': the person picked their Word file or e-book, under the wrong name."""
    with pytest.raises(IngestError) as refused:
        load_document(name, data)
    ext = name[name.rindex(".") :]
    assert refused.value.reason == f"is {what} (the {ext} extension does not match its content)."


def test_a_long_name_inside_a_zip_is_quoted_short_as_every_part_name_is() -> None:
    """The name held in a zip is quoted as a refusal quotes any part's (`_shown`): printable, cut with '…'."""
    inner = "\u202e" + "r" * 70 + ".docx"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"folder/{inner}", _DOCX)
    with pytest.raises(IngestError) as refused:
        load_document("nested.docx", buffer.getvalue())
    quoted = repr("r" * 60 + "\u2026")
    assert refused.value.reason == f"is a zip archive holding {quoted}, not a Word document itself; unzip it and add that file."
