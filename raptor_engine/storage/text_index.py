"""The full-text (FTS5, BM25) index over every node's text: a question naming a rare term (a code like
E-4012, a part number, a surname) finds the nodes that hold it, beside the hnswlib ranking.

It is an external-content FTS5 table over `nodes`, kept by the store itself in the transaction that
writes or deletes the nodes, not by triggers: every store is opened with `trusted_schema=OFF` (an
imported file's schema is not trusted), and under it SQLite refuses a trigger's use of a virtual table.
It is derived: `raptor doctor` checks it against the nodes and rebuilds it.
"""

from __future__ import annotations

import sqlite3
from typing import Any

TEXT_INDEX = "nodes_fts"
TEXT_INDEX_TABLE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {TEXT_INDEX} USING fts5("
    "text, content='nodes', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')"
)


def index_nodes(db: Any, where: str, params: list[Any]) -> None:
    """Add the text of the nodes matching `where` (just written) to the index."""
    db.execute(f"INSERT INTO {TEXT_INDEX}(rowid, text) SELECT id, text FROM nodes WHERE {where}", params)


def unindex_nodes(db: Any, where: str, params: list[Any]) -> None:
    """Take the nodes matching `where` out of the index; call it before deleting them (FTS5 needs the
    text that was indexed to remove it)."""
    db.execute(
        f"INSERT INTO {TEXT_INDEX}({TEXT_INDEX}, rowid, text) SELECT 'delete', id, text FROM nodes WHERE {where}",
        params,
    )


def index_node_ids(db: Any, ids: list[int]) -> None:
    """Add the nodes with these ids to the index."""
    if ids:
        index_nodes(db, "id IN (SELECT value FROM json_each(?))", [_json_ids(ids)])


def _json_ids(ids: list[int]) -> str:
    return "[" + ",".join(str(int(i)) for i in ids) + "]"


def create_text_index(db: Any) -> None:
    """Create the index (if missing) and fill it from the nodes."""
    db.execute(TEXT_INDEX_TABLE)
    db.execute(f"INSERT INTO {TEXT_INDEX}({TEXT_INDEX}) VALUES ('rebuild')")


def text_index_problems(conn: Any) -> list[str]:
    """What is wrong with the index: missing, or out of step with the nodes."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master").fetchall()}
    if TEXT_INDEX not in names:
        return ["the full-text index is missing"]
    opened = not conn.in_transaction  # the check is an INSERT: Python's sqlite3 begins a transaction for it
    try:
        conn.execute(f"INSERT INTO {TEXT_INDEX}({TEXT_INDEX}, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        return [f"the full-text index is out of step with the nodes ({exc})"]
    finally:
        if opened and conn.in_transaction:
            conn.execute("ROLLBACK")  # it wrote nothing
    return []


def rebuild_text_index(db: Any) -> None:
    """Recreate the index from the nodes (SQLite's text is the truth)."""
    db.execute(f"DROP TABLE IF EXISTS {TEXT_INDEX}")
    create_text_index(db)
