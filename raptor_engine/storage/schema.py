"""A store file's schema must be the project's: the tables, columns and indices its migrations make,
and nothing else.

SQLite runs what a file's schema says: a trigger fires on every insert, a CHECK constraint or a view
runs its expression. A file from elsewhere (`raptor guilds import`) or changed by hand could make the
first question empty a knowledge base (`CREATE TRIGGER ... AFTER INSERT ON questions BEGIN DELETE
FROM nodes; END`). So a file's schema is compared, object by object, with the one its recorded
migrations build in an empty database; and every connection runs with `trusted_schema=OFF`
(`db.connect`), so a schema's expressions cannot call functions with side effects even before that.
A knowledge base's full-text index (its FTS5 table, their shadow tables, its view: `text_index.py`) is
made with the knowledge base, not by a migration: each is compared with the objects
`kb_index_statements` makes for the knowledge base its name says.
"""

from __future__ import annotations

import functools
import re
import sqlite3

import sqlite_utils

from .migrations import TABLE as MIGRATIONS_TABLE
from .migrations import Migrations, _create_table
from .store_migrations import (
    bot_migrations,
    m007_text_index_per_kb,
    store_migrations,
    summary_cache_migrations,
)
from .text_index import kb_index_owner, kb_index_statements

KNOWN_SETS: dict[str, Migrations] = {
    m.owner: m for m in (store_migrations, summary_cache_migrations, bot_migrations)
}
# SQLite's own tables, made by SQLite (AUTOINCREMENT, ANALYZE); every other object must be the project's.
SQLITE_TABLES = frozenset({"sqlite_sequence", "sqlite_stat1", "sqlite_stat4"})

Objects = dict[tuple[str, str], str]  # (type, name) -> the statement that made it, normalised


def _normalise(sql: str) -> str:
    """The statement without what SQLite does not care about: quotes around names, case, spacing,
    IF NOT EXISTS (files made by older code differ from new ones in exactly these)."""
    text = re.sub(r"\bif not exists\b", " ", sql.replace('"', "").lower())
    return re.sub(r"\s*([(),])\s*", r"\1", re.sub(r"\s+", " ", text)).strip()


def schema_objects(conn: sqlite3.Connection, schema: str = "main") -> Objects:
    """Every object of `schema` that a statement made (SQLite's automatic indices follow their tables)."""
    found: Objects = {}
    for kind, name, table, sql in conn.execute(
        f"SELECT type, name, tbl_name, sql FROM {schema}.sqlite_master"
    ):
        if sql is None and kind == "index" and str(name).startswith("sqlite_autoindex_"):
            continue
        if kind == "table" and name in SQLITE_TABLES:
            continue
        label = f"{kind} {name!r}" + (f" on {table}" if kind in ("trigger", "index") else "")
        found[(kind, str(name))] = label + "\0" + _normalise(sql or "")
    return found


def recorded_steps(conn: sqlite3.Connection, schema: str = "main") -> dict[str, tuple[str, ...]]:
    """The migration steps the file says it ran, per set, in the order they ran."""
    present = conn.execute(
        f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?", [MIGRATIONS_TABLE]
    ).fetchone()
    if not present:
        return {}
    steps: dict[str, list[str]] = {}
    for owner, name in conn.execute(
        f"SELECT migration_set, name FROM {schema}.{MIGRATIONS_TABLE} ORDER BY rowid"
    ):
        steps.setdefault(str(owner), []).append(str(name))
    return {owner: tuple(names) for owner, names in steps.items()}


@functools.lru_cache(maxsize=32)
def _replayed(steps: tuple[tuple[str, tuple[str, ...]], ...]) -> Objects:
    """The objects the given steps of known sets make in an empty database."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        db = sqlite_utils.Database(conn)
        _create_table(db)
        for owner, names in steps:
            KNOWN_SETS[owner].apply(db, only=list(names))
        return schema_objects(conn)
    finally:
        conn.close()


# The knowledge base id of the template: any knowledge base's index objects are this one's with this
# number replaced by its id.
_TEMPLATE_KB = 8675309


@functools.lru_cache(maxsize=1)
def _kb_index_template() -> Objects:
    """The objects `kb_index_statements` makes for the knowledge base `_TEMPLATE_KB`."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("CREATE TABLE nodes (id INTEGER PRIMARY KEY, kb_id INTEGER NOT NULL, text TEXT NOT NULL)")
        before = set(schema_objects(conn))
        for statement in kb_index_statements(_TEMPLATE_KB):
            conn.execute(statement)
        return {key: sql for key, sql in schema_objects(conn).items() if key not in before}
    finally:
        conn.close()


def kb_index_objects(kb_id: int) -> Objects:
    """The objects of knowledge base `kb_id`'s full-text index, as `schema_objects` lists them."""
    mark, number = str(_TEMPLATE_KB), str(int(kb_id))
    return {
        (kind, name.replace(mark, number)): sql.replace(mark, number)
        for (kind, name), sql in _kb_index_template().items()
    }


def _kb_index_problems(found: Objects, per_kb_indices: bool) -> list[str]:
    """How the objects named as a knowledge base's index differ from what `kb_index_statements` makes
    (any such object is foreign to a file whose migrations made no per-kb indices). A missing one is
    not a schema problem: `text_index.text_index_problems` reports it, and doctor rebuilds it."""
    problems = []
    for key in sorted(found):
        kb_id = kb_index_owner(key[1])
        if kb_id is None:
            continue
        label = found[key].split("\0")[0]
        expected = kb_index_objects(kb_id).get(key) if per_kb_indices else None
        if expected is None:
            problems.append(f"{_article(label)} {label} that is not the project's")
        elif found[key] != expected:
            problems.append(f"{_article(label)} {label} that differs from the project's")
    return problems


def _article(label: str) -> str:
    return "an" if label[0] in "aeiou" else "a"


def schema_problems(conn: sqlite3.Connection, schema: str = "main") -> list[str]:
    """How the file's schema differs from the project's, one phrase each; empty when it is the same.

    The expected objects are those the file's recorded steps make; an object of a known set the file
    has not recorded (a table the bot made before migrations existed) is accepted if it is exactly
    the project's.
    """
    recorded = recorded_steps(conn, schema)
    problems = []
    for owner, names in recorded.items():
        known = KNOWN_SETS.get(owner)
        if known is None:
            problems.append(f"migrations of a set this project does not have ({owner!r})")
        elif unknown := [name for name in names if name not in known.names()]:
            problems.append(f"the {owner} migration {unknown[0]!r}, which this version does not have")
    if problems:
        return problems
    expected = _replayed(tuple(sorted(recorded.items())))
    everything = _replayed(tuple((owner, tuple(m.names())) for owner, m in sorted(KNOWN_SETS.items())))
    found = schema_objects(conn, schema)
    problems += _kb_index_problems(found, m007_text_index_per_kb.__name__ in recorded.get("store", ()))
    found = {key: sql for key, sql in found.items() if kb_index_owner(key[1]) is None}
    for key in sorted(found):
        label = found[key].split("\0")[0]
        if key not in expected:
            if everything.get(key) != found[key]:
                problems.append(f"{_article(label)} {label} that is not the project's")
        elif found[key] != expected[key]:
            problems.append(f"{_article(label)} {label} that differs from the project's")
    for key in sorted(expected.keys() - found.keys()):
        problems.append(f"no {expected[key].split(chr(0))[0]}")
    return problems
