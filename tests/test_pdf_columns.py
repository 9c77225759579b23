"""PDFs in two columns written line by line across the page read one column after the other; pages of
one column, tables and centred titles read as pypdf orders them (`load._column_text`)."""

from __future__ import annotations

import io

import pytest

from raptor_engine.ingest.load import load_document
from tests.pdf_pages import one_page_pdf

pytest.importorskip("reportlab.pdfgen.canvas")

LEFT = ["The north light was first", "lit in 1859 and burned", "colza oil for thirty years.", "Its keeper was Elias Penrose,"]
RIGHT = ["The south light followed", "in 1871 and was automated", "in 1932 by the Trinity House.", "Its lamp was electric from"]


def _lines(data: bytes) -> list[str]:
    return load_document("page.pdf", data).text.split("\n")


def _across(page, rows: list[tuple[str, str]], top: float) -> float:  # type: ignore[no-untyped-def]
    for left, right in rows:
        page.drawString(60, top, left)
        page.drawString(320, top, right)
        top -= 16
    return top


def test_two_columns_written_across_the_page_read_left_then_right() -> None:
    def draw(page) -> None:  # type: ignore[no-untyped-def]
        page.drawCentredString(297, 800, "Two Lights of the Lizard")
        top = _across(page, list(zip(LEFT, RIGHT, strict=True)), 770)
        page.drawString(60, top - 10, "A heading across the whole width of the page, over both columns")
        _across(page, [("The keepers rowed ashore", "The relief boat came"), ("each Sunday for church.", "every second Tuesday."),
                       ("They came back by noon.", "It brought coal and mail.")], top - 40)

    lines = _lines(one_page_pdf(draw))
    assert lines[0] == "Two Lights of the Lizard"
    assert lines[1:9] == LEFT + RIGHT
    assert lines[9].startswith("A heading across")
    assert lines[10:] == ["The keepers rowed ashore", "each Sunday for church.", "They came back by noon.",
                          "The relief boat came", "every second Tuesday.", "It brought coal and mail."]


def test_a_page_of_one_column_and_a_column_by_column_page_read_as_before() -> None:
    def one(page) -> None:  # type: ignore[no-untyped-def]
        for i, line in enumerate(LEFT + RIGHT):
            page.drawString(60, 780 - 16 * i, line)

    def by_column(page) -> None:  # type: ignore[no-untyped-def]
        for i, line in enumerate(LEFT):
            page.drawString(60, 780 - 16 * i, line)
        for i, line in enumerate(RIGHT):
            page.drawString(320, 780 - 16 * i, line)

    assert _lines(one_page_pdf(one)) == LEFT + RIGHT
    assert _lines(one_page_pdf(by_column)) == LEFT + RIGHT


@pytest.mark.parametrize("columns", [2, 3])
def test_a_table_reads_as_pypdf_orders_it(columns: int) -> None:
    rows = [("Keeper", "Station", "Pay"), ("Elias Penrose", "Godrevy", "38"), ("Ambrose Kittow", "Longships", "41"),
            ("Mary Hall", "Lizard", "35")]

    def draw(page) -> None:  # type: ignore[no-untyped-def]
        for i, row in enumerate(rows):
            for j, cell in enumerate(row[:columns]):
                page.drawString(60 + 180 * j, 780 - 16 * i, cell)

    from pypdf import PdfReader

    data = one_page_pdf(draw)
    assert _lines(data) == PdfReader(io.BytesIO(data)).pages[0].extract_text().strip().split("\n")
