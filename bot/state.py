"""The bot's own small tables in the engine's SQLite file (never the engine's tables).

Kept here so per-channel settings, the threads the bot opened with their question/answer turns, and
the context behind each answer survive restarts. Every call runs in a worker thread: the engine may
hold SQLite's single write lock during a build, and waiting for it must not stall the event loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from raptor_engine.db import connect
from raptor_engine.migrations import Migrations
from raptor_engine.types import ContextNode, Turn

BUSY_TIMEOUT_MS = 30_000
MAX_HISTORY_TURNS = 12
MAX_ANSWERS_PER_KB = 1000  # a channel keeps the context of its answers among the last 1,000 given


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class ThreadRecord:
    """A thread the bot opened on an answer: follow-ups in it use `kb` and the stored turns."""

    thread_id: int
    kb: str
    guild_id: int
    channel_id: int


@dataclass
class StoredAnswer:
    """The question and retrieved nodes behind one answer, for the 'Show context' pages."""

    answer_id: int
    kb: str
    question: str
    nodes: list[ContextNode]
    tokens_used: int
    budget: int
    cited: list[int] = field(default_factory=list)  # node ids the answer's [n] markers point at


bot_migrations = Migrations("bot")


@bot_migrations
def m001_bot_tables(db: sqlite_utils.Database) -> None:
    """The tables as the first releases created them (IF NOT EXISTS: a database made then is left as is)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_channel_settings (
            kb TEXT PRIMARY KEY, guild_id INTEGER, channel_id INTEGER, autoingest INTEGER,
            updated_by TEXT, updated_at TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_guild_settings (
            guild_id INTEGER PRIMARY KEY, manager_role_id INTEGER, updated_by TEXT, updated_at TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_threads (
            thread_id INTEGER PRIMARY KEY, kb TEXT, guild_id INTEGER, channel_id INTEGER,
            opened_by TEXT, created_at TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_turns (
            id INTEGER PRIMARY KEY, thread_id INTEGER, role TEXT, content TEXT, created_at TEXT)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS idx_bot_turns_thread_id ON bot_turns (thread_id)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_answers (
            id INTEGER PRIMARY KEY, kb TEXT, question TEXT, context_json TEXT, created_at TEXT)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS idx_bot_answers_kb ON bot_answers (kb)")


class BotState:
    """Async facade over the bot_* tables; one connection guarded by a lock, used from worker threads."""

    def __init__(self, db_path: Path):
        self._db = connect(db_path, busy_timeout_ms=BUSY_TIMEOUT_MS)
        self._lock = threading.Lock()
        self._closed = False
        bot_migrations.apply(self._db)

    async def _run(self, fn: Any, *args: Any) -> Any:
        def locked() -> Any:
            with self._lock:
                if self._closed:
                    raise RuntimeError("bot state is closed")
                return fn(*args)

        return await asyncio.to_thread(locked)

    # ------------------------------------------------------------------ channel and guild settings

    async def autoingest_enabled(self, kb: str) -> bool:
        def read() -> bool:
            rows = list(self._db.query("select autoingest from bot_channel_settings where kb = ?", [kb]))
            return bool(rows and rows[0]["autoingest"])

        return await self._run(read)

    async def set_autoingest(self, kb: str, guild_id: int, channel_id: int, enabled: bool, by: str) -> None:
        row = {
            "kb": kb,
            "guild_id": guild_id,
            "channel_id": channel_id,
            "autoingest": int(enabled),
            "updated_by": by,
            "updated_at": _now(),
        }
        await self._run(lambda: self._db["bot_channel_settings"].upsert(row, pk="kb"))

    async def manager_role_id(self, guild_id: int) -> int | None:
        def read() -> int | None:
            rows = list(
                self._db.query(
                    "select manager_role_id from bot_guild_settings where guild_id = ?", [guild_id]
                )
            )
            return rows[0]["manager_role_id"] if rows else None

        return await self._run(read)

    async def set_manager_role(self, guild_id: int, role_id: int | None, by: str) -> None:
        def write() -> None:
            if role_id is None:
                self._db.execute("delete from bot_guild_settings where guild_id = ?", [guild_id])
                self._db.conn.commit()
                return
            self._db["bot_guild_settings"].upsert(
                {"guild_id": guild_id, "manager_role_id": role_id, "updated_by": by, "updated_at": _now()},
                pk="guild_id",
            )

        await self._run(write)

    # ------------------------------------------------------------------ threads and turns

    async def add_thread(self, record: ThreadRecord, opened_by: str) -> None:
        row = {
            "thread_id": record.thread_id,
            "kb": record.kb,
            "guild_id": record.guild_id,
            "channel_id": record.channel_id,
            "opened_by": opened_by,
            "created_at": _now(),
        }
        await self._run(lambda: self._db["bot_threads"].upsert(row, pk="thread_id"))

    async def thread(self, thread_id: int) -> ThreadRecord | None:
        def read() -> ThreadRecord | None:
            rows = list(self._db.query("select * from bot_threads where thread_id = ?", [thread_id]))
            if not rows:
                return None
            r = rows[0]
            return ThreadRecord(r["thread_id"], r["kb"], r["guild_id"], r["channel_id"])

        return await self._run(read)

    async def add_turns(self, thread_id: int, turns: list[Turn]) -> None:
        rows = [
            {"thread_id": thread_id, "role": t.role, "content": t.content, "created_at": _now()}
            for t in turns
        ]
        await self._run(lambda: self._db["bot_turns"].insert_all(rows))

    async def history(self, thread_id: int, limit: int = MAX_HISTORY_TURNS) -> list[Turn]:
        """The thread's most recent turns, oldest first (bounded so prompts stay small)."""

        def read() -> list[Turn]:
            rows = list(
                self._db.query(
                    "select role, content from bot_turns where thread_id = ? order by id desc limit ?",
                    [thread_id, limit],
                )
            )
            return [Turn(r["role"], r["content"]) for r in reversed(rows)]

        return await self._run(read)

    async def forget_thread(self, thread_id: int) -> None:
        def write() -> None:
            with self._db.conn:
                self._db.execute("delete from bot_turns where thread_id = ?", [thread_id])
                self._db.execute("delete from bot_threads where thread_id = ?", [thread_id])

        await self._run(write)

    # ------------------------------------------------------------------ answers (for 'Show context')

    async def save_answer(
        self,
        kb: str,
        question: str,
        nodes: list[ContextNode],
        tokens_used: int,
        budget: int,
        cited: Sequence[int] = (),
    ) -> int:
        payload = json.dumps(
            {
                "tokens_used": tokens_used,
                "budget": budget,
                "cited": [int(i) for i in cited],
                "nodes": [
                    {
                        "node_id": n.node_id,
                        "layer": n.layer,
                        "document": n.document,
                        "score": n.score,
                        "text": n.text,
                        "tokens": n.tokens,
                        "leaf_count": n.leaf_count,
                        "page": n.page,
                        "heading": list(n.heading),
                        "drawn_from": [list(d) for d in n.drawn_from],
                        "page_marks": [list(m) for m in n.page_marks],
                    }
                    for n in nodes
                ],
            }
        )

        def write() -> int:
            table = self._db["bot_answers"]
            table.insert({"kb": kb, "question": question, "context_json": payload, "created_at": _now()})
            answer_id = int(table.last_pk)
            with self._db.conn:  # keep the newest answers' context only; older buttons say it is gone
                self._db.execute(
                    "delete from bot_answers where kb = ? and id <= ?", [kb, answer_id - MAX_ANSWERS_PER_KB]
                )
            return answer_id

        return await self._run(write)

    async def answer(self, answer_id: int) -> StoredAnswer | None:
        def read() -> StoredAnswer | None:
            rows = list(self._db.query("select * from bot_answers where id = ?", [answer_id]))
            if not rows:
                return None
            data = json.loads(rows[0]["context_json"])
            nodes = [
                ContextNode(
                    node_id=n["node_id"],
                    layer=n["layer"],
                    document=n["document"],
                    score=n["score"],
                    text=n["text"],
                    tokens=n["tokens"],
                    leaf_count=n["leaf_count"],
                    page=n["page"],
                    heading=tuple(n["heading"]),
                    drawn_from=tuple((name, leaves) for name, leaves in n.get("drawn_from", [])),
                    page_marks=tuple(tuple(m) for m in n.get("page_marks", ())),
                )
                for n in data["nodes"]
            ]
            return StoredAnswer(
                answer_id,
                rows[0]["kb"],
                rows[0]["question"],
                nodes,
                data["tokens_used"],
                data["budget"],
                data.get("cited", []),  # answers saved before 'Show tree' carry no citations
            )

        return await self._run(read)

    # ------------------------------------------------------------------ deletion

    async def delete_kb(self, kb: str) -> None:
        """Drop everything the bot kept about one channel's knowledge base (channel deleted, guild left)."""

        def write() -> None:
            with self._db.conn:
                self._db.execute(
                    "delete from bot_turns where thread_id in (select thread_id from bot_threads where kb = ?)",
                    [kb],
                )
                self._db.execute("delete from bot_threads where kb = ?", [kb])
                self._db.execute("delete from bot_answers where kb = ?", [kb])
                self._db.execute("delete from bot_channel_settings where kb = ?", [kb])

        await self._run(write)

    async def delete_guild(self, guild_id: int) -> None:
        await self._run(
            lambda: (
                self._db.execute("delete from bot_guild_settings where guild_id = ?", [guild_id]),
                self._db.conn.commit(),
            )
        )

    async def count(self, table: str, **where: Any) -> int:
        """Rows in one bot_* table matching `where` (used by /kb status and by tests)."""
        if not table.startswith("bot_"):
            raise ValueError("only the bot's own tables")
        clause = " and ".join(f"{k} = ?" for k in where) or "1"

        def read() -> int:
            return int(
                next(
                    self._db.query(f"select count(*) as n from {table} where {clause}", list(where.values()))
                )["n"]
            )

        return await self._run(read)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.conn.close()
