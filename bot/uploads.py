"""The record of each accepted upload, so a bot killed mid-build builds the file again on restart.

A row per upload: its knowledge base, file name, sha256, bytes (kept only until the build ends), who
asked and in which channel, and its state: queued (downloaded, waiting for its build) -> running -> done
or failed. On start the bot resubmits every queued or running upload and tells its requester in the
channel. Adding is idempotent by (knowledge base, sha256) in the engine, so an upload whose build had
committed before the bot died is reported as already added, never stored twice.

It lives in its own SQLite file beside the store (data_dir/uploads.db): its rows are the bot's work
queue, not knowledge-base content, and a store split per guild need not carry them.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from raptor_engine.db import connect

UNFINISHED = ("queued", "running")


@dataclass
class Upload:
    id: int
    kb: str
    filename: str
    sha256: str
    data: bytes
    added_by: str
    channel_id: int | None
    requester_id: int | None
    status: str


class UploadLog:
    """Blocking calls on a small SQLite file: run them in a thread from the event loop."""

    def __init__(self, path: str | Path):
        self.db = connect(path, autocommit=True)
        self._lock = threading.Lock()
        self.db.execute(
            """CREATE TABLE IF NOT EXISTS uploads (
                id INTEGER PRIMARY KEY, kb TEXT NOT NULL, filename TEXT NOT NULL, sha256 TEXT NOT NULL,
                data BLOB, added_by TEXT NOT NULL, channel_id INTEGER, requester_id INTEGER,
                status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL,
                updated_at REAL NOT NULL)"""
        )
        self.db.execute("CREATE INDEX IF NOT EXISTS uploads_status ON uploads (status)")

    def accept(
        self, kb: str, filename: str, data: bytes, added_by: str, channel_id: int | None, requester_id: int | None
    ) -> int:
        """Record a downloaded upload as queued; returns its id."""
        now = time.time()
        with self._lock:
            cursor = self.db.execute(
                "INSERT INTO uploads (kb, filename, sha256, data, added_by, channel_id, requester_id, status, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?)",
                [kb, filename, hashlib.sha256(data).hexdigest(), data, added_by, channel_id, requester_id, now, now],
            )
            return int(cursor.lastrowid)

    def mark(self, upload_id: int, status: str, error: str = "") -> None:
        """Move an upload to `status`; a finished one drops its bytes (nothing will need them again)."""
        keep = status in UNFINISHED
        with self._lock:
            self.db.execute(
                "UPDATE uploads SET status = ?, error = ?, updated_at = ?"
                + ("" if keep else ", data = NULL")
                + " WHERE id = ?",
                [status, error, time.time(), upload_id],
            )

    def unfinished(self) -> list[Upload]:
        """Uploads a previous run of the bot accepted and did not finish, oldest first."""
        with self._lock:
            rows = self.db.execute(
                "SELECT id, kb, filename, sha256, data, added_by, channel_id, requester_id, status FROM uploads "
                "WHERE status IN (?, ?) ORDER BY id",
                list(UNFINISHED),
            ).fetchall()
        return [Upload(*row) for row in rows]

    def status(self, upload_id: int) -> str | None:
        with self._lock:
            row = self.db.execute("SELECT status FROM uploads WHERE id = ?", [upload_id]).fetchone()
        return row[0] if row else None

    def close(self) -> None:
        self.db.conn.close()
