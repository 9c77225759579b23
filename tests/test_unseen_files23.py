"""Files read as a careful reader sees them (round 23): style sheets' attribute and pseudo selectors and
generated content in HTML and EPUB; a Word file's embedded HTML or RTF parts (w:altChunk)."""

from __future__ import annotations

import io
import zipfile

import pytest

from raptor_engine.ingest.load import load_document
from raptor_engine.ingest.stylesheets import hide_styled
from raptor_tools.book_files import epub_file, xhtml
from tests.test_unseen_files22 import SECRET, SHOWN, _read_html

# ------------------------------------------------------------------------------------------ style sheets
# (attribute selectors and pseudo-classes that hide or show are among test_unseen_files22's style sheet cases)


def test_the_hidden_attribute_alone_or_until_found_still_hides() -> None:
    assert _read_html("<style>p { display: block }</style>", f'<p hidden="until-found">{SECRET}</p>') == SHOWN
    assert _read_html("<style>.x { color: red }</style>", f"<p hidden>{SECRET}</p>") == SHOWN


def test_generated_content_a_reader_sees_is_read() -> None:
    head = (
        '<style>.warn::before { content: \'Warning: \' } .ref::after { content: " (see " attr(data-page) ")" }'
        " q::before { content: open-quote } q::after { content: close-quote } .icon::before { content: '\\f005' }"
        " .nl::before { content: 'Line\\A one; two} ' }</style>"
    )
    body = (
        '<p class="warn">Mind the step.</p><p class="ref" data-page="12">Tide tables.</p><p><q>Ahoy</q> said Ann.</p>'
        '<p class="icon">Rated.</p><p class="nl">end.</p>'
    )
    lines = _read_html(head, body).split("\n\n")
    assert lines[1:] == [
        "Warning: Mind the step.", "Tide tables. (see 12)", "\u201cAhoy\u201d said Ann.", "Rated.", "Line one; two} end."
    ]  # fmt: skip


def test_an_ebooks_sheet_applies_attribute_selectors_and_generated_content() -> None:
    chapter = xhtml(f'<p>{SHOWN}</p><p data-role="aside">{SECRET}</p><p class="tip">Carry water.</p>')
    chapter = chapter.replace(
        "<title>Chapter</title>",
        '<title>Chapter</title><link rel="stylesheet" type="text/css" href="css/book.css"/>',
    )
    css = '[data-role="aside"] { display: none; } .tip::before { content: "Tip: "; }'
    text = load_document(
        "book.epub", epub_file([("one.xhtml", chapter)], extra={"OEBPS/css/book.css": css})
    ).text
    assert SHOWN in text and "Tip: Carry water." in text and SECRET not in text


# ------------------------------------------------------------------------------------------ Word altChunk

_WORD = (
    'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
)
_PACKAGE = "http://schemas.openxmlformats.org/package/2006"
_OFFICE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


_ALT_CHUNK = '<w:altChunk r:id="htmlChunk"/>'


def _alt_chunk_docx(
    part: str, content: bytes | str, content_type: str | None, body: str = _ALT_CHUNK
) -> bytes:
    """A .docx as html-docx-js writes one: a paragraph, a w:altChunk importing `part` (or `body`), a
    paragraph; the part typed `content_type` in [Content_Types].xml (not at all when None)."""
    extension = part.rsplit(".", 1)[1]
    typed = f'<Default Extension="{extension}" ContentType="{content_type}"/>' if content_type else ""
    files = {
        "[Content_Types].xml": f'<?xml version="1.0"?><Types xmlns="{_PACKAGE}/content-types">'
        f'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        f'<Default Extension="xml" ContentType="application/xml"/>{typed}<Override PartName="/word/document.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        "_rels/.rels": f'<?xml version="1.0"?><Relationships xmlns="{_PACKAGE}/relationships"><Relationship Id="rId1" '
        f'Type="{_OFFICE}/officeDocument" Target="word/document.xml"/></Relationships>',
        "word/_rels/document.xml.rels": f'<?xml version="1.0"?><Relationships xmlns="{_PACKAGE}/relationships">'
        f'<Relationship Id="htmlChunk" Type="{_OFFICE}/aFChunk" Target="/word/{part}"/></Relationships>',
        "word/document.xml": f'<?xml version="1.0"?><w:document {_WORD}><w:body>'
        f"<w:p><w:r><w:t>Before the part.</w:t></w:r></w:p>{body}"
        "<w:p><w:r><w:t>After the part.</w:t></w:r></w:p></w:body></w:document>",
        f"word/{part}": content,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return buffer.getvalue()


PAGE = (
    f"<html><body><h1>Tides</h1><p>High water at 06:40.</p><p style='display:none'>{SECRET}</p></body></html>"
)
WEB_ARCHIVE = (
    'MIME-Version: 1.0\r\nContent-Type: multipart/related; type="text/html"; boundary="B"\r\n\r\n--B\r\n'
    'Content-Type: text/html; charset="utf-8"\r\nContent-Transfer-Encoding: quoted-printable\r\n'
    "Content-Location: file:///C:/fake/document.html\r\n\r\n<!DOCTYPE html><html><body><h1>Tides</h1><p>High wa=\r\n"
    "ter at 06:40 =E2=80=94 Tresco.</p></body></html>\r\n--B--\r\n"
)

EMBEDDED_PARTS = {
    "an HTML page": ("afchunk.htm", PAGE, "text/html", "High water at 06:40."),
    "an XHTML page": ("chunk.xhtml", PAGE, "application/xhtml+xml", "High water at 06:40."),
    "a web archive, as html-docx-js writes": ("afchunk.mht", WEB_ARCHIVE, "message/rfc822", "High water at 06:40 \u2014 Tresco."),
    "a page the package does not type": ("afchunk.htm", PAGE, None, "High water at 06:40."),
    "a page typed as bytes": ("afchunk.html", PAGE, "application/octet-stream", "High water at 06:40."),
    "plain text": ("chunk.txt", "High water at 06:40.", "text/plain", "High water at 06:40."),
}  # fmt: skip


@pytest.mark.parametrize("how", EMBEDDED_PARTS)
def test_a_word_files_embedded_page_is_read_where_it_stands(how: str) -> None:
    part, content, content_type, line = EMBEDDED_PARTS[how]
    doc = load_document("tides.docx", _alt_chunk_docx(part, content, content_type))
    blocks = doc.text.split("\n\n")
    assert blocks[0] == "Before the part." and blocks[-1] == "After the part." and line in blocks
    assert SECRET not in doc.text and not doc.notices
    if "Tides" in blocks:  # the page's heading heads its lines, under the Word file's own (none here)
        assert any(section.heading == ("Tides",) for section in doc.sections)


def test_a_word_document_embedded_in_one_is_read_and_one_in_that_is_said_left_out() -> None:
    inner = _alt_chunk_docx("afchunk.htm", PAGE, "text/html")
    doc = load_document("outer.docx", _alt_chunk_docx("inner.docx", inner, None))
    assert doc.text.split("\n\n") == [
        "Before the part.", "Before the part.", "Tides", "High water at 06:40.", "After the part.", "After the part."
    ]  # fmt: skip
    nested = _alt_chunk_docx("inner.docx", _alt_chunk_docx("middle.docx", inner, None), None)
    doc = load_document("outer.docx", nested)
    assert "High water" not in doc.text and doc.notices == (
        "1 embedded part left out (a Word document inside an embedded one): Word reads such a part in when it opens "
        "the file, so open it in Word and save it again to make that text part of the document",
    )


def test_an_embedded_part_that_cannot_be_read_is_said_left_out() -> None:
    doc = load_document(
        "tides.docx", _alt_chunk_docx("afchunk.rtf", r"{\rtf1\ansi High water at 06:40.}", "application/rtf")
    )
    assert doc.text == "Before the part.\n\nAfter the part."
    assert doc.notices == (
        "1 embedded part left out (an RTF part): Word reads such a part in when it opens the file, so open it in "
        "Word and save it again to make that text part of the document",
    )


def test_a_later_sibling_rule_over_a_long_run_of_siblings_is_matched_in_linear_steps() -> None:
    """`.note ~ p` walked each paragraph's earlier siblings (200 at most): 20,000 paragraphs without a
    `.note` before them took 4 million steps, past the budget, and the page was refused as too complex."""
    from bs4 import BeautifulSoup

    paragraphs = "".join(f"<p>line {i}</p>" for i in range(20_000))
    soup = BeautifulSoup(
        f"<style>.note ~ p {{ display: none }}</style><div>{paragraphs}<i class=note></i><p>x</p></div>",
        "html.parser",
    )
    assert hide_styled(soup) == 1


def test_rules_on_attributes_are_tried_only_on_elements_that_have_them() -> None:
    """60 rules on `[data-…]` were tried on every element: over 10,000 paragraphs, past the budget."""
    from bs4 import BeautifulSoup

    rules = "".join(f"[data-x{i}] {{ display: none }}" for i in range(60))
    body = "".join(f"<p>line {i}</p>" for i in range(10_000)) + "<p data-x7>hidden</p>"
    assert hide_styled(BeautifulSoup(f"<style>{rules}</style>{body}", "html.parser")) == 1


def test_an_embedded_part_inside_a_table_cell_is_read_as_the_cells_text() -> None:
    """It was counted in the notice alone; it is read where Word shows it (`test_unseen_files24` has more)."""
    cell = '<w:tbl><w:tr><w:tc><w:altChunk r:id="htmlChunk"/><w:p/></w:tc></w:tr></w:tbl>'
    data = _alt_chunk_docx("afchunk.htm", PAGE, "text/html", body=cell)
    doc = load_document("tides.docx", data)
    assert doc.text.split("\n\n") == ["Before the part.", "Tides High water at 06:40.", "After the part."]
    assert SECRET not in doc.text and not doc.notices


def test_embedded_parts_past_the_first_twenty_are_said_left_out() -> None:
    """Each embedded part is a page parsed: one part named a thousand times was parsed a thousand times."""
    doc = load_document("tides.docx", _alt_chunk_docx("afchunk.htm", PAGE, "text/html", body=_ALT_CHUNK * 25))
    assert doc.text.count("High water at 06:40.") == 20
    assert doc.notices[0].startswith("5 embedded parts left out (a part past the first 20): ")
