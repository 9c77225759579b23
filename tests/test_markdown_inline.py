"""Markdown's inline syntax is read as a renderer shows it: quotes, sentences and vectors see a link's text,
a figure's alt text (an image inside a sentence is left out) and a code span's code, never '[John Hale](http://a.b/c)' or '**'."""

from __future__ import annotations

import pytest

from raptor_engine.ingest.chunk import chunk_document
from raptor_engine.ingest.load import LoadLimits, load_document


def md(source: str) -> str:
    return load_document("notes.md", source.encode()).text


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("Built in 1820 by [John Hale](http://a.b/c).", "Built in 1820 by John Hale."),
        ('Built by [John Hale](<http://a.b/c d> "his page").', "Built by John Hale."),
        ("See ![the wheel](img/wheel.png) here.", "See here."),  # an image in a sentence: left out
        ("Badge [![build](b.svg)](http://ci) ok.", "Badge ok."),
        ("It stood by the river ![photo](m.png).", "It stood by the river."),
        ("![The mill in 1890](m.png)", "The mill in 1890"),  # a figure: its alt text is its line
        ("Text.\n![Fig. 1](a.png) ![Fig. 2](b.png)\nMore.", "Text.\n\nFig. 1 Fig. 2\n\nMore."),
        ("Kept by the [county archive][1].\n\n[1]: http://archive.example.org", "Kept by the county archive."),
        ("Kept by [the Archive][].\n\n[The  archive]: http://x 'Title'", "Kept by the Archive."),
        ("Kept by [Archive].\n\n[archive]: <http://x>", "Kept by Archive."),
        ("Mail <keeper@example.org> or <https://example.org/a?b=1>.", "Mail keeper@example.org or https://example.org/a?b=1."),
        ("The miller was **Thomas Reed**, who ran it _until 1911_.", "The miller was Thomas Reed, who ran it until 1911."),
        ("It was ***very*** old, __really__ *old* and ~~new~~.", "It was very old, really old and new."),
        ("Use `grind --fine` or `` a`b `` to set it.", "Use grind --fine or a`b to set it."),
        ("Fish &amp; chips &mdash; &#163;2 &#x20AC;3.", "Fish & chips \u2014 \u00a32 \u20ac3."),
        (r"Not \*emphasis\*, not \[a link\](x).", "Not *emphasis*, not [a link](x)."),
        ("Built in 1820.[^1]\n\n[^1]: From the parish register.", "Built in 1820. (note 1)\n\nNote 1: From the parish register."),
        ("A [wrapped\nlink](http://x) here.", "A wrapped\nlink here."),
        ("Line one\\\nline two", "Line one\nline two"),
    ],
)
def test_inline_syntax_reads_as_rendered(source, shown):
    assert md(source) == shown


@pytest.mark.parametrize(
    "source",
    [
        "snake_case_name and file_name_here stay.",
        "2*3*4 is twenty-four and a * b is a product.",
        "An [undefined][ref] reference stays as written.",
        "A lone [bracket and **unclosed marks stay.",
        "* a list item\n- another",
    ],
)
def test_what_is_not_inline_syntax_stays_as_written(source):
    assert md(source) == source


def test_code_fences_keep_their_syntax_and_headings_lose_theirs():
    doc = load_document("a.md", b"# About [Hale](http://x) *now*\n\n```\n[kept](as is) **raw** &amp;\n```\n\nBody.\n")
    assert doc.text == "# About Hale now\n\n```\n[kept](as is) **raw** &amp;\n```\n\nBody."
    assert doc.sections[0].heading == ("About Hale now",)


def test_a_link_split_across_chunks_never_leaves_url_syntax_in_a_chunk():
    sentences = "".join(
        f"Keeper {i} was [Name {i}](http://example.org/keepers/{i}) of the **light**. " for i in range(60)
    )
    doc = load_document("keepers.md", sentences.encode())
    chunks = chunk_document(doc, lambda text: len(text.split()), max_tokens=30)
    assert len(chunks) > 5
    for chunk in chunks:
        assert "](" not in chunk.text and "**" not in chunk.text and "http" not in chunk.text, chunk.text


@pytest.mark.parametrize(
    "hostile",
    [
        b"[" * 400_000,
        b"[a](" * 100_000,
        b"**a " * 100_000,
        b"![x](" * 80_000,
        b"[[a] " * 80_000,
        b"`" * 400_000,
        b"[a](" + b"x" * 1_000_000,  # one address with no end
        b"[a](b(c" * 100_000,
        b'<img src="' * 50_000,
        b"<a " + b"x" * 1_000_000,  # one tag with no end
    ],
)
def test_hostile_runs_of_inline_syntax_are_read_in_one_pass(hostile):
    """Unclosed openers: each match attempt is bounded, so a line of them is read in seconds, not hours
    (a quadratic scan would not finish within the test run)."""
    text = load_document("a.md", b"Prose. " + hostile, limits=LoadLimits(max_elements=10**9)).text
    assert text.startswith("Prose. ") and len(text) > 100_000


ALT = "a photo of the mill"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("mill.md", f"The mill ![{ALT}](m.png) stood by the river.".encode()),
        ("mill.html", f'<p>The mill <img src="m.png" alt="{ALT}"> stood by the river.</p>'.encode()),
        ("mill.docx", "docx"),
    ],
)
def test_an_image_inside_a_sentence_leaves_its_alt_text_out_of_it(name, data, tmp_path):
    """Markdown, HTML and Word alike: the sentence reads as written around the picture, so a quote of it
    is not 'The mill a photo of the mill stood by the river.'"""
    if data == "docx":
        data = _docx_with_picture(tmp_path, ALT)
    assert load_document(name, data).text == "The mill stood by the river."


def _docx_with_picture(tmp_path, alt: str) -> bytes:
    """A Word document whose one sentence holds a picture with `alt` as its description."""
    import io

    import docx
    from docx.oxml.ns import qn
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(png, "PNG")
    png.seek(0)
    document = docx.Document()
    paragraph = document.add_paragraph("The mill ")
    paragraph.add_run().add_picture(png)
    paragraph.add_run(" stood by the river.")
    for shape in document.element.body.iter(qn("wp:docPr")):
        shape.set("descr", alt)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


DATA_URI = "data:image/png;base64," + "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/" * 400


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        (f"The mill stood.\n\n![The mill in 1890]({DATA_URI})\n\nIt burned.", "The mill stood.\n\nThe mill in 1890\n\nIt burned."),
        (f"See the ![wheel]({DATA_URI}) here.", "See the here."),
        (f"Kept by the [county archive](https://example.org/{'a' * 3000}).", "Kept by the county archive."),
        # an HTML picture on a line of its own is a figure, as the Markdown one is: its alt text, never its address
        (f'The mill stood.\n\n<img src="{DATA_URI}" alt="mill">\n\nIt burned.', "The mill stood.\n\nmill\n\nIt burned."),
        (f"The mill stood. ![wheel][pic]\n\n[pic]: {DATA_URI}\n\nIt burned.", "The mill stood.\n\nIt burned."),
    ],
    ids=["figure", "inline image", "long link", "html img", "reference"],
)
def test_an_address_of_any_length_is_never_read_as_text(source, shown):
    """An image pasted into Markdown as a data: URI is tens of kB of base64: it is the address, not
    anything to store, embed or quote, however long."""
    assert len(source) > 20_000 or "a" * 3000 in source
    assert md(source) == shown
