"""A document an earlier loader stored matches its upload now: its text fingerprint was that loader's
(fenced code written otherwise) or is missing (before m008), so m009 gives it the fingerprint of its
words, read from its leaves (`load.words_fingerprint`)."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3

from raptor_engine import Engine
from raptor_engine.ingest.load import load_document, words_fingerprint
from raptor_engine.storage.store_migrations import m009_document_words_fingerprint
from tests.test_same_document import OLD_DB, OLD_TEXT
from tests.unhurried import unhurried_settings

README = (
    "# Building the lamp driver\n\n1. Fetch the source.\n\n10. Build it.\n\n    ```bash\n    make install\n"
    "    ```\n\n    Then restart the lamp.\n\nThe driver turns the lamp in forty steps. " * 3
)


async def test_a_store_from_before_the_fingerprint_finds_the_document_under_other_bytes(tmp_path, embedder):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(OLD_DB, data / "raptor.db")
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        with sqlite3.connect(data / "raptor.db") as conn:
            kb = conn.execute("SELECT name FROM kbs").fetchone()[0]
        doc = engine.documents(kb)[0]
        resaved = OLD_TEXT.replace("\n", "\r\n").encode("utf-8")  # other bytes: not found by its sha256
        result = await engine.ingest(kb, "copy of it.md", resaved)
        assert (result.status, result.document.name) == ("duplicate", doc.name)
    finally:
        engine.close()


def test_an_old_loaders_fingerprint_is_matched_by_the_words_of_the_leaves(tmp_path, embedder):
    """A store written the old way: a fenced document whose `text_sha256` the old loader computed (here a
    value the new loader does not give) and no words' fingerprint; m009 fills it from the leaves, and the
    upload re-saved (CRLF) is then the stored document, not a second copy."""
    data = tmp_path / "data"
    reset = "UPDATE documents SET text_sha256 = 'fingerprint of the old loader', words_sha256 = NULL"
    stored = migrated_words(data, embedder, ("driver.md", README.encode()), reset, m009_document_words_fingerprint)
    assert stored == words_fingerprint(load_document("driver.md", README.encode()).text)
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        again = asyncio.run(engine.ingest("kb", "driver (copy).md", README.replace("\n", "\r\n").encode()))
        assert (again.status, again.document.name) == ("duplicate", "driver.md")
        changed = asyncio.run(engine.ingest("kb", "other.md", README.replace("forty", "fifty").encode()))
        assert changed.status != "duplicate"
    finally:
        engine.close()


def test_new_documents_are_matched_by_their_words_not_their_line_breaks(tmp_path, embedder):
    """A paragraph wrapped otherwise is the same words (files20: the words' fingerprint is kept for every
    document, so the same document under another kind is found); a word changed is another document."""
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        asyncio.run(engine.ingest("kb", "a.md", b"Kestrels hover.\nThey eat voles.\n"))
        same = asyncio.run(engine.ingest("kb", "b.md", b"Kestrels hover. They eat voles.\n"))
        assert (same.status, same.document.name) == ("duplicate", "a.md")
        other = asyncio.run(engine.ingest("kb", "c.md", b"Kestrels hover. They eat mice.\n"))
        assert other.status != "duplicate"
    finally:
        engine.close()


def migrated_words(data, embedder, upload: tuple[str, bytes], reset: str, migration) -> str:
    """The words' fingerprint a store holding `upload` keeps once `reset` (SQL) made it an older store's
    and `migration` ran on it again."""
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        asyncio.run(engine.ingest("kb", *upload))
    finally:
        engine.close()
    conn = sqlite3.connect(data / "raptor.db")
    try:
        conn.execute(reset)
        conn.commit()
        migration(_Db(conn))
        conn.commit()
        return conn.execute("SELECT words_sha256 FROM documents").fetchone()[0]
    finally:
        conn.close()


class _Db:
    """The one method of sqlite_utils.Database the migration uses, over a plain connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: list[object] | None = None) -> sqlite3.Cursor:
        return self.conn.execute(sql, params or [])
