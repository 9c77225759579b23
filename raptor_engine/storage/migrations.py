"""Named schema migrations, applied once each and in order, recorded in the `_migrations` table.

The pattern of llm's `embeddings_migrations.py`: each change to the schema is a function with a
name; a database remembers which names it has run, so an old database is brought up to date and a
new one is built by the same steps. Several owners share one SQLite file (the store, the summary
cache, the bot), each with its own named set, so one never re-runs or skips another's steps.

All pending steps of a set run in one `BEGIN IMMEDIATE` transaction: a failing step leaves the
database exactly as it was, and a second process migrating at the same moment waits for the first
and then finds nothing left to do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import sqlite_utils

from ..errors import StorageError
from .db import immediate

log = logging.getLogger(__name__)

TABLE = "_migrations"

Step = Callable[[sqlite_utils.Database], None]


class Migrations:
    """An ordered list of named schema steps for one owner of tables; register steps with `@set`."""

    def __init__(self, owner: str):
        self.owner = owner
        self._steps: list[tuple[str, Step]] = []

    def __call__(self, step: Step) -> Step:
        """Decorator: append `step` under its function name (names must be unique within the set)."""
        name = step.__name__
        if name in self.names():
            raise ValueError(f"migration {name!r} is registered twice in {self.owner!r}")
        self._steps.append((name, step))
        return step

    def names(self) -> list[str]:
        return [name for name, _ in self._steps]

    def applied(self, db: sqlite_utils.Database) -> list[str]:
        """Names of this set's steps that `db` has run, in the order they ran."""
        if not db[TABLE].exists():
            return []
        rows = db.execute(
            f"SELECT name FROM {TABLE} WHERE migration_set = ? ORDER BY rowid", [self.owner]
        ).fetchall()
        return [row[0] for row in rows]

    def apply(self, db: sqlite_utils.Database, *, only: list[str] | None = None) -> list[str]:
        """Run the steps `db` has not run yet, all or none, and return their names.

        `only` limits them to the named steps: what `schema.expected_schema` replays to know the
        schema a file that recorded those steps must have.
        """
        with immediate(db.conn):
            _create_table(db)
            done = set(self.applied(db))
            self._refuse_newer(db)
            ran = []
            for name, step in self._steps:
                if name in done or (only is not None and name not in only):
                    continue
                step(db)
                db.execute(
                    f"INSERT INTO {TABLE} (migration_set, name, applied_at) VALUES (?, ?, ?)",
                    [self.owner, name, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())],
                )
                ran.append(name)
        if ran:
            log.info("%s: applied migrations %s", self.owner, ", ".join(ran))
        return ran


    def _refuse_newer(self, db: sqlite_utils.Database) -> None:
        """Stop before touching a file a newer version has migrated: this version would read and write
        its tables without the columns and rules that version added (a downgrade must not damage it)."""
        unknown = [name for name in self.applied(db) if name not in self.names()]
        if unknown:
            raise StorageError(
                f"The database {_file_of(db)} was written by a newer version of raptor "
                f"(its {self.owner} migration {unknown[0]!r} is not one this version has); "
                "upgrade raptor to open it, or restore a backup made by this version."
            )


def _file_of(db: sqlite_utils.Database) -> str:
    row = db.execute("PRAGMA database_list").fetchone()
    return row[2] if row and row[2] else "in memory"


def _create_table(db: sqlite_utils.Database) -> None:
    db.execute(
        f"""CREATE TABLE IF NOT EXISTS {TABLE} (
            migration_set TEXT NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL,
            PRIMARY KEY (migration_set, name))"""
    )
