"""A SQLite cache of LLM summaries, so a rebuild or a retry after a failed build does not pay twice.

It lives in the store's database file, in its own table `summary_cache`. Every call opens a short-lived
connection with WAL and a busy timeout, so it coexists with the store's single writer; calls are
blocking and meant to run in a worker thread (`asyncio.to_thread`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from ..ingest.sentences import ELLIPSIS
from .db import connect, scrub
from .store_migrations import summary_cache_migrations

log = logging.getLogger(__name__)

TABLE = "summary_cache"
BUSY_TIMEOUT_MS = 10_000  # a cache gives up sooner than the store: losing it costs money only


@dataclass(frozen=True)
class CachedSummary:
    text: str
    prompt_tokens: int
    completion_tokens: int


def summary_cache_key(model: str, prompt_version: str, prompt: str, max_tokens: int) -> str:
    """sha256 over everything that changes what the model would write."""
    material = json.dumps([model, prompt_version, prompt, max_tokens], ensure_ascii=False)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class SummaryCache:
    """Get and put summaries by key. A cache that cannot be read or written is logged and skipped:
    losing the cache costs money, not correctness."""

    def __init__(self, db_path: str | Path):
        self.db_path = Path(db_path)
        self._table_ready = False
        self._init_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        """A short-lived autocommit connection (one statement, one short write); migrates once per object."""
        db = connect(self.db_path, autocommit=True, busy_timeout_ms=BUSY_TIMEOUT_MS)
        if not self._table_ready:
            self._migrate(db)
        return db.conn

    def _migrate(self, db: sqlite_utils.Database) -> None:
        """Once per cache object, by one thread: concurrent schema changes would trip over each other."""
        with self._init_lock:
            if not self._table_ready:
                summary_cache_migrations.apply(db)
                self._table_ready = True

    def get(self, key: str) -> CachedSummary | None:
        try:
            conn = self._connect()
            try:
                row = conn.execute(
                    f"SELECT text, prompt_tokens, completion_tokens FROM {TABLE} WHERE key = ?", (key,)
                ).fetchone()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            log.warning("summary cache read failed (%s); asking the model instead", exc)
            return None
        return CachedSummary(row[0], int(row[1] or 0), int(row[2] or 0)) if row else None

    def put(self, key: str, model: str, text: str, prompt_tokens: int, completion_tokens: int) -> None:
        try:
            conn = self._connect()
            try:
                conn.execute(
                    f"INSERT OR REPLACE INTO {TABLE} "
                    "(key, model, text, prompt_tokens, completion_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (key, model, text, prompt_tokens, completion_tokens, time.time()),
                )  # autocommit: one statement, one short write transaction
            finally:
                conn.close()
        except sqlite3.Error as exc:
            log.warning("summary cache write failed (%s); the summary is used but not cached", exc)

    def for_model(self, model: str) -> dict[str, CachedSummary]:
        """Every cached summary of `model`: what a build on a remote worker may reuse (workers.MemoryCache)."""
        try:
            conn = self._connect()
            try:
                rows = conn.execute(
                    f"SELECT key, text, prompt_tokens, completion_tokens FROM {TABLE} WHERE model = ?", (model,)
                ).fetchall()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            log.warning("summary cache read failed (%s); the remote build asks the model instead", exc)
            return {}
        return {row[0]: CachedSummary(row[1], int(row[2] or 0), int(row[3] or 0)) for row in rows}

    def forget_summaries(self, texts: Iterable[str]) -> int:
        """Drop the cached summaries whose text is one of `texts` or was clipped to one (a node keeps its
        summary cut to the node limit with an ellipsis, `summarize.clip_chars`): summaries that quoted text
        since removed for privacy. Returns how many went; a cache that does not exist holds none."""
        wanted = {t for t in texts if t}
        if not wanted or not self.db_path.exists():
            return 0
        try:
            conn = connect(self.db_path, autocommit=True, busy_timeout_ms=BUSY_TIMEOUT_MS).conn
            try:
                removed = self._delete_matching(conn, wanted)
                if removed:
                    scrub(conn)
                return removed
            finally:
                conn.close()
        except sqlite3.Error as exc:
            log.warning("summary cache purge failed (%s); summaries of removed text may remain", exc)
            return 0

    def _delete_matching(self, conn: sqlite3.Connection, wanted: set[str]) -> int:
        """One pass over the cache (its rows are few beside the store's: one per summary ever made)."""
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone() is None:
            return 0
        heads = tuple(t[: -len(ELLIPSIS)] for t in wanted if t.endswith(ELLIPSIS) and len(t) > len(ELLIPSIS))
        keys = [
            (key,)
            for key, text in conn.execute(f"SELECT key, text FROM {TABLE}").fetchall()
            if text in wanted or (heads and str(text).startswith(heads))
        ]
        conn.executemany(f"DELETE FROM {TABLE} WHERE key = ?", keys)
        return len(keys)

    def count(self) -> int:
        conn = self._connect()
        try:
            return int(conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])
        finally:
            conn.close()
