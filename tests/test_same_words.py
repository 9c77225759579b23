"""The same document uploaded under another kind (.md, then .docx, .html, .odt, .txt or .pdf) reads to the
same words and other markup: the duplicate check matches its words alone (`load.words_fingerprint`), so
it is "already in the knowledge base", not stored twice; a word, a figure or a letter's case changed is a
new document. Old stores get the fingerprint from their leaves (migration m011)."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine import Engine
from raptor_engine.ingest.load import document_words_fingerprint, load_document, words_fingerprint
from raptor_engine.storage.store_migrations import m011_document_words_alone
from raptor_tools.book_files import odt_file
from raptor_tools.fingerprint import fingerprint
from raptor_tools.robustness import minimal_pdf, small_docx
from tests.test_old_fingerprints import migrated_words
from tests.unhurried import unhurried_settings

TITLE = "The Keeper's Cat"
PARAGRAPHS = [
    "The cat at Skerrow Point was called Pepper, and she slept on the lamp-room stairs.",
    "In the winter of 1887 the keeper, Ambrose Kittow, fed her on herring. See the log.",
    "She caught mice.",
    "She hated the fog horn.",
    "Pepper lived to be nineteen, and was buried by the oil store.",
]
MARKDOWN = (
    f"# {TITLE}\n\nThe cat at **Skerrow Point** was called *Pepper*, and she slept on the lamp-room stairs.\n\n"
    "## Winter\n\nIn the winter of 1887 the keeper, Ambrose Kittow, fed her on herring. "
    "See [the log](https://example.org/log).\n\n1. She caught mice.\n2. She hated the fog horn.\n\n"
    "Pepper lived to be nineteen, and was buried by the oil store.\n"
)
HEADED = [TITLE, PARAGRAPHS[0], "Winter", *PARAGRAPHS[1:]]


def _html(paragraphs: list[str]) -> bytes:
    title, first, winter, *rest = paragraphs
    items = "".join(f"<li>{p}</li>" for p in rest[1:3])
    return (
        f"<html><head><title>{title}</title></head><body><h1>{title.replace(chr(39), '&rsquo;')}</h1><p>{first}</p>"
        f"<h2>{winter}</h2><p>{rest[0]}</p><ol>{items}</ol><p>{rest[3]}</p></body></html>"
    ).encode()


def _odt(paragraphs: list[str]) -> bytes:
    title, *rest = paragraphs
    body = f'<text:h text:outline-level="1">{title}</text:h>' + "".join(f"<text:p>{p}</text:p>" for p in rest)
    return odt_file(body)


KINDS = {
    "story.docx": lambda paragraphs: small_docx(paragraphs),
    "story.html": _html,
    "story.odt": _odt,
    "story.txt": lambda paragraphs: "\r\n\r\n".join(paragraphs).encode("cp1252"),
    "story.pdf": lambda paragraphs: minimal_pdf(["\n".join(paragraphs[:3]), "\n".join(paragraphs[3:])]),
}


@pytest.mark.parametrize("name", KINDS)
def test_the_same_document_under_another_kind_has_the_same_words(name: str) -> None:
    doc = load_document(name, KINDS[name](HEADED))
    assert document_words_fingerprint(doc) == document_words_fingerprint(load_document("story.md", MARKDOWN.encode()))


@pytest.mark.parametrize(
    "changed",
    [
        lambda p: [p[0].replace("Cat", "cat"), *p[1:]],  # a letter's case
        lambda p: [*p[:2], "Spring", *p[3:]],  # one word
        lambda p: [*p[:3], p[3].replace("1887", "1888"), *p[4:]],  # a figure
        lambda p: [*p[:-1], p[-1] + " The end."],  # words added
        lambda p: [p[0], p[2], p[1], *p[3:]],  # the same words in another order
    ],
    ids=["case", "word", "figure", "added", "order"],
)
def test_a_near_copy_has_other_words(changed) -> None:
    near = load_document("near.docx", small_docx(changed(HEADED)))
    assert document_words_fingerprint(near) != document_words_fingerprint(load_document("story.md", MARKDOWN.encode()))


def test_markup_is_no_word_but_the_words_it_holds_are() -> None:
    base = words_fingerprint("Fetch the source.\nBuild it: make install")
    assert words_fingerprint("1. Fetch the source.\n2) Build it:\n\n```bash\nmake install\n```") == base
    assert words_fingerprint("> Fetch the **source**.\n> Build it: `make install`") == base
    assert words_fingerprint("Fetch the source. Build it make install") == base  # punctuation and spacing
    assert words_fingerprint("Fetch the source.\nBuild it: make uninstall") != base
    assert words_fingerprint("Fetch the sour ce.\nBuild it: make install") != base  # a word split is two words
    assert words_fingerprint("🐝 🐝 🌼 ***") == words_fingerprint("⚓ ---") == ""  # no words: nothing to match by


@pytest.fixture(scope="module")
def stored(tmp_path_factory, embedder):
    """An engine holding the story as Markdown, made once: each copy below must leave it unchanged."""
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("words") / "data"), embedder=embedder)
    assert asyncio.run(engine.ingest("kb", "story.md", MARKDOWN.encode())).status == "added"
    yield engine
    engine.close()


@pytest.mark.parametrize("name", KINDS)
async def test_the_same_document_under_another_kind_is_already_stored(stored, name: str) -> None:
    before = fingerprint(stored)
    stages: list[str] = []
    result = await stored.ingest("kb", name, KINDS[name](HEADED), progress=lambda event: stages.append(event.stage))
    assert (result.status, result.document.name) == ("duplicate", "story.md")
    assert "embed" not in stages  # found once read, before any build
    assert fingerprint(stored) == before
    assert [d.name for d in stored.documents("kb")] == ["story.md"]


async def test_a_near_copy_under_another_kind_is_stored(tmp_path, embedder) -> None:
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "story.md", MARKDOWN.encode())
        near = [*HEADED[:-1], HEADED[-1].replace("nineteen", "twenty")]
        result = await engine.ingest("kb", "story v2.docx", small_docx(near))
        assert result.status == "added"
        assert [d.name for d in engine.documents("kb")] == ["story.md", "story v2.docx"]
    finally:
        engine.close()


def test_m011_gives_every_document_its_words_from_its_leaves(tmp_path, embedder) -> None:
    """A store from before m011 (words NULL, or in the earlier fingerprint): m011 reads each document's
    words from its leaves, a .txt's as Markdown renders them, and the .docx of one is then a copy."""
    data = tmp_path / "data"
    reset = "UPDATE documents SET words_sha256 = NULL"
    stored = migrated_words(data, embedder, ("story.txt", MARKDOWN.encode()), reset, m011_document_words_alone)
    assert stored == document_words_fingerprint(load_document("story.md", MARKDOWN.encode()))
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        again = asyncio.run(engine.ingest("kb", "story.docx", small_docx(HEADED)))
        assert (again.status, again.document.name) == ("duplicate", "story.txt")
    finally:
        engine.close()
