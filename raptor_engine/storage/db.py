"""The one way this project opens its SQLite file: the store, the summary cache and the bot's tables.

Every connection gets the same pragmas, so no caller can forget one: WAL (readers go on while one
writer writes), a busy timeout (another process's write waits instead of failing), synchronous=NORMAL
(safe with WAL), foreign keys (the store's ON DELETE CASCADE relies on them), `trusted_schema=OFF`:
expressions in a file's schema (a view, a trigger, a CHECK) may call only side-effect-free functions,
since a file may have come from elsewhere (`schema.py` checks the rest), and `secure_delete=ON`: a
deleted row's bytes are overwritten with zeros, in its page and in freed pages, so text removed for
privacy (a deleted message, a forgotten document) is not left readable in the file (`scrub` empties the
WAL of the older copies).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import sqlite_utils

from ..errors import DamagedDatabaseError, StorageError, is_damaged_database

BUSY_TIMEOUT_MS = 30_000
# Below this much free space, an I/O error from SQLite is the disk being full (its shared-memory file
# alone needs 32 KiB).
FULL_DISK_FREE_BYTES = 1024 * 1024


def connect(
    path: str | Path, *, autocommit: bool = False, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> sqlite_utils.Database:
    """Open `path` (creating its folder) with the project's pragmas, usable from any thread.

    `autocommit` leaves every statement its own transaction (for one-statement writers such as the
    cache); otherwise callers open transactions themselves (`BEGIN IMMEDIATE`).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():  # SQLite says only "unable to open database file", which reads as a permission problem
        raise StorageError(f"{path} is a folder, not a database file; move it aside or use another data directory.")
    conn = sqlite3.connect(
        str(path),
        timeout=busy_timeout_ms / 1000,
        check_same_thread=False,
        isolation_level=None if autocommit else "",
    )
    try:
        conn.execute("PRAGMA trusted_schema=OFF")
        conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        _enter_wal(conn, busy_timeout_ms / 1000)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA secure_delete=ON")
    except sqlite3.DatabaseError as error:
        conn.close()
        if is_damaged_database(error):  # SQLite names no file: say which one, among a directory's many
            raise DamagedDatabaseError(error, path) from error
        if _disk_full(error, path.parent):
            raise sqlite3.OperationalError("database or disk is full") from error
        raise
    return sqlite_utils.Database(conn, execute_plugins=False)


def _enter_wal(conn: sqlite3.Connection, wait_s: float) -> None:
    """Switch the file to WAL, waiting up to `wait_s` for other processes, as any other write does.

    While another process holds a write lock on a file still in rollback mode (several processes
    creating one data directory at once), SQLite refuses the switch at once ("database is locked")
    instead of calling the busy handler, to avoid a deadlock: so the wait is this loop's."""
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if getattr(error, "sqlite_errorname", "") != "SQLITE_BUSY" or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _disk_full(error: sqlite3.DatabaseError, folder: Path) -> bool:
    """Whether SQLite's "disk I/O error" or "unable to open database file" came from a full disk: opening
    a store on one fails to size the shared-memory file (SQLITE_IOERR_SHMSIZE), or, with no inode left,
    to create the WAL file (SQLITE_CANTOPEN), neither of which SQLite reports as SQLITE_FULL."""
    if not str(getattr(error, "sqlite_errorname", "")).startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")):
        return False
    try:
        found = os.statvfs(folder)
    except OSError:
        return False
    no_inode = found.f_files > 0 and found.f_favail == 0
    return found.f_bavail * found.f_frsize < FULL_DISK_FREE_BYTES or no_inode


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One transaction that takes SQLite's write lock up front (BEGIN IMMEDIATE): committed when the
    block ends, rolled back when it raises, so no half of it is ever visible."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def scrub(conn: sqlite3.Connection) -> bool:
    """Copy the WAL into the database file and truncate it to nothing, so the older page images it holds
    (text since deleted) leave the disk; True when done, False when a reader or writer kept it busy
    (the busy timeout was spent waiting: the next scrub does it)."""
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return not busy
