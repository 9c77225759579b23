"""Fenced code inside list items (CommonMark 5.2): a fence indented past the margin but at most three
columns past its item's text opens a block, in the loader and in `chunk.code_lines` alike."""

from __future__ import annotations

import pytest

from raptor_engine.ingest.chunk import code_lines, split_sentences
from raptor_engine.ingest.fences import FenceReader
from raptor_engine.ingest.load import load_document

# (source, the code lines the loaded text must hold): items whose text starts at column 2, 3, 4 and 5
ITEMS = [
    ("- Fetch it.\n\n    ```bash\n    git clone x\n    ```\n\nAfter the list.\n", ["git clone x"]),
    ("1. Build it.\n\n   ```bash\n   # install the driver\n   make install\n   ```\n\nDone.\n",
     ["# install the driver", "make install"]),
    ("10. Build it.\n\n    ```bash\n    # install the driver\n    make install\n    ```\n\n    Then restart it.\n",
     ["# install the driver", "make install"]),
    ("1.   Wide item.\n\n        ~~~\n        keep = True\n        ~~~\n\nProse.\n", ["keep = True"]),
    ("- outer\n  - inner\n\n      ```\n      nested()\n      ```\n", ["nested()"]),
]  # fmt: skip


def _code(text: str) -> list[str]:
    return [text[a:b].strip() for a, b in code_lines(text)]


@pytest.mark.parametrize("fmt", ["md", "txt"])
@pytest.mark.parametrize(("source", "code"), ITEMS)
def test_a_fence_inside_a_list_item_is_code_to_the_loader_and_the_chunker(fmt: str, source: str, code: list[str]) -> None:
    text = load_document(f"steps.{fmt}", source.encode()).text
    found = _code(text)
    fences = [line for line in found if line.startswith(("```", "~~~"))]
    assert [line for line in found if line not in fences] == code, text
    assert len(fences) == 2, text  # its opening and closing fences
    for line in code:  # each line of code a sentence of its own, never joined to the prose
        assert any(text[a:b].strip() == line for a, b in split_sentences(text)), text


def test_a_bash_comment_in_a_list_items_block_is_no_heading() -> None:
    doc = load_document("steps.md", ITEMS[2][0].encode())
    assert all(section.heading == () for section in doc.sections)
    assert "# install the driver" in doc.text


def test_code_lines_reads_a_list_items_fence_in_raw_text() -> None:
    text = "10. Build it.\n\n    ```bash\n    make install\n    ```\nThe end."
    assert _code(text) == ["```bash", "make install", "```"]


def test_a_fence_four_columns_past_its_item_is_no_fence() -> None:
    """Indented code inside the item (four past its text), as CommonMark reads it: not a fence."""
    reader = FenceReader()
    roles = [reader.read(line) for line in ["- item", "", "      ```", "      x", "      ```"]]
    assert "open" not in roles


def test_an_item_that_ends_ends_the_block_inside_it() -> None:
    """A line left of the item's text ends the item and the block in it; the loader closes the block there."""
    text = load_document("steps.md", b"- item\n\n    ```\n    x = 1\nOut of the list.\n").text
    assert text.split("\n") == ["- item", "", "```", "    x = 1", "```", "", "Out of the list."]
    assert _code(text)[-1] == "```" and "Out of the list." not in _code(text)


def test_a_fence_at_the_margin_and_a_wrapped_indented_marker_read_as_before() -> None:
    text = load_document("a.md", b"Intro.\n\n```\nx\n```\n\nA paragraph\n     ```\nnext\n").text
    assert "A paragraph ```" in text
    assert _code(text) == ["```", "x", "```"]
