"""The record of each accepted upload, so a bot stopped before an upload was built builds it on restart.

A row per upload: its knowledge base, file name, who asked and in which channel, where Discord serves it
(url and declared size), and its state. An upload is recorded `waiting` as soon as it is accepted, before
it waits for its channel's queue and a build slot, with no bytes yet; once downloaded it keeps its bytes
and sha256 and is `queued`, then `running` (each start counted), then `done` or `failed` (the bytes are
dropped then). On start
the bot builds every unfinished upload again and tells its requester in the channel: a `waiting` one is
downloaded again from its url first, and one whose link no longer works is marked failed and its requester
asked to post the file again; one started RAPTOR_BUILD_ATTEMPTS times already is marked failed and its
requester told so, instead of starting it once more. Each row also keeps where its request's status
message is (and, for an interaction's response, the token that edits it while Discord honours it, dropped
when the upload finishes, and the message its file was posted in, if any, so a resumed build's document
still leaves with that message): the next start turns that message's ⏳ lines into a sentence saying the bot
restarted, instead of leaving them spinning forever. Adding is idempotent by (knowledge base, sha256) in the engine, so an upload
whose build had committed before the bot died is reported as already added, never stored twice.

It lives in its own SQLite file beside the store (data_dir/uploads.db): its rows are the bot's work
queue, not knowledge-base content, and a store split per guild need not carry them. A file written by an
earlier release (without url and size) gains those columns when opened.

A full disk must not leave a row `waiting` after its requester was told the file was not added (the
next start would add it after all): beside the file lies a reserve (`uploads.db.reserve`, 1 MiB of
zeros) that a state change failing for lack of space deletes, to write the state in the room it
frees; the next start makes the reserve again when there is room.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import astuple, dataclass
from pathlib import Path

from raptor_engine.errors import RaptorError
from raptor_engine.storage.db import connect, immediate, scrub

log = logging.getLogger(__name__)

UNFINISHED = ("waiting", "queued", "running")
RESERVE_BYTES = 1024 * 1024
# Columns added after the first release, with the value old rows get (ALTER TABLE ... ADD COLUMN).
ADDED_COLUMNS = {
    "url": "TEXT NOT NULL DEFAULT ''",
    "size": "INTEGER NOT NULL DEFAULT 0",
    "attempts": "INTEGER NOT NULL DEFAULT 0",  # times its build was started (`begin`)
    # where its request's status message is, so a restarted bot can close it (`shown_at`)
    "status_message_id": "INTEGER NOT NULL DEFAULT 0",
    "status_token": "TEXT NOT NULL DEFAULT ''",
    "status_until": "REAL NOT NULL DEFAULT 0",
    # the message that posted the file (0: none, a /kb add), so a resumed build records it (`Post`)
    "post_channel_id": "INTEGER NOT NULL DEFAULT 0",
    "post_message_id": "INTEGER NOT NULL DEFAULT 0",
    "post_attachment_id": "INTEGER NOT NULL DEFAULT 0",
    "post_author_id": "INTEGER NOT NULL DEFAULT 0",
}


@dataclass(frozen=True)
class Post:
    """The Discord message an attachment was posted in: its document leaves when the message does
    (bot/posted.py), whether it is built now or by a restarted bot resuming it."""

    channel_id: int
    message_id: int
    attachment_id: int
    author_id: int


@dataclass(frozen=True)
class Source:
    """An accepted attachment before download: what fetching it again needs."""

    filename: str
    url: str
    size: int  # as Discord declared it; the download itself is bounded by the size limit
    post: Post | None = None  # the message it was posted in; None for a /kb add (an interaction's file)


@dataclass
class Upload:
    id: int
    kb: str
    filename: str
    sha256: str  # '' until downloaded
    data: bytes | None  # None until downloaded, and again once finished
    added_by: str
    channel_id: int | None
    requester_id: int | None
    status: str
    url: str
    size: int
    attempts: int = 0  # times its build was started, by this run and the ones before
    status_message_id: int = 0  # its request's status message (0: none known)
    status_token: str = ""  # the interaction token that can edit it ('' for a channel message)
    status_until: float = 0.0  # when that token stops working (wall clock)
    post_channel_id: int = 0
    post_message_id: int = 0
    post_attachment_id: int = 0
    post_author_id: int = 0

    @property
    def post(self) -> Post | None:
        """The message its file was posted in, or None (a /kb add, or a row of an earlier release)."""
        if not self.post_message_id:
            return None
        return Post(self.post_channel_id, self.post_message_id, self.post_attachment_id, self.post_author_id)


class UploadLog:
    """Blocking calls on a small SQLite file: run them in a thread from the event loop."""

    def __init__(self, path: str | Path):
        self.db = connect(path, autocommit=True)
        self.reserve = Path(f"{path}.reserve")
        self._make_reserve()
        self._lock = threading.Lock()  # one statement at a time on the shared connection, and none after close
        self._closed = False
        self.db.execute(
            """CREATE TABLE IF NOT EXISTS uploads (
                id INTEGER PRIMARY KEY, kb TEXT NOT NULL, filename TEXT NOT NULL, sha256 TEXT NOT NULL,
                data BLOB, added_by TEXT NOT NULL, channel_id INTEGER, requester_id INTEGER,
                status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL,
                updated_at REAL NOT NULL, url TEXT NOT NULL DEFAULT '', size INTEGER NOT NULL DEFAULT 0)"""
        )
        self._add_missing_columns()
        self.db.execute("CREATE INDEX IF NOT EXISTS uploads_status ON uploads (status)")

    def _add_missing_columns(self) -> None:
        """Bring a file of an earlier release up to date; in one transaction, so two processes opening it
        at once do not both add a column."""
        with immediate(self.db.conn) as conn:
            have = {row[1] for row in conn.execute("PRAGMA table_info(uploads)")}
            for name, declaration in ADDED_COLUMNS.items():
                if name not in have:
                    conn.execute(f"ALTER TABLE uploads ADD COLUMN {name} {declaration}")

    def accept(
        self, kb: str, sources: list[Source], added_by: str, channel_id: int | None, requester_id: int | None
    ) -> list[int]:
        """Record accepted attachments as waiting (all or none); returns their ids in order."""
        now = time.time()
        ids = []
        with self._using(), immediate(self.db.conn) as conn:
            for source in sources:
                row = [kb, source.filename, added_by, channel_id, requester_id]
                post = source.post or Post(0, 0, 0, 0)
                cursor = conn.execute(
                    "INSERT INTO uploads (kb, filename, sha256, data, added_by, channel_id, "
                    "requester_id, status, created_at, updated_at, url, size, post_channel_id, "
                    "post_message_id, post_attachment_id, post_author_id) "
                    "VALUES (?, ?, '', NULL, ?, ?, ?, 'waiting', ?, ?, ?, ?, ?, ?, ?, ?)",
                    [*row, now, now, source.url, source.size, *astuple(post)],
                )
                ids.append(int(cursor.lastrowid or 0))
        return ids

    def downloaded(self, upload_id: int, data: bytes) -> None:
        """Keep a waiting upload's bytes: from now on a restart builds it without downloading again."""
        with self._using():
            self.db.execute(
                "UPDATE uploads SET data = ?, sha256 = ?, status = 'queued', updated_at = ? WHERE id = ?",
                [data, hashlib.sha256(data).hexdigest(), time.time(), upload_id],
            )

    def shown_at(self, upload_ids: list[int], message_id: int, token: str, until: float) -> None:
        """Where the status message of these unfinished uploads is (`token`: the interaction token that
        edits it, until `until`; '' for a channel message): a restarted bot closes it (bot/adding.py)."""
        marks = ", ".join("?" * len(upload_ids))
        with self._using():
            self.db.execute(
                f"UPDATE uploads SET status_message_id = ?, status_token = ?, status_until = ? "
                f"WHERE id IN ({marks}) AND status IN (?, ?, ?)",
                [message_id, token, until, *upload_ids, *UNFINISHED],
            )

    def mark(self, upload_id: int, status: str, error: str = "") -> None:
        """Move an upload to `status` (`error`: the reason its requester was told); a finished one drops
        its bytes and its status message's token (nothing will need them again). On a full disk the
        reserve makes room for it."""
        keep = status in UNFINISHED
        sql = "UPDATE uploads SET status = ?, error = ?, updated_at = ?" + (
            "" if keep else ", data = NULL, status_token = ''"
        )
        with self._using():
            try:
                self.db.execute(sql + " WHERE id = ?", [status, error, time.time(), upload_id])
            except sqlite3.OperationalError as failure:
                if "full" not in str(failure) or not self._release_reserve():
                    raise
                self.db.execute(sql + " WHERE id = ?", [status, error, time.time(), upload_id])

    def _make_reserve(self) -> None:
        """Write the reserve if it is missing (best effort: on a full disk the next start tries again)."""
        if self.reserve.exists():
            return
        try:
            with self.reserve.open("wb") as out:
                out.write(bytes(RESERVE_BYTES))
                out.flush()
                os.fsync(out.fileno())
        except OSError as failure:
            self.reserve.unlink(missing_ok=True)
            log.warning("could not write the upload records' reserve %s: %s", self.reserve, failure)

    def _release_reserve(self) -> bool:
        """Delete the reserve to free its room; False when there was none."""
        try:
            self.reserve.unlink()
        except FileNotFoundError:
            return False
        log.warning("the disk is full: released the upload records' reserve to record an outcome")
        return True

    def begin(self, upload_id: int) -> None:
        """Mark an upload running and count the start: a build that never finishes (each start stopped the
        bot, or lost its workers) is given up after RAPTOR_BUILD_ATTEMPTS starts, not resumed forever."""
        with self._using():
            self.db.execute(
                "UPDATE uploads SET status = 'running', attempts = attempts + 1, updated_at = ? WHERE id = ?",
                [time.time(), upload_id],
            )

    def unfinished(self) -> list[Upload]:
        """Uploads a previous run of the bot accepted and did not finish, oldest first."""
        with self._using():
            rows = self.db.execute(
                "SELECT id, kb, filename, sha256, data, added_by, channel_id, requester_id, status, url, "
                "size, attempts, status_message_id, status_token, status_until, post_channel_id, post_message_id, "
                "post_attachment_id, post_author_id FROM uploads WHERE status IN (?, ?, ?) ORDER BY id",
                list(UNFINISHED),
            ).fetchall()
        return [Upload(*row) for row in rows]

    def forget(self, kb: str, sha256: str | None = None) -> int:
        """Drop the finished rows of a document removed from `kb` (by `sha256`; None: every document, a
        /kb clear): a finished row is never read again, and its file name and link must not outlive the
        document. Unfinished rows stay (a file on its way is added after the removal, as asked). Returns
        how many went."""
        where, params = "kb = ? AND status NOT IN (?, ?, ?)", [kb, *UNFINISHED]
        if sha256 is not None:
            where, params = where + " AND sha256 = ?", [*params, sha256]
        with self._using():
            gone = self.db.execute(f"DELETE FROM uploads WHERE {where}", params).rowcount
            if gone:
                scrub(self.db.conn)
        return gone

    def status(self, upload_id: int) -> str | None:
        with self._using():
            row = self.db.execute("SELECT status FROM uploads WHERE id = ?", [upload_id]).fetchone()
        return row[0] if row else None

    @contextlib.contextmanager
    def _using(self) -> Iterator[None]:
        """The connection, alone; RaptorError once closed (a call still in a thread when the bot stops)."""
        with self._lock:
            if self._closed:
                raise RaptorError("The upload records are closed: the bot is stopping.")
            yield

    def close(self) -> None:
        """Close once no statement runs: closing the connection under a running one crashed the process."""
        with self._lock:
            self._closed = True
            self.db.conn.close()
