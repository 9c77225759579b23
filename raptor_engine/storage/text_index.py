"""The full-text (FTS5, BM25) index over every node's text: a question naming a rare term (a code like
E-4012, a part number, a surname) finds the nodes that hold it, beside the hnswlib ranking.

It is an external-content FTS5 table over `nodes`, kept by the store itself in the transaction that
writes or deletes the nodes, not by triggers: every store is opened with `trusted_schema=OFF` (an
imported file's schema is not trusted), and under it SQLite refuses a trigger's use of a virtual table.
It is derived: `raptor doctor` checks it against the nodes and rebuilds it.

FTS5's tokenizer reads an unbroken run of Chinese or Japanese letters as one token (a whole clause),
and a Korean word with its particle ("등대는") or a number or name written against those letters
("1887年") as one, so a question in those scripts has its terms (`sentences.units`: character bigrams,
numbers, Latin words) matched as substrings of the nodes' text instead (`substring_search`), with FTS5's
BM25 formula.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

BM25_K1, BM25_B = 1.2, 0.75  # FTS5's bm25() defaults
# A node holding only terms that most nodes hold (bigrams such as 灯塔 in a text about lighthouses, whose
# IDF is FTS5's floor) is no full-text hit: ranked among the hits, it would outrank the vector search's own.
MIN_SCORE = 1e-3
MAX_PHRASES = 24  # a long question's terms beyond these add little, and each is looked for in every node

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


def substring_search(db: Any, kb_id: int, phrases: list[str]) -> dict[int, float]:
    """BM25 of the knowledge base's nodes holding any of the phrases as a substring (ignoring ASCII case):
    node id -> score, larger for a better match, as FTS5's bm25() computes it (IDF from the nodes holding
    each phrase, a node's length in tokens). It reads the knowledge base's text once, without an index:
    about 10 ms per thousand nodes."""
    phrases = list(dict.fromkeys(phrases))[:MAX_PHRASES]
    if not phrases:
        return {}
    total, average = db.execute(
        "SELECT count(*), avg(tokens) FROM nodes WHERE kb_id = ?", [kb_id]
    ).fetchone()
    if not total:
        return {}
    phrases = [p.lower() for p in phrases]
    cased = [any("a" <= ch <= "z" for ch in p) for p in phrases]  # LIKE ignores ASCII case; instr is faster
    holding = " OR ".join("text LIKE ? ESCAPE '\\'" if c else "instr(text, ?) > 0" for c in cased)
    rows = db.execute(
        f"SELECT id, tokens, text FROM nodes WHERE kb_id = ? AND ({holding})",
        [kb_id, *(f"%{_like_escaped(p)}%" if c else p for p, c in zip(phrases, cased, strict=True))],
    ).fetchall()
    counts = [
        [(text.lower() if c else text).count(p) for p, c in zip(phrases, cased, strict=True)] for _, _, text in rows
    ]
    idf = [_idf(total, sum(1 for c in counts if c[j])) for j in range(len(phrases))]
    scores: dict[int, float] = {}
    for (node_id, tokens, _), found in zip(rows, counts, strict=True):
        norm = 1.0 - BM25_B + BM25_B * (tokens or 1) / (average or 1.0)
        score = sum(idf[j] * n * (BM25_K1 + 1) / (n + BM25_K1 * norm) for j, n in enumerate(found) if n)
        if score > MIN_SCORE:
            scores[int(node_id)] = score
    return scores


def _like_escaped(phrase: str) -> str:
    """`phrase` with LIKE's wildcards taken literally."""
    return phrase.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _idf(total: int, holding: int) -> float:
    """FTS5's IDF: a phrase in more than half the nodes still counts a little, never negatively."""
    return max(math.log((total - holding + 0.5) / (holding + 0.5)), 1e-6)
