"""The full-text (FTS5, BM25) index over the nodes' text, one per knowledge base: a question naming a
rare term (a code like E-4012, a part number, a surname) finds the nodes that hold it, beside the
hnswlib ranking.

Each knowledge base has its own FTS5 table (`nodes_fts_<kb id>`), an external-content table over a view
of that knowledge base's nodes (`nodes_of_kb_<kb id>`), so BM25's statistics (how many nodes, their
average length, how many nodes hold each term) are the knowledge base's own: one channel's documents
never shift another's full-text ranking, and an evaluation's figures do not depend on which other
knowledge bases share the store file. The table and its view are created with the knowledge base and
dropped with it (dropping frees the pages, which `secure_delete` zeroes).

The store keeps each table in the transaction that writes or deletes the nodes, not by triggers: every
store is opened with `trusted_schema=OFF` (an imported file's schema is not trusted), and under it
SQLite refuses a trigger's use of a virtual table. The tables are derived: `raptor doctor` checks each
against its knowledge base's nodes and rebuilds them; `schema.py` accepts them only exactly as
`kb_index_statements` makes them.

FTS5's tokenizer reads an unbroken run of Chinese or Japanese letters as one token (a whole clause),
and a Korean word with its particle ("등대는") or a number or name written against those letters
("1887年") as one, so a question in those scripts has its terms (`sentences.units`: character bigrams,
numbers, Latin words) matched as substrings of the nodes' text instead (`substring_search`), with FTS5's
BM25 formula over the knowledge base's own nodes.
"""

from __future__ import annotations

import logging
import math
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..ingest.sentences import stem

log = logging.getLogger(__name__)

BM25_K1, BM25_B = 1.2, 0.75  # FTS5's bm25() defaults
# A node holding only terms that most nodes hold (bigrams such as 灯塔 in a text about lighthouses, whose
# IDF is FTS5's floor) is no full-text hit: ranked among the hits, it would outrank the vector search's own.
MIN_SCORE = 1e-3
MAX_PHRASES = 24  # a long question's terms beyond these add little, and each is looked for in every node
PROBED_NODES = 32  # nodes per knowledge base whose words the check looks up in its index
# An ASCII word the check looks up (a longer run of letters and digits is no word worth a lookup).
ASCII_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{1,64}(?![A-Za-z0-9])")

TOKENIZE = "porter unicode61 remove_diacritics 2"
LEGACY_TEXT_INDEX = "nodes_fts"  # the one table every knowledge base shared (migration m006; m007 drops it)
# The names of a knowledge base's index objects: its FTS5 table, FTS5's shadow tables, its content view.
KB_INDEX_NAME = re.compile(r"nodes_fts_(\d+)(?:_(?:data|idx|docsize|config|content))?|nodes_of_kb_(\d+)")


def index_table(kb_id: int) -> str:
    """The FTS5 table of a knowledge base."""
    return f"nodes_fts_{int(kb_id)}"


def content_view(kb_id: int) -> str:
    """The view of a knowledge base's nodes that its FTS5 table reads (rebuild, integrity-check)."""
    return f"nodes_of_kb_{int(kb_id)}"


def kb_index_statements(kb_id: int) -> list[str]:
    """The statements that make a knowledge base's index (IF NOT EXISTS: repeating them changes nothing)."""
    view, table = content_view(kb_id), index_table(kb_id)
    return [
        f"CREATE VIEW IF NOT EXISTS {view} AS SELECT id, text FROM nodes WHERE kb_id = {int(kb_id)}",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
        f"text, content='{view}', content_rowid='id', tokenize='{TOKENIZE}')",
    ]


def kb_index_owner(name: str) -> int | None:
    """The knowledge base whose index object `name` is, or None for any other name."""
    found = KB_INDEX_NAME.fullmatch(name)
    if found is None:
        return None
    return int(found.group(1) or found.group(2))


def create_kb_index(db: Any, kb_id: int) -> None:
    """Give a knowledge base its (empty) index, in the transaction that creates the knowledge base."""
    for statement in kb_index_statements(kb_id):
        db.execute(statement)


def drop_kb_index(db: Any, kb_id: int) -> None:
    """Drop a knowledge base's index with the knowledge base."""
    _drop_fts_table(db, index_table(kb_id))
    db.execute(f"DROP VIEW IF EXISTS {content_view(kb_id)}")


def _drop_fts_table(db: Any, table: str) -> None:
    """Drop an FTS5 table (its shadow tables go with it). FTS5 opens a table to drop it, and cannot open
    one whose shadow tables are gone or hold no valid index: those are reset to an empty index's first."""
    try:
        db.execute(f"DROP TABLE IF EXISTS {table}")
    except sqlite3.DatabaseError:
        _reset_shadow_tables(db, table)
        db.execute(f"DROP TABLE IF EXISTS {table}")


def _reset_shadow_tables(db: Any, table: str) -> None:
    """Make `table`'s shadow tables those of an empty FTS5 table: created where missing, their rows
    replaced by an empty index's."""
    present = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
    empty = sqlite3.connect(":memory:")
    try:
        empty.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(text, content='x', content_rowid='id')")
        shadows = empty.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name != ?", [table])
        for name, sql in shadows.fetchall():
            if name not in present:
                db.execute(sql)
            db.execute(f"DELETE FROM {name}")
            for row in empty.execute(f"SELECT * FROM {name}").fetchall():
                db.execute(f"INSERT INTO {name} VALUES ({', '.join('?' * len(row))})", list(row))
    finally:
        empty.close()


def index_nodes(db: Any, kb_id: int, where: str, params: list[Any]) -> None:
    """Add the text of the knowledge base's nodes matching `where` (just written) to its index; an index
    that cannot take them (missing, or its shadow tables damaged) is rebuilt from the nodes instead."""
    _write_or_renew(
        db,
        kb_id,
        f"INSERT INTO {index_table(kb_id)}(rowid, text) SELECT id, text FROM nodes WHERE kb_id = ? AND ({where})",
        [kb_id, *params],
    )


def unindex_nodes(db: Any, kb_id: int, where: str, params: list[Any]) -> None:
    """Take the knowledge base's nodes matching `where` out of its index; call it before deleting them
    (FTS5 needs the text that was indexed to remove it). A damaged index is rebuilt from the nodes that
    stay, so a damaged index never blocks a removal (a forgotten document, a deleted message)."""
    table = index_table(kb_id)
    _write_or_renew(
        db,
        kb_id,
        f"INSERT INTO {table}({table}, rowid, text) SELECT 'delete', id, text FROM nodes WHERE kb_id = ? AND ({where})",
        [kb_id, *params],
        kept=(f"id NOT IN (SELECT id FROM nodes WHERE kb_id = ? AND ({where}))", [kb_id, *params]),
    )


def _write_or_renew(
    db: Any, kb_id: int, statement: str, params: list[Any], kept: tuple[str, list[Any]] = ("1", [])
) -> None:
    """Run a write of a knowledge base's index in the caller's transaction; an index that is missing or
    damaged is instead replaced by one of the knowledge base's nodes matching `kept` (the index is derived:
    the nodes are the truth). An index missing one of its objects is replaced before the write: FTS5's
    error for it would end the whole transaction."""
    if not _complete(db, kb_id):
        _renew_index(db, kb_id, "some of its objects are missing", kept)
        return
    try:
        db.execute(statement, params)
    except sqlite3.DatabaseError as exc:
        if not index_damaged(exc) or not getattr(db, "conn", db).in_transaction:
            raise
        _renew_index(db, kb_id, str(exc), kept)


def index_damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether an error of a statement on a knowledge base's index says the index is missing or damaged
    (SQLITE_ERROR: no such table, FTS5 cannot open it, a garbled format; SQLITE_CORRUPT*), not that the
    database cannot be written now (busy, full, I/O)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name == "SQLITE_ERROR" or name.startswith("SQLITE_CORRUPT")


def _complete(db: Any, kb_id: int) -> bool:
    """Whether every object of a knowledge base's index (its view, FTS5 table and shadow tables) exists."""
    table = index_table(kb_id)
    names = [content_view(kb_id), table, *(f"{table}_{shadow}" for shadow in ("data", "idx", "docsize", "config"))]
    found = db.execute(
        f"SELECT count(*) FROM sqlite_master WHERE name IN ({', '.join('?' * len(names))})", names
    ).fetchone()
    return int(found[0]) == len(names)


def _renew_index(db: Any, kb_id: int, reason: str, kept: tuple[str, list[Any]] = ("1", [])) -> None:
    """Replace a knowledge base's damaged index, in the caller's transaction, by one of its nodes that
    match `kept`."""
    log.warning("the full-text index of knowledge base id %s is damaged (%s): rebuilt from its nodes", kb_id, reason)
    drop_kb_index(db, kb_id)
    create_kb_index(db, kb_id)
    where, params = kept
    db.execute(
        f"INSERT INTO {index_table(kb_id)}(rowid, text) SELECT id, text FROM nodes WHERE kb_id = ? AND ({where})",
        [kb_id, *params],
    )


def index_node_ids(db: Any, kb_id: int, ids: list[int]) -> None:
    """Add the knowledge base's nodes with these ids to its index."""
    if ids:
        index_nodes(db, kb_id, "id IN (SELECT value FROM json_each(?))", [_json_ids(ids)])


def _json_ids(ids: list[int]) -> str:
    return "[" + ",".join(str(int(i)) for i in ids) + "]"


def fill_kb_index(db: Any, kb_id: int) -> None:
    """Create a knowledge base's index (if missing) and fill it from its nodes."""
    create_kb_index(db, kb_id)
    table = index_table(kb_id)
    db.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")


# ------------------------------------------------------------------------------------------ word forms

_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class WordForms:
    """The words of a knowledge base's leaves: each by its lowercase, with how often each way of writing
    it occurs ('Marrow' 12, 'marrow' 1), and by first letter and length, so the words one typing slip from
    a mistyped one are found without reading them all."""

    forms: dict[str, Counter[str]]
    stems: dict[str, list[str]]  # each word's light stem (`sentences.stem`) -> the lowercase words of it
    by_shape: dict[tuple[str, int], list[str]]  # (first letter, length) -> lowercase words

    def near(self, word: str) -> list[str]:
        """The lowercase words with `word`'s first letter and within one letter of its length."""
        return [w for n in (len(word) - 1, len(word), len(word) + 1) for w in self.by_shape.get((word[:1], n), ())]


def leaf_word_forms(db: Any, kb_id: int) -> WordForms:
    """The words of the knowledge base's leaves (its documents' own text; summaries only repeat or
    paraphrase it)."""
    rows = db.execute("SELECT text FROM nodes WHERE kb_id = ? AND layer = 0", [kb_id]).fetchall()
    return word_forms_of("\n".join(text for (text,) in rows))


def word_forms_of(text: str) -> WordForms:
    """The words of `text` and how each is written (`WordForms`): a knowledge base's leaves, or the
    questions of a conversation a follow-up's mistyped word may be one slip from ('meetting')."""
    forms: dict[str, Counter[str]] = {}
    for word, count in Counter(_WORD.findall(text)).items():
        forms.setdefault(word.lower(), Counter())[word] += count
    stems: dict[str, list[str]] = {}
    for lowered in forms:
        stems.setdefault(stem(lowered), []).append(lowered)
    by_shape: dict[tuple[str, int], list[str]] = {}
    for lowered in forms:
        by_shape.setdefault((lowered[0], len(lowered)), []).append(lowered)
    return WordForms(forms, stems, by_shape)


def text_search(db: Any, kb_id: int, match: str, limit: int) -> list[tuple[int, float]]:
    """The knowledge base's nodes matching the FTS5 query `match`, best BM25 first: (id, score), the score
    positive and larger for a better match. A knowledge base without an index (deleted, or its index lost
    or damaged: `text_index_problems` says so, and its next write rebuilds it) has no hits."""
    table = index_table(kb_id)
    try:
        rows = db.execute(
            f"SELECT rowid, -bm25({table}) FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}) LIMIT ?",
            [match, limit],
        ).fetchall()
    except sqlite3.DatabaseError as exc:
        if not index_damaged(exc):
            raise
        if f"no such table: {table}" not in str(exc):
            log.warning("the full-text index of knowledge base id %s is damaged (%s)", kb_id, exc)
        return []
    return [(int(node_id), float(score)) for node_id, score in rows]


def kb_ids(conn: Any) -> list[int]:
    """Every knowledge base of the store."""
    return [int(row[0]) for row in conn.execute("SELECT id FROM kbs ORDER BY id").fetchall()]


def indexed_kbs(conn: Any) -> set[int]:
    """The knowledge bases that have an FTS5 table."""
    names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
    return {kb_id for name in names if (kb_id := kb_index_owner(name)) is not None and name == index_table(kb_id)}


def text_index_problems(conn: Any) -> list[str]:
    """What is wrong with the knowledge bases' indices: missing, out of step with the nodes, left behind
    by a knowledge base that is gone, or the old shared table still there."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master").fetchall()}
    kbs = dict(conn.execute("SELECT id, name FROM kbs ORDER BY id").fetchall())
    problems = []
    for kb_id, kb in kbs.items():
        if index_table(kb_id) not in names or content_view(kb_id) not in names:
            problems.append(f"the full-text index of knowledge base {kb!r} is missing")
        elif reason := _check_kb_index(conn, kb_id):
            problems.append(f"the full-text index of knowledge base {kb!r} is out of step with its nodes ({reason})")
    orphans = sorted({owner for name in names if (owner := kb_index_owner(name)) is not None} - set(kbs))
    problems += [f"a full-text index of knowledge base id {kb_id}, which the store does not hold" for kb_id in orphans]
    if LEGACY_TEXT_INDEX in names:
        problems.append("the full-text index shared by every knowledge base is still there")
    return problems


def _check_kb_index(conn: Any, kb_id: int) -> str:
    """FTS5's check of a knowledge base's index against its nodes: the reason it fails, or ''."""
    table = index_table(kb_id)
    opened = not conn.in_transaction  # the check is an INSERT: Python's sqlite3 begins a transaction for it
    try:
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        if opened and conn.in_transaction:
            conn.execute("ROLLBACK")  # it wrote nothing
    try:
        unfound = _unfound_word(conn, kb_id)
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return f"{unfound!r} is not found in a node that holds it" if unfound else ""


def _unfound_word(conn: Any, kb_id: int) -> str:
    """A word of one of the knowledge base's nodes that its index does not find in that node, or ''.
    FTS5's integrity-check passes an index whose term lookup table (`_idx`) lost rows, though then
    the terms past its first page are found nowhere: so words of nodes spread over the knowledge base are
    looked up."""
    total = int(conn.execute("SELECT count(*) FROM nodes WHERE kb_id = ?", [kb_id]).fetchone()[0])
    table, step = index_table(kb_id), max(1, total // PROBED_NODES)
    rows = conn.execute(
        "SELECT id, text FROM nodes WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 "
        "AS n FROM nodes WHERE kb_id = ?) WHERE n % ? = 0) ORDER BY id",
        [kb_id, step],
    ).fetchall()
    for node_id, text in rows:
        for word in _probe_words(str(text)):
            found = conn.execute(
                f"SELECT 1 FROM {table} WHERE {table} MATCH ? AND rowid = ?", [f'"{word}"', node_id]
            ).fetchone()
            if found is None:
                return word
    return ""


def _probe_words(text: str) -> list[str]:
    """A node's first, last and longest ASCII words (of runs without other letters, so FTS5 cannot
    read a word on with an accented letter beside it): terms far apart in the index's term order."""
    words = [word for run in text.split() if run.isascii() for word in ASCII_WORD.findall(run)]
    return list(dict.fromkeys([words[0], words[-1], max(words, key=len)])) if words else []


def rebuild_text_index(db: Any) -> None:
    """Recreate every knowledge base's index from its nodes (SQLite's text is the truth), and drop any
    index object no knowledge base owns."""
    for name, kind, virtual in _kb_index_objects(db):
        if virtual:
            _drop_fts_table(db, name)
        else:
            db.execute(f"DROP {kind} IF EXISTS {name}")  # a shadow table whose FTS5 table is gone, a view
    if _exists(db, LEGACY_TEXT_INDEX):
        _drop_fts_table(db, LEGACY_TEXT_INDEX)
    for kb_id in kb_ids(db):
        fill_kb_index(db, kb_id)


def _kb_index_objects(db: Any) -> list[tuple[str, str, bool]]:
    """(name, TABLE or VIEW, whether an FTS5 table) of every knowledge base's index object, FTS5 tables
    first: their shadow tables go with them."""
    rows = db.execute("SELECT name, type, sql FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
    found = [
        (str(name), str(kind).upper(), str(sql or "").upper().startswith("CREATE VIRTUAL"))
        for name, kind, sql in rows
        if kb_index_owner(str(name)) is not None
    ]
    return sorted(found, key=lambda row: not row[2])


def _exists(db: Any, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [name]).fetchone() is not None


def optimize_text_index(db: Any) -> None:
    """Merge every knowledge base's index into one segment, so terms removed from it leave the file (a
    damaged one is rebuilt from its nodes instead)."""
    for kb_id in sorted(indexed_kbs(db)):
        table = index_table(kb_id)  # a damaged one is renewed: a new index holds no removed terms either
        _write_or_renew(db, kb_id, f"INSERT INTO {table}({table}) VALUES ('optimize')", [])


def split_text_index(db: Any) -> None:
    """Give every knowledge base its own index, filled from its nodes, and drop the table they shared."""
    for kb_id in kb_ids(db):
        fill_kb_index(db, kb_id)
    if _exists(db, LEGACY_TEXT_INDEX):
        _drop_fts_table(db, LEGACY_TEXT_INDEX)


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
