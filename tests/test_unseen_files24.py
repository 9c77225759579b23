"""Files read as a careful reader sees them (round 24): style sheets' `:nth-child()`, `:has()` and other
pseudo-classes with a selector argument; text moved off the page, clipped or scaled to nothing; a page's
style sheet that was not uploaded with it."""

from __future__ import annotations

import pytest

from raptor_engine.ingest.load import load_document
from tests.test_unseen_files22 import SECRET, SHOWN, _read_html

# ------------------------------------------------------------------------------------------ style sheets

HIDDEN_BY_SELECTORS = {
    "an even child": ("li:nth-child(2n) { display: none }", "<ul><li>{s0}</li><li>{s}</li><li>{s1}</li></ul>"),
    "the even keyword": ("li:nth-child(even) { display: none }", "<ul><li>{s0}</li><li>{s}</li></ul>"),
    "an odd child": ("li:nth-child( odd ) { display: none }", "<ul><li>{s}</li><li>{s0}</li></ul>"),
    "the first three": ("li:nth-child(-n + 3) { display: none }", "<ul><li>{s}</li><li>{s}</li><li>{s}</li><li>{s0}</li></ul>"),
    "one child by number": ("tr:nth-child(3) { display: none }", "<table><tr><td>{s0}</td></tr><tr><td>{s1}</td></tr><tr><td>{s}</td></tr></table>"),
    "counted from the last": ("p:nth-last-child(1) { display: none }", "<div><p>{s0}</p><p>{s}</p></div>"),
    "of its type": ("p:nth-of-type(2) { visibility: hidden }", "<div><i>x</i><p>{s0}</p><i>y</i><p>{s}</p></div>"),
    "of its type from the last": ("div > p:nth-last-of-type(3n+1) { display: none }", "<div><p>{s0}</p><p>{s}</p><i>z</i></div>"),
    "of a selector": ("p:nth-child(1 of .x) { display: none }", '<div><p>{s0}</p><p class="x">{s}</p><p class="x">{s1}</p></div>'),
    "a :has() child": ("section:has(> .flag) { display: none }", '<section><i class="flag"></i><p>{s}</p></section><section><p>{s0}</p></section>'),
    "a :has() descendant": ("div:has(img[alt=off]) { opacity: 0 }", '<div><p>{s}<img alt="off"></p></div>'),
    "a :has() sibling": (".a:has(+ .b) { display: none }", '<p class="a">{s}</p><p class="b">{s0}</p>'),
    "a :not() of a complex selector": ("div p:not(.keep p) { display: none }", '<div class="keep"><p>{s0}</p></div><div><p>{s}</p></div>'),
    "a :not() of an :nth-child()": ("li:not(:nth-child(1)) { display: none }", "<ul><li>{s0}</li><li>{s}</li></ul>"),
    "an :is() list": (":is(.a, .b) .n { display: none }", '<div class="b"><p class="n">{s}</p></div>'),
    "a :where() beaten by nothing": (":where(.n) { display: none }", '<p class="n">{s}</p>'),
}  # fmt: skip


def _shown_lines(css: str, body: str) -> list[str]:
    filled = body.replace("{s0}", "Kept zero.").replace("{s1}", "Kept one.").replace("{s}", SECRET)
    return _read_html(f"<style>{css}</style>", filled).split("\n\n")


@pytest.mark.parametrize("how", HIDDEN_BY_SELECTORS)
def test_text_hidden_by_a_pseudo_class_with_an_argument_is_left_out(how: str) -> None:
    css, body = HIDDEN_BY_SELECTORS[how]
    lines = _shown_lines(css, body)
    assert SECRET not in " ".join(lines)
    assert lines[0] == SHOWN and ("{s0}" not in body or any("Kept zero." in line for line in lines))
    assert "{s1}" not in body or any("Kept one." in line for line in lines)


SHOWN_DESPITE_SELECTORS = {
    "an odd child under an even rule": ("li:nth-child(2n) { display: none }", "<ul><li>{s}</li></ul>"),
    "a later :nth-child() rule shows it": ("li { display: none } li:nth-child(1) { display: list-item }", "<ul><li>{s}</li></ul>"),
    "a :where() rule loses to a class": (":where(.n) { display: block } .n { display: none } :where(p).n.k { display: block }", '<p class="n k">{s}</p>'),
    "an :is() rule wins by its argument": (".n { display: none } :is(#x, .y) { display: block }", '<p id="x" class="n">{s}</p>'),
    "a :has() that finds nothing": ("div:has(> .flag) { display: none }", "<div><p>{s}</p></div>"),
    "a :has() on a state": ("div:has(a:hover) { display: none }", '<div><a href="#">{s}</a></div>'),
}  # fmt: skip


@pytest.mark.parametrize("how", SHOWN_DESPITE_SELECTORS)
def test_text_those_selectors_leave_shown_is_read(how: str) -> None:
    css, body = SHOWN_DESPITE_SELECTORS[how]
    assert SECRET in " ".join(_shown_lines(css, body))


def test_a_has_rule_over_a_deep_page_is_bounded() -> None:
    """`div:has(.x)` on each of 3,000 nested divs visits 4.5 million elements: refused, not minutes."""
    from raptor_engine.errors import IngestError

    nested = "<div>" * 3_000 + "x" + "</div>" * 3_000
    with pytest.raises(IngestError, match="too complex to apply safely"):
        load_document("deep.html", f"<style>div:has(.x) {{ display: none }}</style>{nested}".encode())


HIDDEN_BY_BOXES = {
    "moved off the left edge": ".n { position: absolute; left: -9999px }",
    "moved above the top": ".n { position: fixed; top: -10000px }",
    "moved off in ems": ".n { position: relative; left: -999em }",
    "indented off the page": ".n { text-indent: -9999px; overflow: hidden }",
    "a far negative margin": ".n { margin-left: -10000px }",
    "translated off": ".n { transform: translateX(-9999px) }",
    "clipped to a rectangle of no area": ".n { position: absolute; clip: rect(0 0 0 0) }",
    "clipped with commas": ".n { position: absolute; clip: rect(1px, 1px, 1px, 1px); width: 1px; height: 1px }",
    "clip-path inset(50%)": ".n { clip-path: inset(50%); width: 1px; height: 1px }",
    "clip-path circle(0)": ".n { clip-path: circle(0) }",
    "scaled to nothing": ".n { transform: scale(0) }",
    "scaled flat": ".n { transform: rotate(5deg) scaleY(0) }",
    "the scale property": ".n { scale: 0 }",
    "no height, overflow hidden": ".n { height: 0; overflow: hidden }",
    "no max-height, overflow-y hidden": ".n { max-height: 0px; overflow-y: hidden }",
    "a pixel box, overflow hidden": ".n { width: 1px; height: 1px; overflow: hidden }",
    "content not drawn": ".n { content-visibility: hidden }",
    "a filter of no opacity": ".n { filter: blur(1px) opacity(0%) }",
    "clipped to a polygon of one point": ".n { clip-path: polygon(0 0, 0 0, 0  0) }",
    "a font of a pixel": ".n { font-size: 1px }",
    "a font of a twentieth of its parent's": ".n { font-size: 0.05em }",
    "an opacity of a hundredth": ".n { opacity: 0.01 }",
    "font-size 0": ".n { font-size: 0 }",
    "opacity 0": ".n { opacity: 0 }",
    "the screen-reader-only recipe": (
        ".sr-only { position: absolute !important; width: 1px; height: 1px; padding: 0; margin: -1px;"
        " overflow: hidden; clip: rect(0, 0, 0, 0); white-space: nowrap; border: 0 } .n { color: inherit }"
    ),
}


@pytest.mark.parametrize("how", HIDDEN_BY_BOXES)
def test_text_its_box_puts_out_of_sight_is_left_out(how: str) -> None:
    css = HIDDEN_BY_BOXES[how]
    lines = _shown_lines(css, '<p class="n sr-only">{s}</p><p>{s0}</p>')
    assert lines == [SHOWN, "Kept zero."]
    style = css.split("{", 1)[1].rsplit("}", 1)[0] if "sr-only" not in css else ""
    if style:  # the same declarations in the element's own style attribute
        assert _read_html("", f'<p style="{style}">{SECRET}</p>') == SHOWN


SHOWN_DESPITE_BOXES = {
    "a small offset": ".n { position: absolute; left: -20px }",
    "an offset on a static box": ".n { left: -9999px }",
    "a clip on a box in the flow": ".n { clip: rect(0 0 0 0) }",
    "a whole clip": ".n { position: absolute; clip: rect(0 100px 20px 0) }",
    "a partial inset": ".n { clip-path: inset(10%) }",
    "overflow hidden at full height": ".n { height: 40px; overflow: hidden }",
    "no height, overflow shown": ".n { height: 0 }",
    "a scale of one": ".n { transform: scale(1) }",
    "a small font": ".n { font-size: 9px }",
    "a faint opacity": ".n { opacity: 0.3 }",
    "a font size with no unit, which a browser ignores": ".n { font-size: 1 }",
    "a later rule puts it back": ".n { position: absolute; left: -9999px } .n.open { left: 0 }",
    "its own style puts it back": ".n { transform: scale(0) }",
    "a focus rule is no reset, a class is": (
        ".n { position: absolute; clip: rect(0 0 0 0) } .n:focus { position: static } p.n { clip: auto }"
    ),
}


@pytest.mark.parametrize("how", SHOWN_DESPITE_BOXES)
def test_text_a_box_leaves_in_sight_is_read(how: str) -> None:
    own = ' style="transform: none"' if how == "its own style puts it back" else ""
    assert SECRET in _read_html(
        f"<style>{SHOWN_DESPITE_BOXES[how]}</style>", f'<p class="n open"{own}>{SECRET}</p>'
    )


MARKDOWN_HIDDEN_STYLES = [
    "font-size:0",
    "opacity: 0.0;",
    "color: transparent",
    "position:absolute;left:-9999px",
    "text-indent: -10000px",
    "position:absolute; clip: rect(0 0 0 0); width:1px",
    "clip-path: inset(50%)",
    "transform: scale(0)",
    "content-visibility: hidden",
    "filter: opacity(0)",
    "font-size: 1px",
    "opacity: .01",
]


@pytest.mark.parametrize("style", MARKDOWN_HIDDEN_STYLES)
def test_markdowns_html_hidden_by_its_style_is_left_out(style: str) -> None:
    text = f'{SHOWN}<span style="{style}">{SECRET}</span>\n\n<div style="{style}">\n{SECRET}\n</div>\n\nKept.'
    assert load_document("notes.md", text.encode()).text == f"{SHOWN}\n\nKept."


@pytest.mark.parametrize(
    "style",
    [
        "font-size: 0.8em",
        "font-size: 1.5px",
        "opacity: 0.5",
        "opacity: 0.03",
        "left: -20px",
        "transform: scale(1.5)",
    ],
)
def test_markdowns_html_shown_by_its_style_is_read(style: str) -> None:
    assert SECRET in load_document("notes.md", f'{SHOWN} <span style="{style}">{SECRET}</span>'.encode()).text


def test_a_style_sheet_not_uploaded_is_said() -> None:
    head = '<link rel="stylesheet" href="/static/css/site.css?v=3"><link rel=stylesheet media=print href=print.css>'
    doc = load_document("page.html", f"<html><head>{head}</head><body><p>{SHOWN}</p></body></html>".encode())
    assert doc.text == SHOWN and doc.notices == (
        "its style sheet 'site.css' was not uploaded with it, so its styles were not available and its text was "
        "read as written",
    )
    assert not load_document("page.html", f"<p>{SHOWN}</p>".encode()).notices
    imports = (
        "<style>@import url('/css/theme.css?v=2'); @import \"fonts.css\" screen; @import url(print.css) print;"
        "/* @import 'old.css'; */ p { color: red }</style>"
    )
    doc = load_document(
        "page.html", f"<html><head>{imports}</head><body><p>{SHOWN}</p></body></html>".encode()
    )
    assert doc.text == SHOWN and doc.notices == (
        "its style sheets 'theme.css' and 'fonts.css' were not uploaded with it, so its styles were not available "
        "and its text was read as written",
    )


# ------------------------------------------------------------------------------------------ long table rows

LONG_NOTE = (
    "The boat was rebuilt in 1952 after the storm. " + "Her hull was planked in larch on oak frames. " * 24
)
BOATS = [
    ["Boat", "Notes", "Skipper", "Built"],
    ["Marigold", "Ferry to Tresco.", "Jenna Trewhella", "1931"],
    ["Kittiwake", LONG_NOTE.strip(), "Ambrose Kittow", "1947"],
    ["Puffin", "Pleasure trips.", "Walter Dunstan", "1960"],
    ["Curlew", "Fishing.", "Amit Shah", "1972"],
]


def _boats(kind: str) -> tuple[str, bytes]:
    if kind == "csv":
        lines = [",".join(f'"{cell}"' for cell in row) for row in BOATS]
        return "boats.csv", "\n".join(lines).encode()
    if kind == "markdown":
        lines = ["| " + " | ".join(row) + " |" for row in BOATS]
        return "boats.md", "\n".join([lines[0], "|---|---|---|---|", *lines[1:]]).encode()
    cells = "".join(
        "<tr>"
        + "".join(f"<{'th' if i == 0 else 'td'}>{c}</{'th' if i == 0 else 'td'}>" for c in row)
        + "</tr>"
        for i, row in enumerate(BOATS)
    )
    return "boats.html", f"<html><body><table>{cells}</table></body></html>".encode()


@pytest.mark.parametrize("kind", ["csv", "markdown", "html"])
def test_a_row_longer_than_a_leaf_is_cut_between_cells_each_line_naming_its_row(kind: str) -> None:
    """A row of 1,200 characters was read as prose: 'Skipper: Ambrose Kittow' after the long Notes ended a
    sentence that named no boat, so 'who skippered the Kittiwake?' could not quote them together."""
    from raptor_engine.ingest.chunk import is_row_line, split_sentences
    from raptor_engine.ingest.load import ROW_PIECE_CHARS

    text = load_document(*_boats(kind)).text
    lines = [line for line in text.split("\n") if "Kittiwake" in line or "Ambrose" in line or "larch" in line]
    assert all(line.startswith("- Boat: Kittiwake; ") for line in lines) and len(lines) == 2
    assert "- Boat: Kittiwake; Skipper: Ambrose Kittow; Built: 1947." in lines
    assert any(len(line) > ROW_PIECE_CHARS and "Notes: The boat was rebuilt" in line for line in lines)
    short = "- Boat: Kittiwake; Skipper: Ambrose Kittow; Built: 1947."
    assert [text[a:b] for a, b in split_sentences(text) if "Ambrose" in text[a:b]] == [short]
    assert (
        is_row_line(short) and "- Boat: Marigold; Notes: Ferry to Tresco.; Skipper: Jenna Trewhella" in text
    )


def test_a_long_rows_lines_count_as_one_row_with_all_its_cells() -> None:
    from raptor_engine.query.tables import Row, joined_rows, row_cells, table_pick

    text = load_document(*_boats("csv")).text
    rows = joined_rows(
        [
            Row(i, "boats.csv", text.index(line), row_cells(line[2:]))
            for i, line in enumerate(text.split("\n"))
        ]
    )
    assert [row.cells["Boat"] for row in rows] == ["Marigold", "Kittiwake", "Puffin", "Curlew"]
    assert rows[1].cells["Built"] == "1947" and rows[1].cells["Notes"].startswith("The boat was rebuilt")
    assert rows[1].index == 2  # its line of three cells stands for it, not the long note's
    picked = table_pick("How many boats are there?", rows, [0], {"boats.csv"}, 3)
    assert picked is not None and picked.lead.startswith("From the documents: boats.csv has 4 rows")
    oldest = table_pick("Which boat is the oldest?", rows, [0, 2], {"boats.csv"}, 3)
    assert oldest is not None and oldest.picked[:2] == [0, 2]


def test_rows_alike_in_their_first_cell_stay_apart() -> None:
    from raptor_engine.query.tables import Row, joined_rows

    rows = [
        Row(0, "t.csv", 0, {"Team": "Rovers", "Won": "8"}),
        Row(1, "t.csv", 20, {"Team": "Rovers", "Won": "3"}),
    ]
    assert joined_rows(rows) == rows


# ------------------------------------------------------------------------------- Word's parts inside cells


def _cell_table(second_cell: str) -> str:
    """A table of a header row Word repeats on each page (Port | Tides) and one row whose second cell holds
    `second_cell`."""

    def cell(inner: str) -> str:
        return f"<w:tc>{inner}</w:tc>"

    def paragraph(text: str) -> str:
        return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"

    header = (
        f"<w:tr><w:trPr><w:tblHeader/></w:trPr>{cell(paragraph('Port'))}{cell(paragraph('Tides'))}</w:tr>"
    )
    return f"<w:tbl>{header}<w:tr>{cell(paragraph('Tresco'))}{cell(second_cell)}</w:tr></w:tbl>"


def test_an_embedded_page_in_a_table_cell_is_read_as_that_cells_text_under_its_column() -> None:
    from tests.test_unseen_files23 import PAGE, _alt_chunk_docx

    data = _alt_chunk_docx(
        "afchunk.htm", PAGE, "text/html", body=_cell_table('<w:altChunk r:id="htmlChunk"/><w:p/>')
    )
    doc = load_document("tides.docx", data)
    assert "- Port: Tresco; Tides: Tides High water at 06:40." in doc.text.split("\n\n")
    assert SECRET not in doc.text and not doc.notices


def test_a_part_in_a_cell_with_control_characters_is_read_without_them() -> None:
    from tests.test_unseen_files23 import _alt_chunk_docx

    page = "<html><body><p>High\x01 water\x1b at 06:40.</p></body></html>"
    data = _alt_chunk_docx(
        "afchunk.htm", page, "text/html", body=_cell_table('<w:altChunk r:id="htmlChunk"/><w:p/>')
    )
    assert "- Port: Tresco; Tides: High water at 06:40." in load_document("tides.docx", data).text.split(
        "\n\n"
    )


def test_a_part_in_a_cell_that_cannot_be_read_is_said_left_out_by_its_kind() -> None:
    from tests.test_unseen_files23 import _alt_chunk_docx

    rtf = r"{\rtf1\ansi High water at 06:40.}"
    body = _cell_table('<w:p><w:r><w:t>See below.</w:t></w:r></w:p><w:altChunk r:id="htmlChunk"/>')
    doc = load_document("tides.docx", _alt_chunk_docx("afchunk.rtf", rtf, "application/rtf", body=body))
    assert "- Port: Tresco; Tides: See below." in doc.text.split("\n\n") and "High water" not in doc.text
    assert doc.notices == (
        "1 embedded part left out (an RTF part): Word reads such a part in when it opens the file, so open it in "
        "Word and save it again to make that text part of the document",
    )


def test_an_ebooks_style_sheet_missing_from_it_is_said() -> None:
    from raptor_tools.book_files import epub_file, xhtml

    head = '<link rel="stylesheet" href="css/gone.css"/><link rel="stylesheet" href="https://example.org/web.css"/>'
    chapter = xhtml(f"<p>{SHOWN}</p>").replace("<title>Chapter</title>", f"<title>Chapter</title>{head}")
    doc = load_document("book.epub", epub_file([("one.xhtml", chapter)]))
    assert SHOWN in doc.text and doc.notices == (
        "its style sheets 'gone.css' and 'web.css' were not uploaded with it, so its styles were not available and "
        "its text was read as written",
    )


SPLIT_BOXES = {
    "an offset and its position in two rules": (".abs { position: absolute } .far { left: -9999px }", True),
    "a clip and its position in two rules": (".abs { position: absolute } .far { clip: rect(0 0 0 0) }", True),
    "a later rule moves it back": (".abs { position: absolute } .far { left: -9999px } .abs.far { left: 0 }", False),
    "no position at all": (".far { left: -9999px } .abs { color: red }", False),
    "its own style places it": (".far { left: -9999px }", False),
}  # fmt: skip


@pytest.mark.parametrize("how", SPLIT_BOXES)
def test_a_box_whose_parts_stand_in_different_rules_is_judged_whole(how: str) -> None:
    css, hidden = SPLIT_BOXES[how]
    own = ' style="position: absolute; left: 0"' if how == "its own style places it" else ""
    text = _read_html(f"<style>{css}</style>", f'<p class="abs far n"{own}>{SECRET}</p>')
    assert (SECRET not in text) == hidden


def test_a_frameworks_many_box_declarations_are_judged_a_rule_at_a_time() -> None:
    """Past 500 box declarations the box properties are not cascaded one by one: a framework's 2,500 widths
    would fill MAX_RULES (2,000) and the rules after them, that hide, would be lost."""
    widths = "".join(f".w{i} {{ width: {i}px }}" for i in range(2_500))
    css = f".far {{ left: -9999px }} {widths} .n {{ position: absolute; left: -9999px }} .gone {{ display: none }}"
    body = f'<p class="n">{SECRET}</p><p class="gone">{SECRET}</p><p class="w3">Kept zero.</p>'
    assert _read_html(f"<style>{css}</style>", body).split("\n\n") == [SHOWN, "Kept zero."]
