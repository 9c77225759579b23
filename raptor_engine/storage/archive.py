"""Moving a space between data directories: `raptor guilds export` writes an archive, `raptor guilds
import` adds one, and accepts only what export writes.

An archive is a tar of two members: `space.json`, the manifest (format, the space's name, its
knowledge bases, the database's size and sha256), and `raptor.db`, a `VACUUM INTO` snapshot. Indices
are not carried: they are derived, and import builds them from the imported rows.

An archive is untrusted input (it may come from anyone), so import checks, before anything appears:
- its members: exactly those two, plain files (no link, device or sparse file, no other path);
- sizes: the manifest at most `MAX_MANIFEST_BYTES`; the database as large as the manifest says, at
  most `MAX_EXPANSION` times the archive's own size (export writes it uncompressed, so a small
  compressed archive cannot unpack a large file), with room for it on disk; at most that many bytes
  are ever written, and the sha256 must match;
- the database: `PRAGMA integrity_check` and `foreign_key_check`, a schema equal to the project's
  (`schema.py`: no trigger, view, extra table, column or index), the knowledge bases the manifest
  names, no row of another guild than the manifest's (nor a bot row whose guild id is not its knowledge
  base's), no node longer than `RAPTOR_NODE_MAX_CHARS`, the
  bot's lists of ids lists of integers, its removal records dated before the import, and the store's
  own invariants (edges down the tree, every stored list well-formed).
It all happens in a folder beside the target, renamed into place at the end; a refusal removes that
folder (and `guilds/` if the import made it), so the data directory is left byte for byte as it was.
"""

from __future__ import annotations

import bz2
import contextlib
import fcntl
import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
import sqlite3
import tarfile
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..errors import RaptorError
from .files import partial_path, rename_target, sweep_partials
from .index import IndexManager
from .schema import schema_problems
from .spaces import (
    DB_NAME,
    INDEX_DIR,
    SPACES_DIR,
    Spaces,
    _advance_node_ids,
    _follower_tables,
    _with_space_function,
    check_space_name,
    space_dir,
)
from .store import Store

ARCHIVE_MANIFEST = "space.json"
ARCHIVE_FORMAT = 2
MEMBERS = (ARCHIVE_MANIFEST, DB_NAME)
MAX_MANIFEST_BYTES = 4 * 1024 * 1024  # a manifest lists knowledge base names: 4 MiB is ~40,000 of them
MAX_EXPANSION = 10  # a database at most 10x its archive (export's is 1x; gzip of SQLite pages ~2-4x)
DISK_FACTOR = 2  # the database, then its indices and journal: twice its size must be free
COPY_CHUNK = 1024 * 1024
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
STAGING_PREFIX = ".importing-"  # guilds/.importing-<guild>-<random>: an import's folder until it is done


class ArchiveRefused(RaptorError):
    """An archive that is not what `raptor guilds export` writes; nothing was changed."""

    def __init__(self, archive: Path, reason: str):
        super().__init__(f"{archive.name} is not a store exported by `raptor guilds export`: {reason}.")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(COPY_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _open_untrusted(path: Path) -> sqlite3.Connection:
    """A plain connection to a file that may be hostile: its schema's expressions stay harmless."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA trusted_schema=OFF")
    return conn


@contextlib.contextmanager
def _partial_folder(target: Path) -> Iterator[Path]:
    """A folder beside `target` for the parts of what is renamed to it, removed after; named as
    `sweep_partials` finds it, so an export killed before its end (a copy of the database inside) goes
    at the next export to the same path."""
    folder = partial_path(target)
    shutil.rmtree(folder, ignore_errors=True)  # a dead process's of the same pid: this process's name
    folder.mkdir(mode=0o700)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def export_space(spaces: Spaces, name: str, archive: Path) -> dict[str, Any]:
    """Write space `name` to a tar archive: a `VACUUM INTO` snapshot of its database (consistent while
    others write) and its manifest. Written beside `archive` and renamed into place (storage/files.py),
    readable by this user only (mode 0600, whatever the umask), as the data directory is."""
    if not archive.parent.is_dir():
        what = "is not a folder" if archive.parent.exists() else "does not exist"
        raise RaptorError(f"Cannot write the archive to {archive}: {archive.parent} {what}.")
    if not os.access(archive.parent, os.W_OK):  # a read-only mount refuses even root
        raise RaptorError(f"Cannot write the archive to {archive}: {archive.parent} is read-only for this user.")
    target = rename_target(archive)
    sweep_partials(target)
    with _partial_folder(target) as scratch:
        snapshot = Path(scratch) / DB_NAME
        with spaces.pinned(name, create=False) as space:
            space.store.db.conn.execute("VACUUM INTO ?", [str(snapshot)])
        conn = _open_untrusted(snapshot)
        try:  # the names of the snapshot itself, not of the live file a moment before
            kbs = [row[0] for row in conn.execute("SELECT name FROM kbs ORDER BY name")]
        finally:
            conn.close()
        manifest = {
            "format": ARCHIVE_FORMAT,
            "space": name,
            "knowledge_bases": kbs,
            "database": {"bytes": snapshot.stat().st_size, "sha256": _sha256(snapshot)},
        }
        (Path(scratch) / ARCHIVE_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        partial = Path(scratch) / "archive.tar"
        with tarfile.open(partial, "w") as tar:
            tar.add(Path(scratch) / ARCHIVE_MANIFEST, ARCHIVE_MANIFEST)
            tar.add(snapshot, DB_NAME)
        partial.chmod(0o600)  # it holds every document, question and thread of the guild: this user's alone
        partial.replace(target)
    return manifest


@contextlib.contextmanager
def _import_turn(spaces: Spaces, *, wait: bool) -> Iterator[bool]:
    """Imports into one data directory take turns, across processes: an exclusive flock on the directory
    itself (a lock file would be a change a refused import leaves behind). Yields whether this caller has
    its turn (always, when it waits); while it has, any staging folder is one a killed import left."""
    handle = os.open(spaces.settings.data_dir, os.O_RDONLY)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(handle)  # gives the lock back


def abandoned_imports(spaces: Spaces, *, remove: bool) -> list[str]:
    """The staging folders of imports that were killed (SIGKILL runs no clean-up, and each holds up to an
    archive's database), removed when asked; none while another process is importing."""
    with _import_turn(spaces, wait=False) as turn:
        return _staging_folders(spaces, remove=remove) if turn else []


def _staging_folders(spaces: Spaces, *, remove: bool) -> list[str]:
    """Every import's staging folder (call with the import lock held: then no import is using one)."""
    found = []
    for folder in sorted((spaces.settings.data_dir / SPACES_DIR).glob(f"{STAGING_PREFIX}*")):
        if remove:
            shutil.rmtree(folder, ignore_errors=True)
        found.append(f"{folder} is a half-imported store an interrupted import left")
    return found


def import_space(spaces: Spaces, archive: Path) -> dict[str, Any]:
    """Add the space in `archive` (made by `export_space`) to this data directory, which must not have
    it yet; checked as the module says, its indices built, then renamed into place all at once. Imports
    take turns, so the first thing each does is remove what a killed one left."""
    with _import_turn(spaces, wait=True):
        _staging_folders(spaces, remove=True)
        return _import_space(spaces, archive)


# Compressed tar archives, known by their first bytes, as tarfile's "r:*" knows them
_DECOMPRESSORS: tuple[tuple[bytes, Callable[[BinaryIO], BinaryIO]], ...] = (
    (b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw)),
    (b"BZh", lambda raw: bz2.BZ2File(raw)),
    (b"\xfd7zXZ\x00", lambda raw: lzma.LZMAFile(raw)),
)


class _Bounded:
    """The archive's bytes as tarfile reads them (decompressed), refused past `limit`: tarfile reads the whole
    data of a pax or GNU long-name header into memory as it meets it, before any member can be checked, and a
    229 kB `.tar.xz` whose pax header claimed 1.5 GB held `raptor guilds import` at 1.6 GB of memory for 2.5
    minutes (tried). A read the decompressor fails is tarfile's ReadError: not a readable archive."""

    def __init__(self, stream: BinaryIO, limit: int, archive: Path):
        self._stream, self._limit, self._archive = stream, limit, archive

    def read(self, size: int | None = -1) -> bytes:
        try:
            room = self._limit - self._stream.tell()
            if size is not None and 0 <= size <= room:
                return self._stream.read(size)
            data = self._stream.read(max(room, 0) + 1)
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as error:
            raise tarfile.ReadError(str(error)) from error
        if len(data) > room:
            raise ArchiveRefused(
                self._archive, f"it unpacks to more than {self._limit:,} bytes, more than an export's archive holds"
            )
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._stream.seek(offset, whence)

    def tell(self) -> int:
        return self._stream.tell()


@contextlib.contextmanager
def _opened_archive(archive: Path) -> Iterator[tarfile.TarFile]:
    """The archive as a tar, decompressed as tarfile would, never unpacking more than an export's archive of
    its size can hold: its database at most `MAX_EXPANSION` times the archive, its manifest, and headers."""
    limit = MAX_EXPANSION * archive.stat().st_size + MAX_MANIFEST_BYTES + COPY_CHUNK
    with archive.open("rb") as raw:
        start = raw.read(6)
        raw.seek(0)
        opener = next((open_ for magic, open_ in _DECOMPRESSORS if start.startswith(magic)), None)
        with contextlib.ExitStack() as stack:
            stream = stack.enter_context(opener(raw)) if opener else raw
            with tarfile.open(fileobj=_Bounded(stream, limit, archive), mode="r:") as tar:  # type: ignore[arg-type]
                yield tar


def _import_space(spaces: Spaces, archive: Path) -> dict[str, Any]:
    try:
        with _opened_archive(archive) as tar:
            members = _members(tar, archive)
            manifest = _read_manifest(tar, members[ARCHIVE_MANIFEST], archive)
            name = manifest["space"]
            target = space_dir(spaces.settings, name)
            if target.exists():
                raise RaptorError(f"This data directory already has a store for {name}; delete it first.")
            _check_size(members[DB_NAME], manifest, archive, spaces.settings.data_dir)
            with _staging(target) as staging:
                _copy_database(tar, members[DB_NAME], staging / DB_NAME, manifest, archive)
                _check_database(spaces, staging / DB_NAME, manifest, archive)
                _build_indices(staging, archive)
                staging.rename(target)
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile) as exc:
        raise ArchiveRefused(archive, "it is not a readable tar archive") from exc
    except OSError as exc:
        raise RaptorError(f"Cannot import {archive.name}: {exc.strerror or exc}.") from exc
    return manifest


def _members(tar: tarfile.TarFile, archive: Path) -> dict[str, tarfile.TarInfo]:
    """The archive's two members, refusing at the first header that export never writes."""
    found: dict[str, tarfile.TarInfo] = {}
    archive_bytes = archive.stat().st_size
    for member in tar:
        if member.name not in MEMBERS:
            raise ArchiveRefused(archive, f"it holds {member.name!r}, which an export never writes")
        if member.name in found:
            raise ArchiveRefused(archive, f"it holds {member.name} twice")
        if member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE) or member.sparse is not None:
            raise ArchiveRefused(archive, f"its {member.name} is not a plain file")
        _check_member_size(member, archive, archive_bytes)
        found[member.name] = member
    for name in MEMBERS:
        if name not in found:
            raise ArchiveRefused(archive, f"it has no {name}")
    return found


def _check_member_size(member: tarfile.TarInfo, archive: Path, archive_bytes: int) -> None:
    """Refuse a member too large for its archive at its header: reading on to the next header would
    decompress all of it (a small compressed archive can hold gigabytes of zeros)."""
    if member.name == ARCHIVE_MANIFEST and member.size > MAX_MANIFEST_BYTES:
        raise ArchiveRefused(archive, f"its manifest is larger than {MAX_MANIFEST_BYTES:,} bytes")
    if member.size > MAX_EXPANSION * max(archive_bytes, 1):
        what = "database" if member.name == DB_NAME else "manifest"
        raise ArchiveRefused(
            archive,
            f"it would unpack a {member.size:,}-byte {what} from {archive_bytes:,} bytes, "
            f"more than {MAX_EXPANSION} times what an export's archive holds",
        )


def _read_manifest(tar: tarfile.TarFile, member: tarfile.TarInfo, archive: Path) -> dict[str, Any]:
    source = tar.extractfile(member)
    assert source is not None  # a plain file (checked)
    try:
        manifest = json.loads(source.read(MAX_MANIFEST_BYTES))
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        raise ArchiveRefused(archive, "its manifest is not JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
        raise ArchiveRefused(archive, "its manifest is not one this version writes; export it again")
    database, kbs = manifest.get("database"), manifest.get("knowledge_bases")
    valid = (
        isinstance(manifest.get("space"), str)
        and isinstance(kbs, list)
        and all(isinstance(kb, str) for kb in kbs)
        and isinstance(database, dict)
        and isinstance(database.get("bytes"), int)
        and database["bytes"] >= 0
        and isinstance(database.get("sha256"), str)
        and _SHA256.match(database["sha256"])
    )
    if not valid:
        raise ArchiveRefused(archive, "its manifest lacks the fields an export writes")
    try:
        check_space_name(manifest["space"])
    except RaptorError:
        raise ArchiveRefused(archive, f"its manifest names no valid guild ({manifest['space']!r})") from None
    return manifest


def _check_size(member: tarfile.TarInfo, manifest: dict[str, Any], archive: Path, data_dir: Path) -> None:
    """The database is the size the manifest says (its size against the archive's is checked at its
    header, `_check_member_size`), and fits on the disk."""
    declared = int(manifest["database"]["bytes"])
    if member.size != declared:
        raise ArchiveRefused(
            archive, f"its database is {member.size:,} bytes where its manifest says {declared:,}"
        )
    free = shutil.disk_usage(data_dir).free
    if declared * DISK_FACTOR > free:
        raise RaptorError(
            f"Cannot import {archive.name}: it needs {declared * DISK_FACTOR / 1e6:,.0f} MB and the disk "
            f"of {data_dir} has {free / 1e6:,.0f} MB free."
        )


@contextlib.contextmanager
def _staging(target: Path) -> Iterator[Path]:
    """A folder beside `target` to unpack into; removed, with `guilds/` if this made it, unless the
    block renamed it into place."""
    made_parent = not target.parent.exists()
    staging = target.with_name(f"{STAGING_PREFIX}{target.name}-{uuid.uuid4().hex}")
    staging.mkdir(parents=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if made_parent:
            with contextlib.suppress(OSError):
                target.parent.rmdir()
        raise


def _copy_database(
    tar: tarfile.TarFile, member: tarfile.TarInfo, path: Path, manifest: dict[str, Any], archive: Path
) -> None:
    """Copy the database member, never more bytes than the manifest declares, and check its sha256."""
    declared = int(manifest["database"]["bytes"])
    source = tar.extractfile(member)
    assert source is not None
    digest, written = hashlib.sha256(), 0
    with path.open("xb") as out:
        while block := source.read(min(COPY_CHUNK, declared - written + 1)):
            written += len(block)
            if written > declared:
                raise ArchiveRefused(archive, "its database is larger than its manifest says")
            digest.update(block)
            out.write(block)
    if written != declared or digest.hexdigest() != manifest["database"]["sha256"]:
        raise ArchiveRefused(archive, "its database is not the one its manifest describes")


def _check_database(spaces: Spaces, path: Path, manifest: dict[str, Any], archive: Path) -> None:
    """SQLite's checks, the project's schema, the manifest's knowledge bases, one guild's rows only."""
    try:
        conn = _open_untrusted(path)
        try:
            if [row[0] for row in conn.execute("PRAGMA integrity_check")] != ["ok"]:
                raise ArchiveRefused(archive, "its database is damaged")
            _drop_planner_statistics(conn)  # before the checks below, whose plans they would choose
            if problems := schema_problems(conn):
                raise ArchiveRefused(archive, f"its database has {problems[0]}")
            if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                raise ArchiveRefused(archive, "its database has rows that point at rows it does not have")
            names = sorted(row[0] for row in conn.execute("SELECT name FROM kbs"))
            if names != sorted(manifest["knowledge_bases"]):
                raise ArchiveRefused(
                    archive, "its database does not hold the knowledge bases its manifest names"
                )
            _check_one_guild(spaces, conn, manifest["space"], archive)
            _check_row_guilds(conn, archive)
            _check_node_length(conn, spaces.settings.node_max_chars, archive)
            _check_shown_text(conn, archive)
            _check_id_lists(conn, archive)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise ArchiveRefused(archive, "its database is damaged") from exc


def _drop_planner_statistics(conn: sqlite3.Connection) -> None:
    """Drop an archive's SQLite planner statistics (`sqlite_stat1`; `sqlite_stat4` cannot be made in one):
    derived data, like the indices, and they choose the plan of every query on the store. Made up (every
    table one row, every index useless), they turned the edge checks import and `raptor doctor` run into a
    scan of the nodes for each edge: 40 times the CPU at 1,132 nodes, growing with the square."""
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE name IN ('sqlite_stat1', 'sqlite_stat4')").fetchall():
        conn.execute(f"DROP TABLE {table}")


def _check_one_guild(spaces: Spaces, conn: sqlite3.Connection, name: str, archive: Path) -> None:
    """Every knowledge base, and every bot row that names a guild, belongs to the manifest's guild: a
    manifest naming another guild would file the rows where nothing reaches them."""
    conn = _with_space_function(spaces, conn)
    owners = {row[0] for row in conn.execute("SELECT DISTINCT raptor_space(name) FROM main.kbs")}
    for table, expr in _follower_tables(conn, "main"):
        sql = f"SELECT DISTINCT raptor_space({expr.format(s='main.')}) FROM main.{table} r"
        owners.update(row[0] for row in conn.execute(sql) if row[0] is not None)
    others = sorted(str(owner) for owner in owners if owner != name)
    if others:
        held = "no guild" if others == ["None"] else f"guild {others[0]}"
        raise ArchiveRefused(
            archive, f"its manifest names guild {name} but its database holds data of {held}"
        )


# The bot's tables whose rows name a Discord guild beside their knowledge base (guild-<id>-channel-<id>):
# the bot acts on the row's guild id (its start settles a thread's pending exchange, forgets a thread, or
# resumes a history import in the store of the guild the row names), so a row of guild 42's store naming
# guild 999 would make it change guild 999's store.
_GUILD_COLUMNS = (
    ("channel settings", "bot_channel_settings"),
    ("threads", "bot_threads"),
    ("message sync settings", "bot_message_sync"),
    ("history imports", "bot_message_imports"),
)
_OTHER_GUILD = (
    "typeof(guild_id) != 'integer' OR typeof(kb) != 'text' "
    "OR substr(kb, 1, length('guild-' || guild_id || '-')) != 'guild-' || guild_id || '-'"
)


def _check_row_guilds(conn: sqlite3.Connection, archive: Path) -> None:
    """Each bot row's guild id is the guild of its knowledge base's name (`_GUILD_COLUMNS`)."""
    present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for what, table in _GUILD_COLUMNS:
        if table not in present:
            continue
        found = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {_OTHER_GUILD}").fetchone()[0]  # noqa: S608
        if found:
            raise ArchiveRefused(
                archive, f"its database has {found:,} {what} ({table}) whose guild id is not their knowledge base's guild"
            )


def _check_node_length(conn: sqlite3.Connection, limit: int, archive: Path) -> None:
    """No node longer than this data directory lets one be (RAPTOR_NODE_MAX_CHARS): every question and
    answer reads nodes whole, so one of 100 MB would cost that much memory each time it is reached."""
    longest = conn.execute("SELECT MAX(length(text)) FROM nodes").fetchone()[0]
    if longest is not None and longest > limit:
        raise ArchiveRefused(
            archive, f"its database has a node of {longest:,} characters, over this data directory's limit of {limit:,}"
        )


# A control character the project never stores (`strip_unsafe` removes them: every C0 code but tab, line
# feed, form feed and carriage return; DEL; C1), or JSON's escape of one (a node's heading is a JSON list).
_UNSHOWABLE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]|\\u00(?:0[0-8bBeEfF]|1[0-9a-fA-F]|7[fF]|[89][0-9a-fA-F])")
# What the CLI and the bot print from a store: the loaders and the name cleaning never store such a
# character in them, so one there is a terminal escape or worse, written into the database by hand.
_SHOWN_COLUMNS = (
    ("knowledge base names", "kbs", "name"),
    ("document names", "documents", "name"),
    ("names of who added a document", "documents", "added_by"),
    ("nodes' texts", "nodes", "text"),
    ("nodes' headings", "nodes", "heading"),
)


def _check_shown_text(conn: sqlite3.Connection, archive: Path) -> None:
    """Nothing the CLI prints or the bot posts from the store holds a control character: `raptor docs`
    printed an imported document's name with its escape sequences (a window title, a cleared screen)."""
    conn.create_function("raptor_unshowable", 1, lambda text: isinstance(text, str) and bool(_UNSHOWABLE.search(text)))
    for what, table, column in _SHOWN_COLUMNS:
        found = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE raptor_unshowable({column})").fetchone()[0]
        if found:
            raise ArchiveRefused(
                archive, f"its database has control characters (terminal escapes) in {found:,} of its {what}"
            )


# Columns of the bot's tables that hold a JSON list of ids, or NULL: what each is, its table, the ids' kind.
_ID_LISTS = (
    ("the Discord messages of its thread turns (posted_ids)", "bot_turns", "posted_ids", "message ids"),
    ("the messages its thread answers drew on (message_ids)", "bot_turns", "message_ids", "message ids"),
    ("the nodes its recorded removals took (bot_removals.nodes)", "bot_removals", "nodes", "node ids"),
)
# A removal record dated by no number, or after the import: each answer saved later is checked against the
# removals dated after its retrieval began, and a finished record goes an hour after its date, so such a
# row would redact those nodes in every answer saved from then on, and be read at each save, for good.
_UNDATED_REMOVALS = "SELECT COUNT(*) FROM bot_removals WHERE typeof(at) NOT IN ('integer', 'real') OR at > ?"
_NOT_AN_ID_LIST = (
    "{c} IS NOT NULL AND CASE WHEN json_valid({c}) THEN json_type({c}) != 'array' OR EXISTS "
    "(SELECT 1 FROM json_each({c}) WHERE type != 'integer') ELSE 1 END"
)


def _check_id_lists(conn: sqlite3.Connection, archive: Path) -> None:
    """The bot's lists of ids are lists of integers, as the bot writes them: one that is not made a member's
    deleted question stay in its thread's memory (its deletion could not be matched). Its removal records
    are dated before the import (`_UNDATED_REMOVALS`)."""
    present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for what, table, column, kind in _ID_LISTS:
        if table not in present:
            continue
        found = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {_NOT_AN_ID_LIST.format(c=column)}").fetchone()[0]
        if found:
            raise ArchiveRefused(archive, f"its database has {found:,} rows whose list of {what} is not a list of {kind}")
    if "bot_removals" in present:
        found = conn.execute(_UNDATED_REMOVALS, [time.time()]).fetchone()[0]
        if found:
            raise ArchiveRefused(
                archive, f"its database has {found:,} removal records (bot_removals) dated after now or by no number"
            )


def _build_indices(staging: Path, archive: Path) -> None:
    """Open the unpacked file as a store (pending migrations run), check the store's invariants, and
    build every knowledge base's index from its rows: indices are never taken from an archive."""
    try:
        store = Store(staging / DB_NAME)
    except sqlite3.Error as exc:
        raise ArchiveRefused(archive, "its database is damaged") from exc
    try:
        if problems := store.integrity_problems():
            raise ArchiveRefused(archive, f"its database is inconsistent ({problems[0]})")
        with store.write() as db:
            _advance_node_ids(db)  # new node ids start past every stored one, whatever its meta says
        store.rebuild_text_index()  # the full-text index too is built from the rows, never taken as is
        indexes = IndexManager(store, staging / INDEX_DIR)
        for kb in store.kb_names():
            kb_id = store.require_kb(kb)
            if not np.isfinite(store.embeddings(kb_id)[1]).all():  # NaN or infinity: no distance to it means anything
                raise ValueError(f"knowledge base {kb_id} has a vector that is not finite")
            indexes.rebuild(kb_id)
    except (ValueError, RuntimeError, sqlite3.Error) as exc:
        raise ArchiveRefused(archive, "its database holds vectors that cannot be indexed") from exc
    finally:
        store.close()
