"""Kinds of file the outside pass of docs/ROBUSTNESS.md ('Files left alone, and unseen awkward files')
found read badly: emails (.eml, or saved as .txt) with encoded bodies, quoted-printable parts saved alone,
Jupyter notebooks, filled PDF forms and scans whose text layer is only page numbers."""

from __future__ import annotations

import base64
import io
import json

import pytest

from raptor_engine.errors import IngestError
from raptor_engine.ingest.chunk import code_lines
from raptor_engine.ingest.load import load_document
from tests.pdf_pages import one_page_pdf

pytest.importorskip("reportlab.pdfgen.canvas")

BODY = "The supply ship will call on the ninth of March with paraffin."


def _email(body: bytes, *, encoding: str = "base64", kind: str = "text/plain; charset=utf-8") -> bytes:
    head = f"From: Keeper <keeper@example.org>\nTo: depot@example.org\nSubject: Supplies for the light\nDate: Tue, 3 Mar 1891 09:00:00 +0000\nMIME-Version: 1.0\nContent-Type: {kind}\nContent-Transfer-Encoding: {encoding}\n\n"
    return head.encode() + body + b"\n"


@pytest.mark.parametrize("name", ["supplies.eml", "supplies.txt"])
@pytest.mark.parametrize(("body", "encoding"), [
    (base64.b64encode(BODY.encode()), "base64"),
    (BODY.replace("March", "M=C3=A4rz").encode(), "quoted-printable"),
])  # fmt: skip
def test_an_email_reads_as_its_decoded_body_under_its_subject(name: str, body: bytes, encoding: str) -> None:
    doc = load_document(name, _email(body, encoding=encoding))
    assert doc.format == "email"
    assert doc.text.split("\n")[0] == "Supplies for the light"
    assert "From: Keeper <keeper@example.org>" in doc.text
    assert "The supply ship will call on the ninth of" in doc.text and base64.b64encode(BODY.encode()).decode()[:20] not in doc.text
    assert doc.sections[0].heading == ("Supplies for the light",)


def test_an_emails_html_body_and_attachments() -> None:
    boundary = "XYZ"
    html = base64.b64encode(b"<html><body><p>The tender came at <b>dawn</b>.</p><script>x()</script></body></html>").decode()
    raw = (
        "From: a@example.org\nSubject: Tender\nMIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{boundary}"\n\n'
        f"--{boundary}\nContent-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: base64\n\n{html}\n"
        f"--{boundary}\nContent-Type: application/pdf\nContent-Disposition: attachment; filename=log.pdf\n"
        f"Content-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n--{boundary}--\n"
    ).encode()
    doc = load_document("tender.eml", raw)
    assert "The tender came at dawn." in doc.text and "x()" not in doc.text
    assert doc.notices == ("1 attachment not read",)


def test_an_email_without_a_text_body_is_one_sentence() -> None:
    raw = b"From: a@example.org\nSubject: x\nMIME-Version: 1.0\nContent-Type: image/png\nContent-Transfer-Encoding: base64\n\niVBORw0KGgo=\n"
    with pytest.raises(IngestError, match="is an email with no text body"):
        load_document("pic.eml", raw)


def test_a_txt_that_only_mentions_headers_is_plain_text() -> None:
    text = b"From: the keeper's log\nThe lamp was lit at seven.\n\nContent-Type: is a header name.\n"
    assert load_document("log.txt", text).format == "txt"


def test_a_quoted_printable_file_is_decoded_and_plain_equals_signs_are_not() -> None:
    doc = load_document("bread.html", b"<p>The keeper=E2=80=99s wife baked bread every Tues=\nday for the crew.</p>")
    assert doc.text == "The keeper\u2019s wife baked bread every Tuesday for the crew."
    assert any("quoted-printable" in notice for notice in doc.notices)
    for plain in (b"a = 1\nb = 2\n", b"E=MC2 and A=BC.\n", b"x=3D1 but y=2\n"):
        assert load_document("plain.txt", plain).text == plain.decode().strip()


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "source": ["# Tide tables\n", "The spring tide peaks at 6.1 metres."]},
        {"cell_type": "code", "source": ["def high(t):\n", "    return t > 5.5\n"], "outputs": [{"output_type": "stream", "text": ["True"]}]},
        {"cell_type": "code", "source": "doc = '''\n```\nnot a fence\n```\n'''"},
        {"cell_type": "raw", "source": "The neap tide is lower."},
    ],
    "metadata": {"language_info": {"name": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}  # fmt: skip


@pytest.mark.parametrize("name", ["tides.ipynb", "tides.txt"])
def test_a_notebook_reads_as_markdown_with_its_code_fenced(name: str) -> None:
    doc = load_document(name, json.dumps(NOTEBOOK, indent=1).encode())
    assert doc.format == "notebook"
    assert "The spring tide peaks at 6.1 metres." in doc.text and '"cell_type"' not in doc.text
    assert doc.sections[0].heading == ("Tide tables",)
    code = [doc.text[a:b] for a, b in code_lines(doc.text)]
    assert "```python" in code and "    return t > 5.5" in code and "not a fence" in code
    assert "The neap tide is lower." not in code
    assert doc.notices == ("the outputs of 1 cell not read",)


def test_a_damaged_notebook_is_one_sentence() -> None:
    with pytest.raises(IngestError, match="is not a valid Jupyter notebook"):
        load_document("broken.ipynb", b'{"cells": [ {"cell_type": ')


def test_a_filled_pdf_form_reads_its_values() -> None:
    def draw(page) -> None:  # type: ignore[no-untyped-def]
        page.drawString(60, 780, "Keeper's return for the quarter")
        page.drawString(60, 740, "Name:")
        page.acroForm.textfield(name="keeper", tooltip="Keeper's name", value="Elias Penrose", x=120, y=730)
        page.acroForm.textfield(name="blank", value="", x=120, y=690)
        page.acroForm.checkbox(name="relieved", checked=True, x=120, y=650)
        page.acroForm.checkbox(name="sick", checked=False, x=160, y=650)

    text = load_document("return.pdf", one_page_pdf(draw)).text
    assert "Keeper's name: Elias Penrose" in text
    assert "relieved: Yes" in text and "sick" not in text and "blank" not in text


@pytest.mark.parametrize("stamp", ["1", "Page 3 of 12", "- iv -"])
def test_a_scan_whose_text_layer_is_only_a_page_number_is_refused(stamp: str) -> None:
    with pytest.raises(IngestError, match="has no text layer but page numbers"):
        load_document("scan.pdf", one_page_pdf(lambda page: page.drawString(290, 30, stamp)))
    assert load_document("ok.pdf", one_page_pdf(lambda page: page.drawString(60, 780, f"Chapter {stamp}"))).text


def test_an_html_heading_in_markdown_starts_and_names_a_section() -> None:
    source = b'<h1 align="center">Lamp <span hidden>secret</span>Book</h1>\n\nIntro.\n\n<h2>Fuel</h2>\n\nParaffin from 1895.\n\n```\n<h2>code</h2>\n```\n'
    doc = load_document("readme.md", source)
    assert [section.heading for section in doc.sections] == [("Lamp Book",), ("Lamp Book", "Fuel")]
    assert "secret" not in doc.text and "<h2>code</h2>" in doc.text
    assert load_document("a.md", b"Para with <h2>inline</h2> heading.\n").sections[0].heading == ()


@pytest.mark.parametrize(("mimetype", "reason"), [
    ("application/vnd.oasis.opendocument.text", "is an OpenDocument text (LibreOffice), not a Word document; rename it .odt to add it."),
    ("application/vnd.oasis.opendocument.spreadsheet", "is an OpenDocument file (LibreOffice), not a Word document."),
    ("application/epub+zip", "is an EPUB e-book, not a Word document; rename it .epub to add it."),
    (None, "is a zip archive but not a Word document."),
])  # fmt: skip
def test_a_zip_named_docx_says_what_it_is(mimetype: str | None, reason: str) -> None:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        if mimetype:
            archive.writestr("mimetype", mimetype)
        archive.writestr("content.xml", "<office:document-content/>")
    with pytest.raises(IngestError) as refused:
        load_document("minutes.docx", buffer.getvalue())
    assert refused.value.reason == reason
