"""CSV and TSV exports are read as tables: each row under its column names, so a row cut from its header
by chunking still says what each value is; a file of figures with no header keeps its rows of cells."""

from __future__ import annotations

import pytest

from raptor_engine.errors import IngestError
from raptor_engine.ingest.chunk import chunk_document, split_sentences
from raptor_engine.ingest.load import LoadLimits, load_document
from raptor_engine.ingest.sentences import labelled_row, sentences_of
from raptor_engine.query.tables import holds_rows, row_cells
from raptor_engine.types import ContextNode


def test_rows_under_a_header_name_their_columns_in_every_chunk():
    rows = "".join(f"Boat {i},{i + 3} m,{1900 + i}\n" for i in range(60))
    doc = load_document("fleet.csv", ("Name,Length,Year built\n" + rows).encode())
    lines = doc.text.split("\n")
    assert lines[0] == "- Name: Boat 0; Length: 3 m; Year built: 1900."
    assert doc.format == "csv" and len(lines) == 60
    chunks = chunk_document(doc, lambda text: len(text.split()), max_tokens=40)
    assert len(chunks) > 5
    assert all(line.startswith("- Name: Boat") for chunk in chunks for line in chunk.text.split("\n"))


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("a.csv", b'Item,Fee\n"Books, maps",20p\n', ["- Item: Books, maps; Fee: 20p."]),  # quoted comma
        ("b.csv", b"Name;Amount\nAnn;1,50\n", ["- Name: Ann; Amount: 1,50."]),  # semicolons, decimal comma
        ("c.tsv", b"Keeper\tYear\nAnn\t1887\n", ["- Keeper: Ann; Year: 1887."]),
        ("d.csv", b"1,2,3\n4,5,6\n", ["1 | 2 | 3", "4 | 5 | 6"]),  # figures, no header
        (
            "e.csv",
            b"Name,Note\nAnn,a|b\n\n,\n",
            ["- Name: Ann; Note: a/b."],
        ),  # empty rows dropped, bars kept inert
    ],
)
def test_delimiters_quoting_and_headers(name, data, expected):
    assert load_document(name, data).text.split("\n") == expected


def test_a_row_saved_with_another_delimiter_is_read_in_the_columns():
    """A row of commas in a file of semicolons (pasted from another export) was one cell under the first
    column ('Keeper: Elias Penrose,Godrevy,38'); it is read in the columns when the other delimiter splits
    it into exactly as many cells, formulas left out as in any row. A row that does not fit stays as read."""
    data = b"Keeper;Station;Pay\nAmbrose Kittow;Carn Point;40\nElias Penrose,Godrevy,38\nT Rowe|=SUM(A1)|42\nA note, alone\n"
    doc = load_document("rota.csv", data)
    assert doc.text.split("\n") == [
        "- Keeper: Ambrose Kittow; Station: Carn Point; Pay: 40.",
        "- Keeper: Elias Penrose; Station: Godrevy; Pay: 38.",
        "- Keeper: T Rowe; Pay: 42.",
        "- Keeper: A note, alone.",
    ]
    assert doc.notices == ("1 cell left out: spreadsheet formulas, whose values the file does not hold",)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            b"Item,Price,Notes\nRake,\xc2\xa32,966,Heavy duty\n",
            "- Item: Rake; Price: \u00a32,966; Notes: Heavy duty.",
        ),
        (b"Item,Stock,Price\nRake,1,800,$12,500.50\n", "- Item: Rake; Stock: 1,800; Price: $12,500.50."),
        (b"Town,People\nLeeds,812,000\n", "- Town: Leeds; People: 812,000."),
        # not a number cut in two: the extra cell stays as it was
        (b"Item,Price\nRake,12,Heavy\n", "- Item: Rake; Price: 12; Heavy."),
        (
            b"Item;Price\nRake;1;250\n",
            "- Item: Rake; Price: 1; 250.",
        ),  # no thousands comma in a file of semicolons
    ],
)
def test_a_number_an_unquoted_thousands_comma_split_is_one_cell(data, expected):
    """review25: 'Rake,\u00a32,966,Heavy duty' read 'Price: \u00a32; Notes: 966; Heavy duty', a price of \u00a32."""
    assert load_document("stock.csv", data).text.split("\n")[0] == expected


def test_a_legacy_encoded_export_is_read_and_said_so():
    doc = load_document("towns.csv", "Ville,Population\nZ\u00fcrich,400000\n".encode("latin-1"))
    assert doc.text == "- Ville: Z\u00fcrich; Population: 400000."
    assert doc.notices == ("read as Windows-1252 (it is not UTF-8)",)


def test_too_many_cells_or_a_field_past_the_csv_limit_is_refused_in_one_sentence():
    with pytest.raises(IngestError, match="more than 10 table cells"):
        load_document("big.csv", b"a,b\n" * 10, limits=LoadLimits(max_elements=10))
    with pytest.raises(IngestError) as refused:
        load_document("field.csv", b'a,b\n1,2\n3,"' + b"x" * 200_000 + b'"\n')
    assert refused.value.reason == (
        "has a cell of more than 131,072 characters, starting in the row on line 3 (an unclosed quote mark?)."
    )
    with pytest.raises(IngestError, match="contains no text"):
        load_document("empty.csv", b",,\n,,\n")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("header.csv", b"Name,Length,Year built\n"),
        ("header.tsv", b"Keeper\tYear\r\n"),
        ("blank-rows.csv", b"\xef\xbb\xbfName;Amount\n;\n\n"),  # a BOM, semicolons, only empty rows under it
    ],
)
def test_a_header_with_no_rows_is_refused_in_one_sentence(name, data):
    """An empty table, like an empty .txt, has nothing to search or quote: not one line of column names."""
    with pytest.raises(IngestError) as refused:
        load_document(name, data)
    assert str(refused.value) == f"{name}: is a table with a header row (column names) but no rows of data."


def test_one_row_of_figures_is_still_a_table():
    assert load_document("figures.csv", b"1887,1903,45\n").text == "1887 | 1903 | 45"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"Name\nAnn\nBen\n", ["- Name: Ann.", "- Name: Ben."]),  # the column's name, not a row
        (
            b"Email address\r\nann@x.org\r\nben@y.org\r\n",
            ["- Email address: ann@x.org.", "- Email address: ben@y.org."],
        ),
        (b"Keepers,\nAnn,\nBen,\n", ["- Keepers: Ann.", "- Keepers: Ben."]),  # a trailing empty column
        (
            b"Visited\n1887\n1903\n",
            ["- Visited: 1887.", "- Visited: 1903."],
        ),  # no digit where all values have one
        (b"Ann\nBen\nCarol\n", ["Ann", "Ben", "Carol"]),  # a list with no header stays a list
        (b"Pride and Prejudice\nEmma\n", ["Pride and Prejudice", "Emma"]),
        (b"The list follows.\n1\n2\n", ["The list follows.", "1", "2"]),  # a sentence is no column name
    ],
)
def test_a_one_column_table_reads_its_rows_under_its_header(data, expected):
    assert load_document("list.csv", data).text.split("\n") == expected


def test_spreadsheet_formulas_read_as_a_reader_sees_them_or_are_left_out_and_said_so():
    """A CSV holds a formula, not its value: a link shows its label; any other formula (a sum, a DDE
    command that runs a program when the file is opened in a spreadsheet) is no words of the document."""
    data = (
        b"Name,Link,Total\n"
        b'Ann,"=HYPERLINK(""http://evil.example/x"",""Click here"")",=SUM(A1:A3)\n'
        b"Ben,+cmd|' /C calc'!A0,@SUM(1)\n"
        b'Carol,"=HYPERLINK(""http://a.example/"")",-2\n'
        b"Dan,+44 20 7946 0958,=1+1\n"
    )
    doc = load_document("sheet.csv", data)
    assert doc.text.split("\n") == [
        "- Name: Ann; Link: Click here.",
        "- Name: Ben.",
        "- Name: Carol; Link: http://a.example/; Total: -2.",
        "- Name: Dan; Link: +44 20 7946 0958.",
    ]
    assert doc.notices == ("4 cells left out: spreadsheet formulas, whose values the file does not hold",)
    assert "cmd" not in doc.text and "SUM" not in doc.text


def test_a_table_of_formulas_alone_is_refused_as_holding_no_text():
    with pytest.raises(IngestError, match="contains no text"):
        load_document("sums.csv", b"=SUM(A1:A3),=A1*2\n=B1,=C1\n")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        (
            "notes.csv",
            b"Item,Notes,Price\nSpade,Steel blade. Ash handle,24.99\nRake,Wide head! Light. Cheap?,9.50\n",
        ),
        ("notes.tsv", b"Item\tNotes\nSpade\tSteel blade. Ash handle\nRake\tWide head. Light\n"),
        (
            "figures.csv",
            b"1,Steel blade. Ash handle,3\n4,Wide head. Light,6\n",
        ),  # no header: cells between bars
        (
            "notes.md",
            b"| Item | Notes |\n|---|---|\n| Spade | Steel blade. Ash handle |\n| Rake | Wide. Light |\n",
        ),
    ],
)
def test_a_row_whose_cell_holds_a_full_stop_is_one_sentence(name, data):
    """A row is one quotable unit: a cell's '. ' cut it in two, the second half naming no column."""
    text = load_document(name, data).text
    rows = text.split("\n")
    assert [text[start:end] for start, end in split_sentences(text)] == rows
    assert all(len(sentences_of(row)) == 1 for row in rows)


def test_prose_list_items_and_sentences_around_a_table_still_split():
    text = "Bring boots. Bring a hat.\n- Item: Spade; Notes: Steel. Ash.\nThe shed shuts at six. Lock it."
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "Bring boots.", "Bring a hat.", "- Item: Spade; Notes: Steel. Ash.", "The shed shuts at six.", "Lock it."
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("header", "label"),
    [("Cost: GBP", "Cost (GBP)"), ("Cost:", "Cost"), ("Cost; GBP", "Cost, GBP"), ("Cost (ex VAT): GBP", "Cost (ex VAT), GBP"),
     ("Time (hh:mm)", "Time (hh:mm)")],
)  # fmt: skip
def test_a_column_name_holding_a_colon_labels_its_cells_whole(header, label):
    """'Cost: GBP: 4.99' read as column Cost holding 'GBP: 4.99' (no figure): the name's own colon or
    semicolon is written so that a row's label ends at its last ': '."""
    data = f"Item,{header}\nTrowel,4.99\nRake,12.50\n".encode()
    page = f"<table><tr><th>Item</th><th>{header}</th></tr><tr><td>Trowel</td><td>4.99</td></tr></table>"
    for name, written in (
        ("p.csv", data),
        ("p.md", f"| Item | {header} |\n|--|--|\n| Trowel | 4.99 |\n".encode()),
        ("p.html", page.encode()),
    ):
        first = load_document(name, written).text.split("\n")[0]
        assert first == f"- Item: Trowel; {label}: 4.99.", name
        assert row_cells(first.removeprefix("- ")) == {"Item": "Trowel", label: "4.99"}
    quoted = labelled_row(["Trowel", "4.99"], ["Item", header])  # a row as an answer quotes it
    assert quoted == f"Item: Trowel; {label}: 4.99"


def test_a_long_column_name_the_loader_takes_as_a_header_labels_rows_the_tables_read():
    """A header cell of 49 to 80 characters was a column's name to the loader but too long a label for a
    row, so its rows were no rows to a table question."""
    name = "Estimated annual maintenance cost including VAT and labour"
    text = load_document("costs.csv", f"Item,{name}\nBoiler,£120\nPump,£80\n".encode()).text
    assert text.split("\n")[0] == f"- Item: Boiler; {name}: £120."
    assert row_cells(text.split("\n")[0].removeprefix("- ")) == {"Item": "Boiler", name: "£120"}
    assert holds_rows([ContextNode(1, 0, "costs.csv", 0.5, text, 30, 1, start=0, end=len(text))])


def test_a_long_line_with_a_bar_is_prose_read_as_sentences():
    """A row is one sentence, but a paragraph that holds one ' | ' is no row: it was one sentence of 1 MB."""
    prose = "The keeper lit the lamp. The sea was calm | the wind low. " * 200
    assert len(split_sentences(prose)) == 400
    row = "Stamp | " + "First class. Sold singly. " * 30  # a row of 788 characters: one sentence
    assert len(split_sentences(row)) == 1
