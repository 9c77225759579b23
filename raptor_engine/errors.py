"""Errors a user may see. Each message is one clear sentence; logs carry the detail."""

from __future__ import annotations

import difflib
import errno
import sqlite3


class RaptorError(Exception):
    """Base class: anything the engine refuses or cannot do, said in one sentence."""


class IngestError(RaptorError):
    """A file could not be ingested. Nothing was stored."""

    def __init__(self, filename: str, reason: str):
        self.filename = filename
        self.reason = reason
        super().__init__(f"{filename}: {reason}")


class LimitError(RaptorError):
    """A configured bound (size, documents, tokens, rate) would be exceeded."""


class NotFoundError(RaptorError):
    """A knowledge base or document that does not exist."""


def did_you_mean(wanted: str, names: list[str]) -> str:
    """' Did you mean 'x'?' for the one of `names` closest to a name that matched none (case and a typo
    apart: difflib's ratio 0.6 on the case-folded names), or '' when none is close; never `wanted` itself."""
    close = closest_name(wanted, names)
    return f" Did you mean {close!r}?" if close else ""


def closest_name(wanted: str, names: list[str]) -> str | None:
    """`did_you_mean`'s name, or None."""
    folded = {name.casefold(): name for name in names if name != wanted}
    close = difflib.get_close_matches(wanted.casefold(), list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None


class BackendError(RaptorError):
    """An LLM backend failed after its retries; the previous tree is untouched."""


class StorageError(RaptorError):
    """The data directory itself failed (full, read-only, not permitted, its database damaged); nothing
    was stored."""


# What SQLite says of a database file cut short or overwritten: the source of truth, which nothing rebuilds.
DAMAGED_DATABASE = ("database disk image is malformed", "file is not a database")


class DamagedDatabaseError(sqlite3.DatabaseError):
    """SQLite's complaint of a damaged file, with the file it was about (SQLite names none)."""

    def __init__(self, error: sqlite3.DatabaseError, path: object):
        super().__init__(str(error))
        self.path = path


def is_damaged_database(error: BaseException) -> bool:
    """Whether SQLite found its database file damaged (not locked, full or read-only)."""
    return isinstance(error, sqlite3.DatabaseError) and any(sign in str(error).lower() for sign in DAMAGED_DATABASE)


def damaged_store(path: object, error: BaseException) -> str:
    """What doctor and `guilds list` say of one store whose database is damaged (a phrase, no capital)."""
    return f"the database {path} is damaged ({error}); restore it from a backup"


def storage_failure(error: BaseException, where: str = "") -> str | None:
    """One sentence for a failure of the disk or file system under the data directory (`where` names
    it), or None for any other error.

    SQLite reports these without a path ("database or disk is full", "attempt to write a readonly
    database", "unable to open database file"); the OS with one (ENOSPC, EROFS, EACCES)."""
    directory = f"The data directory {where}".rstrip() if where else "The data directory"
    if isinstance(error, sqlite3.Error):
        text = str(error).lower()
        if "disk is full" in text:
            return f"{directory} is on a full disk."
        if "readonly" in text or "unable to open database file" in text:
            return f"{directory} is read-only, or this user may not write it."
        if is_damaged_database(error):
            named = f": {error.path}" if isinstance(error, DamagedDatabaseError) else ""
            return (
                f"{directory} holds a damaged database ({error}{named}); restore its database from a backup "
                "(raptor doctor rebuilds only the indices)."
            )
        return None
    if isinstance(error, OSError):
        path = f" ({error.filename})" if error.filename else ""
        if error.errno == errno.ENOSPC:
            return f"{directory} is on a full disk{path}."
        if error.errno == errno.EROFS:
            return f"{directory} is on a read-only file system{path}."
        if error.errno in (errno.EACCES, errno.EPERM):
            return f"{directory} may not be written by this user{path}."
    return None


def storage_error(error: BaseException, where: str = "") -> StorageError | None:
    """`error` as a StorageError with its one sentence, when it is a failure of the data directory."""
    sentence = storage_failure(error, where)
    return StorageError(sentence) if sentence is not None else None
