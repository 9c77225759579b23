"""A Word table cut between chunks: each row under a header row names its cells by their columns, so a chunk
that begins mid-table still says which column a value is in ('- Name: Boat 31; Year built: 1931.')."""

from __future__ import annotations

import io

import docx
import pytest

from raptor_engine.ingest.chunk import chunk_document
from raptor_engine.ingest.load import load_document

FLEET = [["Name", "Length", "Year built"]] + [[f"Boat {i}", f"{i + 3} m", f"{1900 + i}"] for i in range(60)]


def word_table(rows: list[list[str]], *, style: str | None = None, bold: bool = False, repeat: bool = False) -> bytes:
    """A .docx with a paragraph and one table: its first row bold, repeated as a header, or styled."""
    document = docx.Document()
    document.add_paragraph("The harbour's fleet.")
    table = document.add_table(rows=len(rows), cols=len(rows[0]), style=style)
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).paragraphs[0].add_run(value).bold = bold and r == 0 or None
    if repeat:
        properties = table.rows[0]._tr.get_or_add_trPr()
        properties.append(properties.makeelement(docx.oxml.ns.qn("w:tblHeader"), {}))
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "evidence", [{"style": "Light Grid Accent 1"}, {"bold": True}, {"repeat": True}], ids=["style", "bold", "repeat"]
)
def test_rows_under_a_header_row_name_their_columns_in_every_chunk(evidence):
    doc = load_document("fleet.docx", word_table(FLEET, **evidence))
    lines = doc.text.split("\n")
    assert lines[2] == "- Name: Boat 0; Length: 3 m; Year built: 1900."
    assert "Name | Length | Year built" not in doc.text
    chunks = chunk_document(doc, lambda text: len(text.split()), max_tokens=40)
    assert len(chunks) > 5
    for chunk in chunks:
        for line in chunk.text.split("\n"):
            assert "Boat" not in line or line.startswith("- Name: Boat"), chunk.text


def test_a_table_with_no_header_row_keeps_its_lines_of_cells():
    """A key-value table ('Born | 1850') in a plain table style: its first row names nothing."""
    doc = load_document("facts.docx", word_table([["Born", "1850"], ["Died", "1920"]]))
    assert doc.text.split("\n")[-2:] == ["Born | 1850", "Died | 1920"]


def test_a_merged_cell_is_read_once_under_the_column_it_starts_in():
    data = word_table([["Item", "Cost", "Notes"], ["Ladder", "\u00a3320", "new"], ["Knife", "\u00a385", "old"]], bold=True)
    document = docx.Document(io.BytesIO(data))
    table = document.tables[0]
    table.cell(1, 1).merge(table.cell(1, 2))
    buffer = io.BytesIO()
    document.save(buffer)
    lines = load_document("costs.docx", buffer.getvalue()).text.split("\n")
    assert lines[-2:] == ["- Item: Ladder; Cost: \u00a3320 new.", "- Item: Knife; Cost: \u00a385; Notes: old."]


def test_a_bold_first_row_of_prose_or_one_repeated_cell_is_no_header():
    long_cell = "A first cell that runs on as a sentence of prose well past the length of any column's name."
    assert "|" in load_document("a.docx", word_table([[long_cell, "x"], ["1", "2"]], bold=True)).text
    assert "|" in load_document("b.docx", word_table([["Total", "Total"], ["1", "2"]], bold=True)).text
