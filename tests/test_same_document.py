"""The same document uploaded again under other bytes (a BOM, CRLF line endings, Windows-1252, trailing
spaces, another Unicode normal form, a .md saved as .txt) is recognised by its text's fingerprint and
changes nothing; a text that differs in any word, or in case, is a new document."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import sqlite3
import threading
import unicodedata
from pathlib import Path

import pytest

from raptor_engine import Engine
from raptor_engine.cli import _print_ingest
from raptor_engine.ingest.load import document_fingerprint, load_document, text_fingerprint
from raptor_tools.fingerprint import fingerprint
from tests.sample_texts import BEEKEEPING
from tests.unhurried import unhurried_settings

TEXT = (
    "# The mill at Ebbworth\n"
    "\n"
    "The café by the weir opened in 1902; its owner’s bread was famous – even in the city.\n"
    "The sluice gate rotted in 1911 and the wheel stopped for good.\n"
)
VARIANTS = {
    "a UTF-8 BOM": ("mill.md", b"\xef\xbb\xbf" + TEXT.encode()),
    "CRLF line endings": ("mill.md", TEXT.replace("\n", "\r\n").encode()),
    "Windows-1252": ("mill.md", TEXT.encode("cp1252")),
    "trailing spaces": ("mill.md", TEXT.replace("\n", "  \t\n").encode()),
    "decomposed accents (NFD)": ("mill.md", unicodedata.normalize("NFD", TEXT).encode()),
    "a .md re-saved as .txt by Notepad": ("mill.txt", TEXT.replace("\n", "\r\n").encode("cp1252")),
    "all at once, renamed": ("Mill (copy).txt", b"\xef\xbb\xbf" + TEXT.replace("\n", " \r\n").encode()),
}
OLD_DB = Path(__file__).parent / "data" / "pre_migrations.db"  # made by tests/data/make_pre_migrations_db.py
OLD_TEXT = BEEKEEPING + "\n\n" + (  # its one document's text, as that script wrote it
    "The harbour of Saltmere was built in 1820. Fishermen landed herring there every autumn. "
    "A lighthouse on the northern rock guided the boats home. In 1887 Mara Quill kept the light. "
    "She wrote a logbook of every storm. The logbook is now in the town museum.\n\n"
    "The railway reached Saltmere in 1902. Tourists came in summer to walk the cliffs. "
    "The herring left the bay in the 1950s and the fleet shrank. Today the harbour holds yachts."
)


@pytest.fixture(scope="module")
def stored(tmp_path_factory, embedder):
    """An engine holding mill.md, made once: every refusal below must leave it as it is."""
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("same") / "data"), embedder=embedder)
    asyncio.run(engine.ingest("kb", "mill.md", TEXT.encode()))
    yield engine
    engine.close()


@pytest.mark.parametrize("variant", VARIANTS, ids=list(VARIANTS))
async def test_the_same_text_under_other_bytes_is_the_stored_document(stored, variant, capsys):
    name, data = VARIANTS[variant]
    assert data != TEXT.encode()
    before = fingerprint(stored)
    stages: list[str] = []
    result = await stored.ingest("kb", name, data, progress=lambda event: stages.append(event.stage))
    assert result.status == "duplicate"
    assert result.document.name == "mill.md"
    assert "chunk" not in stages and "embed" not in stages  # recognised once read, before any build
    assert fingerprint(stored) == before  # nothing stored changed
    assert [d.name for d in stored.documents("kb")] == ["mill.md"]
    _print_ingest(name, result)
    shown = "" if name == "mill.md" else " as mill.md"
    assert capsys.readouterr().out == f"{name}: already in the knowledge base{shown} (same content), nothing to do.\n"


@pytest.mark.parametrize(
    "changed",
    [
        TEXT.replace("famous", "known"),  # one word
        TEXT.replace("famous", "Famous"),  # case is wording
        TEXT.replace("1911", "1912"),
    ],
    ids=["one word", "case", "a number"],
)
async def test_a_text_that_differs_in_a_word_is_a_new_document(tmp_path, embedder, changed):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "mill.md", TEXT.encode())
        result = await engine.ingest("kb", "mill v2.md", changed.replace("\n", "\r\n").encode())
        assert result.status == "added"
        assert [d.name for d in engine.documents("kb")] == ["mill.md", "mill v2.md"]
    finally:
        engine.close()


def test_the_fingerprint_ignores_only_what_saving_again_changes():
    base = text_fingerprint("Kestrels hover.\nThey eat voles.")
    assert text_fingerprint("\ufeffKestrels hover.  \r\nThey eat voles.\r\n") == base
    assert text_fingerprint("Kestrels hover.\rThey eat voles.\t") == base
    assert text_fingerprint("kestrels hover.\nThey eat voles.") != base
    assert text_fingerprint("Kestrels hover. They eat voles.") != base  # a line break is not a space
    assert text_fingerprint("Kestrels  hover.\nThey eat voles.") != base  # inside a line, spacing counts
    assert text_fingerprint("Caf\u00e9") == text_fingerprint("Cafe\u0301")


async def test_a_document_from_before_the_fingerprint_is_still_found_by_its_bytes(tmp_path, embedder):
    """An old store's documents get the column with NULL (unknown): their text cannot be rebuilt exactly
    from their leaves. Their identical bytes are still recognised; new documents get a fingerprint."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(OLD_DB, data / "raptor.db")
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        conn = sqlite3.connect(data / "raptor.db")
        old = conn.execute("SELECT name, text_sha256 FROM documents").fetchall()
        assert old and {fp for _, fp in old} == {None}  # unknown: not guessed from the leaves
        kb = conn.execute("SELECT name FROM kbs").fetchone()[0]
        doc = engine.documents(kb)[0]
        old_bytes = OLD_TEXT.encode()
        assert hashlib.sha256(old_bytes).hexdigest() == doc.sha256
        result = await engine.ingest(kb, "copy of it.md", old_bytes)
        assert (result.status, result.document.name) == ("duplicate", doc.name)
        await engine.ingest(kb, "mill.md", TEXT.encode())
        new = conn.execute("SELECT text_sha256 FROM documents WHERE name = 'mill.md'").fetchone()[0]
        assert new == text_fingerprint(TEXT)
        again = await engine.ingest(kb, "mill.txt", TEXT.replace("\n", "\r\n").encode())
        assert (again.status, again.document.name) == ("duplicate", "mill.md")
        conn.close()
    finally:
        engine.close()


async def test_a_build_that_did_not_check_once_read_is_refused_before_its_commit(stored, monkeypatch):
    """A Dask worker's build (no `loaded` check) or another process's commit meanwhile: the text is
    compared again at the commit, so the copy is still not stored."""
    monkeypatch.setattr(stored, "_refuse_stored_text", lambda kb_id, text_sha, words_sha="": None)
    before = fingerprint(stored)
    stages: list[str] = []
    result = await stored.ingest(
        "kb", "mill.txt", TEXT.replace("\n", "\r\n").encode(), progress=lambda event: stages.append(event.stage)
    )
    assert "embed" in stages  # built this time
    assert (result.status, result.document.name) == ("duplicate", "mill.md")
    assert fingerprint(stored) == before


MARKDOWN = (
    "# Ebbworth weir\n"
    "\n"
    "The **sluice** was rebuilt in *1911* by [Hale & Sons](https://example.org/hale).\n"
    "\n"
    "| Year | Keeper |\n"
    "|------|--------|\n"
    "| 1887 | Ann Hale |\n"
    "\n"
    "- the `wheel` stopped in 1923\n"
)


@pytest.mark.parametrize(("first", "second"), [("weir.md", "weir.txt"), ("weir.txt", "weir.md")])
async def test_a_txt_holding_markdown_and_the_same_md_are_one_document(tmp_path, embedder, first, second):
    """Markdown syntax is rendered under a .md name and kept as typed under .txt: the fingerprint reads
    a .txt as Markdown, so either upload after the other is the same document, and nothing changes."""
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", first, MARKDOWN.encode())
        before = fingerprint(engine)
        again = await engine.ingest("kb", second, MARKDOWN.replace("\n", "\r\n").encode("cp1252"))
        assert (again.status, again.document.name) == ("duplicate", first)
        assert fingerprint(engine) == before
        changed = await engine.ingest("kb", second, MARKDOWN.replace("1923", "1924").encode())
        assert changed.status != "duplicate"  # one figure differs: a new document
    finally:
        engine.close()


def test_a_txt_fingerprint_reads_markdown_but_keeps_plain_text_as_it_is():
    plain = load_document("notes.txt", b"Kestrels hover.\nThey eat voles, 3 * 4 of them.")
    assert document_fingerprint(plain) == text_fingerprint(plain.text)
    as_txt = load_document("weir.txt", MARKDOWN.encode())
    assert as_txt.text.startswith("# Ebbworth weir\n\nThe **sluice**")  # the stored text is as typed
    assert document_fingerprint(as_txt) == document_fingerprint(load_document("weir.md", MARKDOWN.encode()))


async def test_a_duplicate_whose_file_name_holds_a_line_break_is_reported_on_one_line(stored, capsys):
    """The CLI names the file as it would be stored: its own name's line break and escape would split
    the one-line report, or colour the terminal."""
    name = "mill\n\x1b[31m.md"
    result = await stored.ingest("kb", name, TEXT.encode())
    _print_ingest(name, result)
    assert capsys.readouterr().out == "mill [31m.md: already in the knowledge base as mill.md (same content), nothing to do.\n"


async def test_a_first_document_is_fingerprinted_beside_its_clustering_and_still_found_again(
    tmp_path, embedder, monkeypatch
):
    """A knowledge base without documents has nothing to check the upload's text against, so its fingerprint
    is computed on a thread once the leaves are embedded (beside the leaf layer's clustering) rather than
    before chunking: it is stored all the same, and the same text under other bytes is then refused."""
    from raptor_engine.tree import docbuild

    events: list[str] = []
    real_fingerprint = docbuild.document_fingerprint

    def watched_fingerprint(doc):
        on_thread = threading.current_thread() is not threading.main_thread()
        events.append("fingerprint on a thread" if on_thread else "fingerprint inline")
        return real_fingerprint(doc)

    monkeypatch.setattr(docbuild, "document_fingerprint", watched_fingerprint)
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    first = await engine.ingest("kb", "bees.txt", BEEKEEPING.encode(), progress=lambda e: events.append(e.stage))
    assert first.status == "added"
    assert events.index("fingerprint on a thread") > events.index("embed")  # after the leaves, not before chunking
    kb_id = engine.store.kb_id("kb")
    stored = engine.store.db.execute("SELECT text_sha256 FROM documents WHERE kb_id = ?", [kb_id]).fetchone()[0]
    assert stored == real_fingerprint(load_document("bees.txt", BEEKEEPING.encode()))
    events.clear()
    resaved = BEEKEEPING.replace("\n", "\r\n").encode()
    again = await engine.ingest("kb", "bees (copy).txt", resaved, progress=lambda e: events.append(e.stage))
    assert again.status == "duplicate" and again.document.id == first.document.id
    assert "fingerprint inline" in events and "embed" not in events  # checked once read, before any embedding
    engine.close()
