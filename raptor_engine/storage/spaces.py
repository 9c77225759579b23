"""Spaces: a data directory split into partitions, each with its own SQLite file and indices.

A *space* is a directory holding one `raptor.db` and one `indices/` folder. The root space is the
data directory itself (what the CLI's knowledge bases use, and where state shared by every space
lives: the summary cache). Every other space is `<data_dir>/guilds/<name>/` (the folder's name is the bot's, which
is the only user of spaces today), named by
`Settings.space_pattern`: a knowledge base whose name matches the pattern lives in the space named by
the pattern's first group. The default pattern, `^guild-(\\d+)-`, puts the bot's knowledge bases
(`guild-<guild id>-channel-<channel id>`) into `data/guilds/<guild id>/`, so one Discord server's data
is one directory: removing the bot from it deletes that directory, and moving it is copying it. The
engine knows nothing of Discord; the pattern is the whole contract.

Open spaces (their SQLite connections) and loaded indices live in one `MemoryBudget`, a least
recently used list with a byte budget (`RAPTOR_INDEX_MEMORY_MB`): past it the oldest are closed, and
reopened from disk the next time they are needed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import NotFoundError, RaptorError, StorageError
from .files import (
    DATA_DIRECTORY,
    check_no_foreign_link,
    check_trusted_folder,
    close_folder,
    make_private_folder,
)
from .index import IndexManager
from .memory import MemoryBudget
from .store import Store
from .text_index import fill_kb_index

log = logging.getLogger(__name__)

SPACES_DIR = "guilds"
DB_NAME = "raptor.db"
INDEX_DIR = "indices"
# What one open SQLite connection may hold: its page cache (SQLite's default cache_size, 2,000 KiB).
CONNECTION_BYTES = 2000 * 1024
CLOSE_WAIT_S = 10.0  # how long closing waits for calls still working in a space
_SPACE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # whole names only (fullmatch: no trailing newline)


@dataclass
class Space:
    """One partition: its directory, its store and its indices. `name` is None for the root space."""

    name: str | None
    dir: Path
    store: Store
    indexes: IndexManager
    pins: int = 0
    retired: bool = False  # its file was deleted or replaced: closed once the calls in it are done


def _space_pattern(text: str) -> re.Pattern[str] | None:
    """RAPTOR_SPACE_PATTERN compiled, or one sentence saying why it cannot be used."""
    if not text:
        return None
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise RaptorError(f"RAPTOR_SPACE_PATTERN is not a regular expression: {exc}.") from None
    if pattern.groups < 1:
        raise RaptorError("RAPTOR_SPACE_PATTERN needs a group, (...), that names the space.")
    return pattern


def _check_not_a_space(data_dir: Path) -> None:
    """Refuse a data directory that is a space of another (`<data_dir>/guilds/<name>/`): opened as a root,
    its knowledge bases, which belong to that space by name, would be moved on into a folder of its own
    (`guilds/<name>/guilds/<name>/`) where neither the bot nor the outer data directory finds them."""
    folder = data_dir.resolve()
    outer = folder.parent.parent
    if folder.parent.name == SPACES_DIR and _SPACE_NAME.fullmatch(folder.name) and (outer / DB_NAME).exists():
        raise StorageError(
            f"{data_dir} is the folder of space {folder.name} in the data directory {outer}: "
            f"run the command with --data-dir {outer} (its knowledge bases keep their names there)."
        )


def space_dir(settings: Settings, name: str) -> Path:
    return settings.data_dir / SPACES_DIR / name


def _linked(directory: Path) -> bool:
    """Whether a space's folder, `guilds/` above it, or its database is a symbolic link: one planted by
    whoever could write in the data directory would make this process read and write another file as a
    guild's store (another guild's, or any file this user may write)."""
    return any(path.is_symlink() for path in (directory.parent, directory, directory / DB_NAME))


def check_space_name(name: str) -> str:
    if not _SPACE_NAME.fullmatch(name):
        raise RaptorError(f"{name!r} is not a space name (letters, digits, '-' and '_', at most 64).")
    return name


def keep_private(folder: Path) -> None:
    """Make the data directory this user's alone (mode 0700): it holds the documents people upload,
    their questions and the bot's records, which no other local user should read. A new folder is
    created so (and the folders on the way 0755, whatever the umask); one of ours that others may enter (a
    clone's `data/`, made 0755 by git) is closed, with a line in the log. RaptorError, one sentence, for one
    another user could change (`check_trusted_folder`): theirs, one they may write in, or one inside a folder
    of theirs. This process opens files there by fixed names: the bot's `bot.lock` through a link 65534
    planted in a data directory of theirs had root's bot write its pid over the file it named (tried), as
    git refuses a repository of another user's."""
    folder = Path(os.path.abspath(folder))
    check_no_foreign_link(folder, DATA_DIRECTORY)
    try:
        make_private_folder(folder)
    except OSError:
        return  # opening the store says why in one sentence
    check_trusted_folder(folder, DATA_DIRECTORY)
    try:
        was = close_folder(folder)
    except OSError as error:
        log.warning("could not make %s private to this user: %s", folder, error)
        return
    if was is not None:
        log.info("made %s readable by this user only (it was mode %o)", folder, was)


class Spaces:
    """The root space and the spaces opened so far, under one memory budget.

    `space_of(kb)` says which space a knowledge base name belongs to; `using(kb)` opens that space (if
    needed) and pins it, so it is not closed while a call works in it.
    """

    def __init__(self, settings: Settings):
        self.settings = settings
        self.pattern = _space_pattern(settings.space_pattern)
        _check_not_a_space(settings.data_dir)
        keep_private(settings.data_dir)
        self.budget = MemoryBudget(settings.index_memory_mb * 1024 * 1024)
        root_store = Store(settings.db_path)
        root_indexes = IndexManager(root_store, settings.index_dir, budget=self.budget, owner="")
        # The root store is never closed by the budget; its indices are counted and may be.
        self.root = Space(None, settings.data_dir, root_store, root_indexes)
        self._open: dict[str, Space] = {}
        self._lock = threading.Lock()
        self._unpinned = threading.Condition(self._lock)  # a space's pins went down (delete waits on it)
        self._opening: dict[str, threading.Lock] = {}
        self._deleting: set[str] = set()

    # -- which space ----------------------------------------------------------------------------

    def space_of(self, kb: str) -> str | None:
        """The space a knowledge base lives in (None: the root), from `Settings.space_pattern`."""
        if self.pattern is None:
            return None
        match = self.pattern.match(kb)
        return check_space_name(match.group(1)) if match else None

    def files_of(self, kb: str) -> tuple[Path, Path]:
        """The SQLite file and the index folder knowledge base `kb` is kept in (whether they exist or not)."""
        name = self.space_of(kb)
        directory = self.settings.data_dir if name is None else space_dir(self.settings, name)
        return directory / DB_NAME, directory / INDEX_DIR

    def names(self) -> list[str]:
        """Every space on disk (those with a database), sorted."""
        base = self.settings.data_dir / SPACES_DIR
        if not base.is_dir():
            return []
        return sorted(
            p.name for p in base.iterdir() if (p / DB_NAME).exists() and _SPACE_NAME.fullmatch(p.name) and not _linked(p)
        )

    # -- opening and closing --------------------------------------------------------------------

    def _acquire(self, name: str, create: bool) -> Space:
        """Open (if needed) and pin the space `name`; NotFoundError if it is being deleted, or if it has
        no database and `create` is False."""
        directory = space_dir(self.settings, check_space_name(name))
        with self._lock:
            opening = self._opening.setdefault(name, threading.Lock())
        with opening:  # one thread opens a space; others wait for that one space only
            with self._lock:
                space = self._open.get(name)
                if name in self._deleting:
                    raise NotFoundError(f"The space {name!r} is being deleted.")
                if space is not None and space.store.replaced():
                    self._retire(space)
                    space = None
                if space is not None:
                    space.pins += 1
            if space is None:
                if _linked(directory):
                    raise StorageError(
                        f"The store of space {name} in {self.settings.data_dir} is reached through a symbolic link "
                        "(planted by whoever could write there?); it is not opened: move the link aside."
                    )
                if not create and not (directory / DB_NAME).exists():
                    raise NotFoundError(f"There is no space named {name!r}.")
                store = Store(directory / DB_NAME)
                indexes = IndexManager(store, directory / INDEX_DIR, budget=self.budget, owner=name)
                space = Space(name, directory, store, indexes, pins=1)
                with self._lock:
                    self._open[name] = space
        self._account(space)
        return space

    def _retire(self, space: Space) -> None:
        """A space whose directory was deleted or replaced while open (call under the lock): new calls
        open the path afresh; this one is closed once no call works in it."""
        log.warning("the store of space %s was deleted or replaced while open; reopening it", space.name)
        del self._open[space.name]
        space.retired = True
        self.budget.forget(("space", space.name))
        if space.pins == 0:
            self._close_files(space)

    @staticmethod
    def _close_files(space: Space) -> None:
        space.indexes.drop_all_cached()
        space.store.close()

    def _release(self, space: Space) -> None:
        with self._unpinned:
            space.pins -= 1
            self._unpinned.notify_all()
            if space.retired and space.pins == 0:
                self._close_files(space)

    def _account(self, space: Space) -> None:
        size = max(len(space.store._connections), 1) * CONNECTION_BYTES
        self.budget.admit(("space", space.name), size, lambda: self._close(space), lambda: space.pins > 0)

    def _close(self, space: Space) -> None:
        """Evicted: close its connections and drop its indices (all reopened from disk on demand)."""
        with self._lock:
            if space.pins > 0 or self._open.get(space.name) is not space:
                return  # pinned again since it was chosen: it stays open (and is counted at next use)
            del self._open[space.name]
        space.indexes.drop_all_cached()
        space.store.close()

    @contextlib.contextmanager
    def using(self, kb: str) -> Iterator[Space]:
        """The space of knowledge base `kb`, pinned open for the duration."""
        with self.pinned(self.space_of(kb)) as space:
            yield space

    @contextlib.contextmanager
    def pinned(self, name: str | None, *, create: bool = True) -> Iterator[Space]:
        """The space `name` (None: the root), open and not closed by the budget until the block ends.

        Created if new, unless `create` is False: then a space with no database raises NotFoundError.
        """
        if name is None:
            yield self.root
            return
        space = self._acquire(name, create)
        try:
            yield space
        finally:
            self._release(space)

    def open_count(self) -> int:
        with self._lock:
            return len(self._open)

    def delete(self, name: str) -> bool:
        """Remove a space and everything in it (its directory); False if there was none.

        New calls into it are refused from the start, and calls already in it are waited for.
        """
        directory = space_dir(self.settings, check_space_name(name))
        with self._lock:
            self._deleting.add(name)
            opening = self._opening.setdefault(name, threading.Lock())
        try:
            with opening:
                pass  # a load that began before is finished (and pinned, if it succeeded)
            with self._unpinned:
                space = self._open.get(name)
                while space is not None and space.pins > 0:
                    self._unpinned.wait()
                self._open.pop(name, None)
            if space is not None:
                self.budget.forget(("space", name))
                space.indexes.drop_all_cached()
                space.store.close()
            if not directory.exists():
                return False
            # Renamed first (one atomic step), so nothing finds it half deleted; '.' marks it as no space.
            doomed = directory.with_name(f".deleting-{name}-{uuid.uuid4().hex}")
            directory.rename(doomed)
            shutil.rmtree(doomed)
            return True
        finally:
            with self._lock:
                self._deleting.discard(name)

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Close every space, once the calls working in them are done (up to `wait_s`): closing a
        connection under a statement another thread is running can crash the process."""
        deadline = time.monotonic() + wait_s
        with self._unpinned:
            while any(space.pins > 0 for space in self._open.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    log.warning("closing spaces while calls still work in them")
                    break
                self._unpinned.wait(left)
            spaces = list(self._open.values())
            self._open.clear()
        for space in spaces:
            space.indexes.drop_all_cached()
            space.store.close()
        self.root.store.close()


# -- moving a single-file data directory into spaces -----------------------------------------------

# The store's tables that belong to one knowledge base, parents first (foreign keys point backwards).
KB_TABLES = (
    "kbs", "documents", "nodes", "edges", "builds", "questions", "message_documents", "messages", "leaf_messages"
)


def migrate_to_spaces(spaces: Spaces) -> list[str]:
    """Move every knowledge base of the root store that belongs to another space into that space.

    What a data directory written before spaces needs (one `raptor.db` holding every server); run each
    time an Engine opens a data directory, so the bot or any `raptor` command finishes it. Each
    knowledge base moves in three steps, each safe to repeat after a kill: its rows are copied to the
    space's file in one transaction (a copy already there is kept), its index files are moved, then its
    rows are deleted from the root in one transaction. Then the bot's rows (`FOLLOWER_TABLES`: settings,
    threads and their turns, saved answers) move the same way, space by space. Nothing is lost and,
    once done, nothing is left twice: the root file is vacuumed so the deleted rows' pages are gone
    too. Returns the knowledge bases moved.
    """
    root = spaces.root.store
    moving = [(name, space) for name in root.kb_names() if (space := spaces.space_of(name)) is not None]
    if moving or _follower_spaces(spaces):
        with root.write() as db:  # until the VACUUM has run, deleted rows may linger in free pages
            db.execute("INSERT OR REPLACE INTO meta VALUES ('vacuum_pending', '1')")
    for number, (kb, name) in enumerate(moving, 1):
        kb_id = root.kb_id(kb)
        if kb_id is None:
            continue  # another process opening the directory at the same time moved it
        with spaces.pinned(name) as space:
            copy_kb(root.path, space.store, kb_id, kb)
            _move_index_files(spaces.root.indexes, space.indexes, kb_id)
        root.delete_kb(kb_id)
        log.info("moved knowledge base %s into space %s (%d of %d)", kb, name, number, len(moving))
    move_follower_rows(spaces)
    if root.db.execute("SELECT 1 FROM meta WHERE key = 'vacuum_pending'").fetchone():
        _vacuum(root)
    return [kb for kb, _ in moving]


# Tables another owner keeps in a store file, whose rows follow a knowledge base into its space: each
# with the SQL (over the row, aliased `r`, its schema written `{s}`) of the name the space pattern is
# matched against, as a knowledge base's name is. They are the bot's (bot/state.py, migration set
# "bot"); named here because whichever program opens an old data directory first must move them.
FOLLOWER_OWNER = "bot"
FOLLOWER_TABLES = (
    ("bot_channel_settings", "r.kb"),
    ("bot_threads", "r.kb"),
    ("bot_turns", "(SELECT t.kb FROM {s}bot_threads t WHERE t.thread_id = r.thread_id)"),
    ("bot_answers", "r.kb"),
    ("bot_guild_settings", "'guild-' || r.guild_id || '-'"),  # the bot's names: guild-<id>-channel-<id>
    ("bot_message_sync", "r.kb"),
    ("bot_message_imports", "r.kb"),
    ("bot_forget_me", "'guild-' || r.guild_id || '-'"),
    ("bot_posted_files", "r.kb"),
    ("bot_removals", "r.kb"),
    ("bot_questions", "'guild-' || r.guild_id || '-'"),
)


def _follower_tables(conn: sqlite3.Connection, schema: str) -> list[tuple[str, str]]:
    """The follower tables that exist in `schema` of `conn` (an old root may have none of them)."""
    present = {
        row[0] for row in conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")
    }
    return [(table, expr) for table, expr in FOLLOWER_TABLES if table in present]


def _with_space_function(spaces: Spaces, conn: sqlite3.Connection) -> sqlite3.Connection:
    """Give `conn` the SQL function raptor_space(name): the space a row's name belongs to, or NULL."""

    def space_of(name: str | None) -> str | None:
        try:
            return spaces.space_of(name) if name else None
        except RaptorError:
            return None  # not a valid space name: the row stays in the root

    conn.create_function("raptor_space", 1, space_of, deterministic=True)
    return conn


def _follower_spaces(spaces: Spaces) -> list[str]:
    """The spaces that root rows of follower tables belong to."""
    conn = _with_space_function(spaces, spaces.root.store.db.conn)
    found: set[str] = set()
    for table, expr in _follower_tables(conn, "main"):
        sql = f"SELECT DISTINCT raptor_space({expr.format(s='main.')}) FROM main.{table} r"
        found.update(row[0] for row in conn.execute(sql) if row[0] is not None)
    return sorted(found)


def move_follower_rows(spaces: Spaces) -> list[str]:
    """Move the root's follower rows into their spaces, space by space: copied in one transaction
    (a row already there, by primary key, is kept), then deleted from the root in one transaction;
    both safe to repeat after a kill. Returns the spaces that received rows."""
    names = _follower_spaces(spaces)
    root = spaces.root.store
    for name in names:
        with spaces.pinned(name) as space:
            copy_follower_rows(spaces, root.path, space.store, name)
        with root.write() as db:
            conn = _with_space_function(spaces, db.conn)
            for table, expr in reversed(_follower_tables(conn, "main")):  # turns before their threads
                where = f"raptor_space({expr.format(s='main.')}) = ?"
                conn.execute(
                    f"DELETE FROM main.{table} WHERE rowid IN (SELECT r.rowid FROM main.{table} r WHERE {where})",
                    [name],
                )
        log.info("moved the %s rows of space %s out of the root store", FOLLOWER_OWNER, name)
    return names


def copy_follower_rows(spaces: Spaces, source: Path, target: Store, name: str) -> None:
    """Copy the follower rows of space `name` from the SQLite file `source` into `target`, in one
    transaction, creating their tables (as the source has them, with the owner's migration records)
    where `target` has none yet."""
    db = target.db
    conn = _with_space_function(spaces, db.conn)
    with target._write_lock:
        conn.execute("ATTACH DATABASE ? AS source", [str(source)])
        try:
            with target.write():
                tables = _follower_tables(conn, "source")
                ours = {table for table, _ in _follower_tables(conn, "main")}
                for table, _ in tables:
                    if table not in ours:
                        _create_like_source(conn, table)
                if not ours:
                    conn.execute(
                        "INSERT INTO main._migrations (migration_set, name, applied_at) SELECT migration_set,"
                        " name, applied_at FROM source._migrations WHERE migration_set = ?",
                        [FOLLOWER_OWNER],
                    )
                for table, expr in tables:
                    columns = _shared_columns(conn, table)
                    conn.execute(
                        f"INSERT OR IGNORE INTO main.{table} ({columns}) SELECT {columns} FROM source.{table} r"
                        f" WHERE raptor_space({expr.format(s='source.')}) = ?",
                        [name],
                    )
        finally:
            conn.execute("DETACH DATABASE source")


def _create_like_source(conn: sqlite3.Connection, table: str) -> None:
    """Create `table` and its indices in main with the source's own statements."""
    rows = conn.execute(
        "SELECT sql FROM source.sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL ORDER BY type = 'index'",
        [table],
    ).fetchall()
    for (sql,) in rows:
        conn.execute(sql)


def _shared_columns(conn: sqlite3.Connection, table: str) -> str:
    """The quoted columns of `table` that both main and the attached source have, in main's order."""
    ours = [row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")]
    theirs = {row[1] for row in conn.execute(f"PRAGMA source.table_info({table})")}
    return ", ".join(f'"{c}"' for c in ours if c in theirs)


def _vacuum(root: Store) -> None:
    """Rewrite the root file without the moved rows' pages, then empty the write-ahead log of them."""
    try:
        root.db.conn.execute("VACUUM")
        root.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.OperationalError:  # another process holds it: the next open tries again
        log.warning("could not vacuum %s now; the next start will", root.path, exc_info=True)
        return
    with root.write() as db:
        db.execute("DELETE FROM meta WHERE key = 'vacuum_pending'")


def copy_kb(source: Path, target: Store, kb_id: int, kb: str) -> bool:
    """Copy one knowledge base's rows, ids kept, from the SQLite file `source` into `target`, in one
    transaction; False if `target` already holds it (an earlier, interrupted run copied it)."""
    db = target.db
    with target._write_lock:
        db.conn.execute("ATTACH DATABASE ? AS source", [str(source)])
        try:
            with target.write():
                if db.execute("SELECT 1 FROM kbs WHERE id = ? AND name = ?", [kb_id, kb]).fetchone():
                    return False
                for table in KB_TABLES:
                    _copy_rows(db, table, "id" if table == "kbs" else "kb_id", kb_id)
                fill_kb_index(db, kb_id)  # the copied nodes' text, in the knowledge base's own index
                _advance_node_ids(db)
            return True
        finally:
            db.conn.execute("DETACH DATABASE source")


def _copy_rows(db: object, table: str, key: str, kb_id: int) -> None:
    """INSERT the rows of `source.table` whose `key` is `kb_id`, by the columns both files have."""
    conn = db.conn  # type: ignore[attr-defined]
    columns = _shared_columns(conn, table)
    conn.execute(
        f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM source.{table} WHERE {key} = ?", [kb_id]
    )


def _advance_node_ids(db: object) -> None:
    """Node ids are never reused in a file (index labels): start new ones past every copied one."""
    conn = db.conn  # type: ignore[attr-defined]
    highest = conn.execute("SELECT COALESCE(MAX(id), 0) FROM main.nodes").fetchone()[0]
    conn.execute(
        "UPDATE main.meta SET value = MAX(CAST(value AS INTEGER), ?) WHERE key = 'next_node_id'",
        [int(highest) + 1],
    )


def _move_index_files(source: IndexManager, target: IndexManager, kb_id: int) -> None:
    """The saved index travels with its rows (ids are kept); a missing one is rebuilt on first use."""
    target.dir.mkdir(parents=True, exist_ok=True)
    for path in source.file_paths(kb_id):
        try:
            path.replace(target.dir / path.name)
        except FileNotFoundError:  # never saved, or another process opening the directory moved it first
            continue
