"""The engine's schema, as named migrations (see `migrations.py`): the store's tables and the summary cache.

Never edit a step that has shipped: databases already ran it. Change the schema by appending a step.
"""

from __future__ import annotations

import sqlite_utils

from .migrations import Migrations

store_migrations = Migrations("store")
summary_cache_migrations = Migrations("summary_cache")

TEXT_INDEX = "nodes_fts"
TEXT_INDEX_TABLE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {TEXT_INDEX} USING fts5("
    "text, content='nodes', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')"
)
TEXT_INDEX_TRIGGER_NAMES = ("nodes_fts_insert", "nodes_fts_delete", "nodes_fts_update")
# The text index follows every insert, delete (cascades included) and text change of a node.
TEXT_INDEX_TRIGGERS = (
    f"""CREATE TRIGGER IF NOT EXISTS nodes_fts_insert AFTER INSERT ON nodes BEGIN
        INSERT INTO {TEXT_INDEX}(rowid, text) VALUES (new.id, new.text); END""",
    f"""CREATE TRIGGER IF NOT EXISTS nodes_fts_delete AFTER DELETE ON nodes BEGIN
        INSERT INTO {TEXT_INDEX}({TEXT_INDEX}, rowid, text) VALUES ('delete', old.id, old.text); END""",
    f"""CREATE TRIGGER IF NOT EXISTS nodes_fts_update AFTER UPDATE OF text ON nodes BEGIN
        INSERT INTO {TEXT_INDEX}({TEXT_INDEX}, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO {TEXT_INDEX}(rowid, text) VALUES (new.id, new.text); END""",
)


@store_migrations
def m001_initial(db: sqlite_utils.Database) -> None:
    """The tables as the first releases created them (IF NOT EXISTS: a database made then is left as is)."""
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS kbs (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,
            version INTEGER NOT NULL DEFAULT 0)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS documents (
            id INTEGER PRIMARY KEY, kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
            name TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL, format TEXT NOT NULL,
            added_by TEXT NOT NULL DEFAULT '', added_at TEXT NOT NULL,
            chunks INTEGER NOT NULL, layers INTEGER NOT NULL, nodes INTEGER NOT NULL,
            tokens INTEGER NOT NULL, UNIQUE (kb_id, sha256))"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS nodes (
            id INTEGER PRIMARY KEY, kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
            doc_id INTEGER REFERENCES documents(id) ON DELETE CASCADE,
            layer INTEGER NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL, tokens INTEGER NOT NULL,
            embedding BLOB NOT NULL, leaf_ids TEXT NOT NULL, leaf_count INTEGER NOT NULL,
            start INTEGER, "end" INTEGER, page INTEGER, heading TEXT NOT NULL DEFAULT '[]',
            spans TEXT NOT NULL DEFAULT '[]')"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS nodes_kb ON nodes(kb_id, layer)")
    db.execute("CREATE INDEX IF NOT EXISTS nodes_doc ON nodes(doc_id)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS edges (
            parent_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            child_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            kb_id INTEGER NOT NULL, PRIMARY KEY (parent_id, child_id))"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS edges_child ON edges(child_id)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS builds (
            id INTEGER PRIMARY KEY, kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
            document TEXT, action TEXT NOT NULL, status TEXT NOT NULL, started_at TEXT NOT NULL,
            finished_at TEXT NOT NULL, seconds REAL NOT NULL, embedder TEXT NOT NULL,
            summarizer TEXT NOT NULL, layers TEXT NOT NULL DEFAULT '[]', notes TEXT NOT NULL DEFAULT '[]',
            prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
            error TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS questions (
            id INTEGER PRIMARY KEY, kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
            asked_at TEXT NOT NULL, asked_by TEXT NOT NULL DEFAULT '', mode TEXT NOT NULL,
            backend TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
            context_tokens INTEGER NOT NULL, nodes INTEGER NOT NULL)"""
    )
    db.execute("INSERT OR IGNORE INTO meta VALUES ('next_node_id', '1')")


@store_migrations
def m002_drop_schema_version(db: sqlite_utils.Database) -> None:
    """The `_migrations` table now says which schema a database has; the old version number goes."""
    db.execute("DELETE FROM meta WHERE key = 'schema_version'")


@store_migrations
def m003_page_marks(db: sqlite_utils.Database) -> None:
    """Where each page begins in a leaf's text, so a citation names the quoted sentence's page."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(nodes)").fetchall()}
    if "page_marks" not in columns:
        db.execute("ALTER TABLE nodes ADD COLUMN page_marks TEXT NOT NULL DEFAULT '[]'")


@store_migrations
def m004_sentence_spans(db: sqlite_utils.Database) -> None:
    """Each node's sentences (spans, token counts, key fingerprints), so retrieval need not split them.

    NULL for nodes stored before this step: retrieval splits those when it meets them.
    """
    columns = {row[1] for row in db.execute("PRAGMA table_info(nodes)").fetchall()}
    if "sentences" not in columns:
        db.execute("ALTER TABLE nodes ADD COLUMN sentences TEXT")


@store_migrations
def m005_text_index(db: sqlite_utils.Database) -> None:
    """A full-text (FTS5, BM25) index over every node's text, so a question naming a rare term (a code,
    a part number, a surname) finds the nodes that hold it. Triggers keep it in the nodes' own
    transactions; it is derived, so `raptor doctor` rebuilds it (`Store.rebuild_text_index`)."""
    db.execute(TEXT_INDEX_TABLE)
    for statement in TEXT_INDEX_TRIGGERS:
        db.execute(statement)
    db.execute(f"INSERT INTO {TEXT_INDEX}({TEXT_INDEX}) VALUES ('rebuild')")


@summary_cache_migrations
def m001_summary_cache(db: sqlite_utils.Database) -> None:
    """LLM summaries by the sha256 of everything that shapes them (see `llm_cache.summary_cache_key`)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS summary_cache (
            "key" TEXT PRIMARY KEY, model TEXT, text TEXT, prompt_tokens INTEGER,
            completion_tokens INTEGER, created_at REAL)"""
    )
