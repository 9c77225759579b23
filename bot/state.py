"""The bot's own small tables, kept in each server's store file beside its knowledge bases.

Kept here so per-channel settings, the threads the bot opened with their question/answer turns, and
the context behind each answer survive restarts. Every row belongs to one Discord server (guild) and
lives in that server's space, `data/guilds/<guild id>/raptor.db` (the engine's `Spaces`, named by
`RAPTOR_SPACE_PATTERN`): leaving a server deletes one directory, and `raptor guilds export` carries
the server's settings and threads with its documents. With the pattern empty every row is in the
root file. Every call runs in a worker thread with its space pinned open: the engine may hold
SQLite's single write lock during a build, and waiting for it must not stall the event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from raptor_engine.errors import NotFoundError
from raptor_engine.storage.removals import (
    REMOVED_DOCUMENT,
    REMOVED_MESSAGE,
    REMOVED_SOURCE,
    PendingRemoval,
    id_pairs,
    is_id,
    quotes,
)
from raptor_engine.storage.spaces import Spaces
from raptor_engine.storage.store import Store
from raptor_engine.storage.store_migrations import bot_migrations
from raptor_engine.types import ContextNode, MessageRef, Turn

from .kb import guild_prefix, kb_name

log = logging.getLogger(__name__)

MAX_HISTORY_TURNS = 12
OPENING_TURNS = 2  # the question that opened a thread and its answer, always in its history
MAX_ANSWERS_PER_KB = 1000  # a channel keeps the context of its answers among the last 1,000 given
RECONCILED_THREADS = 50  # at start, the most recently active threads whose questions are checked in Discord
RECONCILED_DAYS = 30  # ... among those used in the last 30 days


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class ThreadRecord:
    """A thread the bot opened on an answer: follow-ups in it use `kb` and the stored turns."""

    thread_id: int
    kb: str
    guild_id: int
    channel_id: int


@dataclass(frozen=True)
class PostedFile:
    """A document that came from a file attached to a Discord message (auto-ingest, the message menu)."""

    kb: str
    channel_id: int
    message_id: int
    attachment_id: int
    sha256: str
    author_id: int  # who posted the message


def _window(count: int, last: int, limit: int) -> list[int]:
    """Which of a thread's first `count` turns a question is given, by index: the opening exchange, then
    the turns up to `last`, at most `limit` in all (as `BotState.history` gives the latest)."""
    opening = OPENING_TURNS if limit > OPENING_TURNS else 0
    return sorted({*range(min(opening, count)), *range(max(last - (limit - opening) + 1, 0), last + 1)})


@dataclass(frozen=True)
class CitedNodes:
    """What an answer's turn records of its sources: the nodes it cited (their documents are looked up as
    the turn is written) and the removed documents its note named (`BotState.removed_cited`), whose names
    the thread's records then drop."""

    node_ids: Sequence[int]
    told: Sequence[int] = ()
    # Those of `node_ids` that belong to one document (not a cross-document summary): one that is gone when
    # the turn is written was removed while the answer was being made (`_CONTENT_UNLESS_REMOVED`).
    of_documents: Sequence[int] = ()


class GoneDocument(NamedTuple):
    """A document an earlier answer of a thread cited (`cited`), or drew on through a cross-document
    summary it cited, that is no longer in the knowledge base."""

    id: int
    name: str
    cited: bool = True


# The `documents` value of an answer's turn, from (node ids x4, told ids) as JSON texts: the documents of the
# cited nodes ('cited') and those under the cited cross-document summaries ('drawn'), as they are when the
# turn is written, in the turn's own transaction; NULL without them.
_CITED_DOCS = "SELECT n.doc_id FROM nodes n WHERE n.doc_id IS NOT NULL AND n.id IN (SELECT value FROM json_each(?))"
_DOCUMENTS_OF_NODES = (
    "(CASE WHEN ? IS NULL THEN NULL ELSE json_object("
    f"'cited', (SELECT json_group_array(json_array(d.id, d.name)) FROM documents d WHERE d.id IN ({_CITED_DOCS})), "
    "'drawn', (SELECT json_group_array(json_array(d.id, d.name)) FROM documents d WHERE d.id IN "
    "(SELECT l.doc_id FROM nodes n, json_each(n.leaf_ids) j JOIN nodes l ON l.id = j.value "
    "WHERE n.doc_id IS NULL AND n.id IN (SELECT value FROM json_each(?))) "
    f"AND d.id NOT IN ({_CITED_DOCS})), "
    "'told', json(?)) END)"
)


# A turn's content, unless a node of one document its answer cited is gone by the time the turn is written
# (params: those node ids as JSON, the note, the content): that document was removed while the answer was
# being made, after the removal's redaction ran (`_redact_documents`), which would have replaced it so.
_CONTENT_UNLESS_REMOVED = (
    "(CASE WHEN EXISTS (SELECT 1 FROM json_each(?) j WHERE j.value NOT IN (SELECT id FROM nodes)) "
    "THEN ? ELSE ? END)"
)


# Whether a chat message an exchange's answer drew on (params: their ids as JSON, the thread) is no longer held
# by the thread's knowledge base when the exchange is written: it was removed while the answer was being
# made, after that removal's redaction ran (`_redact_turns`), which would have replaced the exchange whole.
# One primary-key look-up a message (not a scan of the knowledge base's messages).
_SOURCE_REMOVED = (
    "EXISTS (SELECT 1 FROM json_each(?) j WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.message_id = j.value "
    "AND m.kb_id = (SELECT k.id FROM kbs k JOIN bot_threads h ON h.kb = k.name WHERE h.thread_id = ?)))"
)


def _content_params(content: str, cited: CitedNodes | None) -> list[str]:
    """The parameters of `_CONTENT_UNLESS_REMOVED` for a turn of `content` citing `cited`."""
    nodes = json.dumps([int(i) for i in cited.of_documents]) if cited is not None else "[]"
    return [nodes, REMOVED_DOCUMENT, content]


def _documents_params(cited: CitedNodes | None) -> list[str | None]:
    """The parameters of `_DOCUMENTS_OF_NODES` (all None: the turn records nothing). `told` is not kept:
    the names it stands for leave the thread's records instead (`_forget_told`)."""
    if cited is None:
        return [None] * 5
    nodes = json.dumps([int(i) for i in cited.node_ids])
    return [nodes, nodes, nodes, nodes, "[]"]


@dataclass
class TurnDocuments:
    """A turn's `documents` record read back (`_turn_documents`): what its answer cited and drew on, the
    removed ones no follow-up has named yet (their names kept only for that), and (stores written before
    names were dropped once named) the ids already named."""

    cited: list[tuple[int, str]] = field(default_factory=list)
    drawn: list[tuple[int, str]] = field(default_factory=list)
    removed: list[GoneDocument] = field(default_factory=list)
    told: set[int] = field(default_factory=set)

    def dumps(self) -> str:
        value: dict[str, Any] = {"cited": [list(p) for p in self.cited], "drawn": [list(p) for p in self.drawn]}
        if self.removed:
            value["removed"] = [[g.id, g.name, g.cited] for g in self.removed]
        value["told"] = sorted(self.told)
        return json.dumps(value)


def _turn_documents(raw: str | None) -> TurnDocuments | None:
    """A turn's `documents` read back; None when it holds none. A store can come from elsewhere (`raptor
    guilds import`): anything not of that shape is passed over, names are only ever shown inert."""
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    removed = [
        GoneDocument(g[0], g[1], bool(g[2]))
        for g in (value.get("removed") if isinstance(value.get("removed"), list) else [])
        if isinstance(g, list) and len(g) == 3 and is_id(g[0]) and isinstance(g[1], str) and isinstance(g[2], bool)
    ]
    told = value.get("told")
    return TurnDocuments(
        id_pairs(value.get("cited")),
        id_pairs(value.get("drawn")),
        removed,
        {i for i in (told if isinstance(told, list) else []) if is_id(i)},
    )


@dataclass
class AskedExchange:
    """A thread's exchange found by its question's Discord message: what an edit of that question needs to
    answer it again in place (bot/answering.py, `handle_edited_follow_up`)."""

    question_row: int
    answer_row: int | None  # None: the question has no stored answer
    question: str  # as stored (the question asked, or as it was searched)
    answer_message_ids: list[int]
    history: list[Turn]  # the turns before it, as `history` would have given them then
    thread_id: int = 0


@dataclass
class PendingExchange:
    """An exchange recorded before its answer was posted, left pending by a bot that stopped meanwhile."""

    record: ThreadRecord
    turn_ids: list[int]  # the question's turn, then the answer's
    question_message_ids: list[int]  # the member's message it answers (none for /ask)
    # the answer's messages when they were posted before it was recorded: the opening exchange of an /ask
    # thread, recorded before the thread is opened on its answer
    answer_message_ids: list[int] = field(default_factory=list)


class LeftQuestion(NamedTuple):
    """A question a stopped bot had not finished handling: a member's message in an answer thread
    (`record` its thread's), or an /ask (`token` its interaction's, working until `token_until`)."""

    guild_id: int
    channel_id: int
    message_id: int  # the message's, or the /ask interaction's id
    asked_at: float
    record: ThreadRecord | None
    token: str | None
    token_until: float
    reply_digest: str | None = None  # a reply that ended its handling was about to be posted (`reply_intended`)
    reply_id: int | None = None  # and was posted: this message


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
    matched: list[int] = field(default_factory=list)  # those of them the support check found, not the model
    hidden: bool = False  # asked under a spoiler: the pages and the tree's caption do not show the question


@dataclass
class MessageImport:
    """A history import (/kb add-messages) on record: where it reads, how far it got, who asked."""

    id: int
    kb: str
    guild_id: int
    source_id: int  # the channel, thread or forum read
    status_channel_id: int | None
    requester_id: int | None
    added_by: str
    remaining: int | None  # messages still to read (None: no limit)
    after_id: int | None  # the last message read: a resumed import starts after it
    status: str  # "running" | "done" | "failed"
    run_id: str = ""  # the run of the bot that started it (Services.run_id)


class BotState:
    """Async facade over the bot_* tables of every server's store file.

    Each call names its server (a knowledge base name carries it; thread and answer calls take the
    guild id), runs in a worker thread, and works on that server's space pinned open through the
    engine's `Spaces`, so its connections count in the memory budget and it is not closed meanwhile.
    Reads of a server with no store answer as if empty (and create nothing); writes create it.
    """

    def __init__(self, spaces: Spaces):
        self._spaces = spaces
        self._migrated: weakref.WeakSet[Store] = weakref.WeakSet()  # open stores whose bot tables are ready
        self._forgotten: dict[int, set[int]] = {}  # guild -> members who opted out (`forgotten`)
        self._closed = False

    def space_of_guild(self, guild_id: int) -> str | None:
        """The space a server's rows live in (None: the root file, when spaces are off)."""
        return self._spaces.space_of(kb_name(guild_id, 0))

    async def _run(
        self, space: str | None, fn: Callable[[Store], Any], *, create: bool, empty: Any = None
    ) -> Any:
        """`fn(store)` in a worker thread on the space's store; `empty` when there is none and `create`
        is False (a read, a deletion, or a server being deleted)."""

        def pinned() -> Any:
            if self._closed:
                raise RuntimeError("bot state is closed")
            try:
                with self._spaces.pinned(space, create=create) as opened:
                    self._ensure_tables(opened.store)
                    return fn(opened.store)
            except NotFoundError:
                if create:
                    raise
                return empty

        return await asyncio.to_thread(pinned)

    def _ensure_tables(self, store: Store) -> None:
        """Bring a store file's bot tables up to date, once per opened store."""
        if store in self._migrated:
            return
        with store._write_lock:
            if store not in self._migrated:
                bot_migrations.apply(store.db)
                self._migrated.add(store)

    async def _read(self, space: str | None, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        return await self._run(
            space, lambda store: list(store.db.query(sql, list(params))), create=False, empty=[]
        )

    async def _read_copies(self, space: str | None, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        """`_read` of the bot's copies of the knowledge bases' text (saved answers, thread turns), after the
        removals another process recorded while the bot ran (`raptor forget`) are finished: a plain read
        finds none pending; only then is the write lock taken (`_finish_pending`)."""

        def read(store: Store) -> list[dict[str, Any]]:
            _finish_pending(store)
            return list(store.db.query(sql, list(params)))

        return await self._run(space, read, create=False, empty=[])

    async def _write(
        self,
        space: str | None,
        statements: list[tuple[str, Sequence[Any]]],
        *,
        create: bool = True,
        scrub: bool = False,
        also: Callable[[Any], bool] | None = None,
    ) -> list[int]:
        """Run the statements in one transaction of the space's store (made if new, when `create`), then
        `also(db)` in it; with `scrub` (or `also` returning True), leave none of the text they deleted or
        replaced readable in the file afterwards (`Store.scrub`). Returns each statement's last row id."""

        def write(store: Store) -> list[int]:
            changed = False
            rows = []
            with store.write() as db:
                for sql, params in statements:
                    rows.append(int(db.execute(sql, list(params)).lastrowid or 0))
                if also is not None:
                    changed = also(db)
            if scrub or changed:
                store.scrub(text_index=False)
            return rows

        return await self._run(space, write, create=create)

    # ------------------------------------------------------------------ channel and guild settings

    async def autoingest_enabled(self, kb: str) -> bool:
        rows = await self._read(
            self._spaces.space_of(kb), "select autoingest from bot_channel_settings where kb = ?", [kb]
        )
        return bool(rows and rows[0]["autoingest"])

    async def set_autoingest(self, kb: str, guild_id: int, channel_id: int, enabled: bool, by: str) -> None:
        sql = """INSERT OR REPLACE INTO bot_channel_settings
                 (kb, guild_id, channel_id, autoingest, updated_by, updated_at) VALUES (?, ?, ?, ?, ?, ?)"""
        await self._write(
            self._spaces.space_of(kb), [(sql, [kb, guild_id, channel_id, int(enabled), by, _now()])]
        )

    async def manager_role_id(self, guild_id: int) -> int | None:
        rows = await self._read(
            self.space_of_guild(guild_id),
            "select manager_role_id from bot_guild_settings where guild_id = ?",
            [guild_id],
        )
        return rows[0]["manager_role_id"] if rows else None

    async def set_manager_role(self, guild_id: int, role_id: int | None, by: str) -> None:
        if role_id is None:
            statement = ("delete from bot_guild_settings where guild_id = ?", [guild_id])
        else:
            statement = (
                """INSERT OR REPLACE INTO bot_guild_settings (guild_id, manager_role_id, updated_by, updated_at)
                   VALUES (?, ?, ?, ?)""",
                [guild_id, role_id, by, _now()],
            )
        await self._write(self.space_of_guild(guild_id), [statement])

    # ------------------------------------------------------------------ chat messages (bot/sync.py)

    async def sync_enabled(self, kb: str) -> bool:
        rows = await self._read(
            self._spaces.space_of(kb), "select enabled from bot_message_sync where kb = ?", [kb]
        )
        return bool(rows and rows[0]["enabled"])

    async def set_sync(self, kb: str, guild_id: int, channel_id: int, enabled: bool, by: str) -> None:
        sql = """INSERT OR REPLACE INTO bot_message_sync (kb, guild_id, channel_id, enabled, updated_by, updated_at)
                 VALUES (?, ?, ?, ?, ?, ?)"""
        await self._write(
            self._spaces.space_of(kb), [(sql, [kb, guild_id, channel_id, int(enabled), by, _now()])]
        )

    async def forget_me(self, guild_id: int, user_id: int) -> None:
        """Record a member's opt-out: their messages are not added to this server's knowledge bases again.
        The live set (`forgotten`) has them at once, so an import already reading stops taking theirs."""
        (await self.forgotten(guild_id)).add(user_id)
        sql = "INSERT OR IGNORE INTO bot_forget_me (guild_id, user_id, created_at) VALUES (?, ?, ?)"
        await self._write(self.space_of_guild(guild_id), [(sql, [guild_id, user_id, _now()])])

    async def forgotten(self, guild_id: int) -> set[int]:
        """The members of a server who asked to be forgotten: one live set per server, read once from the
        store and grown by `forget_me`, so whoever holds it (an import paging history) sees a later opt-out.
        Callers read it and never change it."""
        live = self._forgotten.get(guild_id)
        if live is None:
            rows = await self._read(
                self.space_of_guild(guild_id), "select user_id from bot_forget_me where guild_id = ?", [guild_id]
            )
            live = self._forgotten.setdefault(guild_id, set())
            live.update(int(r["user_id"]) for r in rows)
        return live

    async def start_import(self, record: MessageImport) -> int:
        """Record a history import before it reads anything; returns its id."""

        def write(store: Store) -> int:
            with store.write() as db:
                cursor = db.execute(
                    """INSERT INTO bot_message_imports (kb, guild_id, source_id, status_channel_id, requester_id,
                       added_by, remaining, after_id, status, created_at, updated_at, run_id)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)""",
                    [
                        record.kb,
                        record.guild_id,
                        record.source_id,
                        record.status_channel_id,
                        record.requester_id,
                        record.added_by,
                        record.remaining,
                        record.after_id,
                        _now(),
                        _now(),
                        record.run_id,
                    ],
                )
                return int(cursor.lastrowid or 0)

        return await self._run(self._spaces.space_of(record.kb), write, create=True)

    async def import_progress(self, record: MessageImport) -> None:
        """How far an import got (stored after each batch is in the tree), or its end."""
        sql = "UPDATE bot_message_imports SET remaining = ?, after_id = ?, status = ?, updated_at = ? WHERE id = ?"
        params = [record.remaining, record.after_id, record.status, _now(), record.id]
        await self._write(self._spaces.space_of(record.kb), [(sql, params)], create=False)

    async def unfinished_imports(self, guild_id: int) -> list[MessageImport]:
        rows = await self._read(
            self.space_of_guild(guild_id),
            "select * from bot_message_imports where guild_id = ? and status = 'running' order by id",
            [guild_id],
        )
        return [
            MessageImport(
                r["id"],
                r["kb"],
                r["guild_id"],
                r["source_id"],
                r["status_channel_id"],
                r["requester_id"],
                r["added_by"],
                r["remaining"],
                r["after_id"],
                r["status"],
                r["run_id"],
            )
            for r in rows
        ]

    async def ready_for_removal(self, kb: str) -> None:
        """Make `kb`'s file hold the bot's tables before the bot removes from it, so the engine records the
        removal in its own transaction (storage/removals.py `record_removal`) for `finish_removals`."""
        await self._run(self._spaces.space_of(kb), lambda store: None, create=False)

    async def finish_removals(self, kb: str | None = None, *, space: str | None = None) -> int:
        """Redact what each removal the engine recorded (`record_removal`) and not finished yet asks (of `kb`,
        or of every knowledge base of `space`: at start-up, for removals a crash or a kill cut short, or
        made by another process such as `raptor forget`), marking each finished in the same transaction;
        then scrub the file (the records held the removed text's marks). Returns how many were finished."""
        where = space if kb is None else self._spaces.space_of(kb)
        return await self._run(where, lambda store: _finish_and_scrub(store, kb), create=False, empty=0)

    def _every_space(self) -> list[str | None]:
        """Every store file's space: each server's, or the one root file (None) without spaces."""
        return [None] if self._spaces.pattern is None else list(self._spaces.names())

    async def finish_every_removal(self) -> int:
        """`finish_removals` in every server's store file (start-up); returns how many were finished."""
        done = 0
        for space in self._every_space():
            done += await self.finish_removals(space=space)
        return done

    # ------------------------------------------------------------------ files posted in messages

    async def add_posted_file(self, file: PostedFile) -> None:
        """A document added from a file attached to a message: it leaves when the message does."""
        sql = """INSERT OR REPLACE INTO bot_posted_files
                 (kb, channel_id, message_id, attachment_id, sha256, author_id) VALUES (?, ?, ?, ?, ?, ?)"""
        row = [file.kb, file.channel_id, file.message_id, file.attachment_id, file.sha256, file.author_id]
        await self._write(self._spaces.space_of(file.kb), [(sql, row)])

    async def posted_files(
        self,
        guild_id: int,
        *,
        message_ids: Set[int] = frozenset(),
        channel_id: int | None = None,
        author_id: int | None = None,
        every: bool = False,
    ) -> list[PostedFile]:
        """The documents of a server that came from these messages, from any message of a channel, from
        any message of a member, or (`every`) from any message at all."""
        if every:
            where, params = "1", []
        elif author_id is not None:
            where, params = "author_id = ?", [author_id]
        elif channel_id is not None:
            where, params = "channel_id = ?", [channel_id]
        elif message_ids:
            where, params = f"message_id in ({', '.join('?' * len(message_ids))})", list(message_ids)
        else:
            return []
        rows = await self._read(
            self.space_of_guild(guild_id),
            "select kb, channel_id, message_id, attachment_id, sha256, author_id from bot_posted_files "
            f"where {where}",
            params,
        )
        prefix = guild_prefix(guild_id)
        return [PostedFile(**row) for row in rows if row["kb"].startswith(prefix)]

    async def drop_posted_file(self, file: PostedFile) -> None:
        sql = "delete from bot_posted_files where kb = ? and message_id = ? and attachment_id = ?"
        await self._write(
            self._spaces.space_of(file.kb), [(sql, [file.kb, file.message_id, file.attachment_id])], create=False
        )

    # ------------------------------------------------------------------ threads and turns

    async def add_thread(self, record: ThreadRecord, opened_by: str) -> None:
        await self._write(self._spaces.space_of(record.kb), [_thread_row(record, opened_by)])

    async def thread(self, guild_id: int, thread_id: int) -> ThreadRecord | None:
        rows = await self._read(
            self.space_of_guild(guild_id), "select * from bot_threads where thread_id = ?", [thread_id]
        )
        if not rows:
            return None
        r = rows[0]
        return ThreadRecord(r["thread_id"], r["kb"], r["guild_id"], r["channel_id"])

    async def add_turns(
        self,
        guild_id: int,
        thread_id: int,
        turns: list[Turn],
        message_ids: Sequence[int] = (),
        posted: Sequence[Sequence[int]] = (),
        cited: CitedNodes | None = None,
        *,
        pending: bool = False,
        opened: tuple[ThreadRecord, str] | None = None,
        asked_by: int | None = None,
    ) -> list[int]:
        """One exchange's turns; returns their row ids. `message_ids`: the chat messages its answer drew on
        (`Redaction.apply`; one removed since, no longer held by the thread's knowledge base, makes the
        exchange `REMOVED_MESSAGE`); `posted`: each turn's own Discord messages (the question, the answer's
        messages), for replies; `cited`: the answer's cited nodes, whose documents its turn records in the
        same transaction (`removed_cited`). `pending`: recorded before its answer is posted, so a bot killed
        while posting keeps it; no follow-up is given it until `attach_answer` (`settle_pending`). `opened`:
        the thread (and who opened it) recorded in the same transaction, for its opening exchange.
        `asked_by`: the member who asked it, on its question's turn (`member_exchange`); None for small talk."""
        sources = json.dumps(sorted({int(i) for i in message_ids})) if message_ids else None
        own = [json.dumps([int(i) for i in ids]) if ids else None for ids in posted] + [None] * len(turns)
        sql = (
            "INSERT INTO bot_turns (thread_id, role, content, created_at, message_ids, posted_ids, documents, pending,"
            " asked_by)"
            f" VALUES (?, ?, CASE WHEN {_SOURCE_REMOVED} THEN ? ELSE {_CONTENT_UNLESS_REMOVED} END, ?,"
            f" CASE WHEN {_SOURCE_REMOVED} THEN NULL ELSE ? END, ?, {_DOCUMENTS_OF_NODES}, ?, ?)"
        )
        removed = [sources, thread_id]
        statements = []
        for i, t in enumerate(turns):
            of_answer = cited if t.role == "assistant" else None
            content = [*removed, REMOVED_MESSAGE, *_content_params(t.content, of_answer)]
            params = [thread_id, t.role, *content, _now(), *removed, sources, own[i], *_documents_params(of_answer)]
            asker = asked_by if t.role == "user" else None
            statements.append((sql, [*params, 1 if pending else None, asker]))
        if opened is not None:
            statements.insert(0, _thread_row(*opened))
        ids = await self._write(self.space_of_guild(guild_id), statements, also=_told_by(thread_id, cited))
        return ids[-len(turns) :] if turns else []

    async def attach_answer(self, guild_id: int, turn_ids: Sequence[int], answer_posted: Sequence[int]) -> None:
        """A pending exchange's answer was posted: its messages (`answer_posted`) go on its answer's turn, the
        last of `turn_ids`, and the exchange is no longer pending (follow-ups are given it)."""
        if not turn_ids:
            return
        marks = ",".join("?" * len(turn_ids))
        posted = json.dumps([int(i) for i in answer_posted]) if answer_posted else None
        statements: list[tuple[str, Sequence[Any]]] = [
            ("update bot_turns set posted_ids = ? where id = ? and role = 'assistant'", [posted, turn_ids[-1]]),
            (f"update bot_turns set pending = null where id in ({marks})", list(turn_ids)),
        ]
        await self._write(self.space_of_guild(guild_id), statements, create=False)

    async def drop_pending(self, guild_id: int, turn_ids: Sequence[int], thread_id: int | None = None) -> None:
        """A pending exchange whose answer no member saw (its posting failed, or a start found none in
        Discord) leaves the thread's memory and the file; with `thread_id`, the thread's record too (the
        opening exchange of a thread that was never opened)."""
        if not turn_ids:
            return
        marks = ",".join("?" * len(turn_ids))
        statements: list[tuple[str, Sequence[Any]]] = [
            (f"delete from bot_turns where id in ({marks}) and pending = 1", list(turn_ids))
        ]
        if thread_id is not None:
            statements.append(("delete from bot_threads where thread_id = ?", [thread_id]))
        await self._write(self.space_of_guild(guild_id), statements, create=False, scrub=True)

    async def pending_exchanges(self) -> list[PendingExchange]:
        """Every server's exchanges still pending (a bot stopped between recording and posting them)."""
        found: list[PendingExchange] = []
        for space in self._every_space():
            found += await self._run(space, lambda store: _pending(store.db), create=False, empty=[])
        return found

    async def pending_in_thread(self, guild_id: int, thread_id: int) -> list[PendingExchange]:
        """The thread's exchanges still pending: a stopped bot's, not settled yet (`pending_exchanges`)."""
        return await self._run(
            self.space_of_guild(guild_id), lambda store: _pending(store.db, thread_id), create=False, empty=[]
        )

    async def attach_replacement(
        self, guild_id: int, edited: AskedExchange, turn_ids: Sequence[int], answer_posted: Sequence[int]
    ) -> None:
        """An edited question's new exchange, recorded pending (`turn_ids`) before its answer was posted,
        takes the old one's place (its position in the thread kept; the answer's messages `answer_posted`)
        and its pending rows go, in one transaction; the replaced text is scrubbed from the file."""
        copy = "(select {0} from bot_turns where id = ?)"
        columns = ("content", "message_ids", "documents")
        sets = ", ".join(f"{c} = {copy.format(c)}" for c in columns)
        statements: list[tuple[str, Sequence[Any]]] = [
            (f"update bot_turns set {sets} where id = ?", [turn_ids[0]] * 3 + [edited.question_row])
        ]
        if edited.answer_row is not None and len(turn_ids) > 1:
            posted = json.dumps([int(i) for i in answer_posted]) if answer_posted else None
            statements.append(
                (f"update bot_turns set {sets}, posted_ids = ? where id = ?", [turn_ids[-1]] * 3 + [posted, edited.answer_row])
            )
        marks = ",".join("?" * len(turn_ids))
        statements.append((f"delete from bot_turns where id in ({marks}) and pending = 1", list(turn_ids)))
        await self._write(self.space_of_guild(guild_id), statements, create=False, scrub=True)

    async def turn_texts(self, guild_id: int, turn_ids: Sequence[int]) -> list[str]:
        """The stored text of each turn of `turn_ids`, in order."""
        marks = ",".join("?" * len(turn_ids))
        rows = await self._read(
            self.space_of_guild(guild_id), f"select content from bot_turns where id in ({marks}) order by id", list(turn_ids)
        )
        return [r["content"] for r in rows]

    async def still_pending(self, guild_id: int, turn_ids: Sequence[int]) -> bool:
        """Whether the exchange of `turn_ids` is still pending (not attached or dropped meanwhile)."""
        marks = ",".join("?" * len(turn_ids))
        rows = await self._read(
            self.space_of_guild(guild_id),
            f"select id from bot_turns where id in ({marks}) and pending = 1",
            list(turn_ids),
        )
        return bool(rows)

    async def recent_questions(
        self, *, threads: int = RECONCILED_THREADS, days: float = RECONCILED_DAYS
    ) -> list[tuple[ThreadRecord, list[int]]]:
        """The threads of every server whose last turn is at most `days` old, the most recently active
        first, at most `threads`, each with the Discord messages of the members' questions its follow-ups
        are given (`history`'s turns): what a start checks for questions deleted while the bot was down."""
        since = (datetime.now(UTC) - timedelta(days=days)).isoformat(timespec="seconds")
        found: list[tuple[str, ThreadRecord, list[int]]] = []
        for space in self._every_space():
            found += await self._run(
                space, lambda store: _recent_questions(store.db, since, threads), create=False, empty=[]
            )
        found.sort(key=lambda item: item[0], reverse=True)
        return [(record, ids) for _, record, ids in found[:threads]]

    async def removed_cited(self, guild_id: int, thread_id: int, kb: str) -> list[GoneDocument]:
        """The documents the thread's earlier answers cited, or drew on through a cross-document summary
        they cited, that are no longer in knowledge base `kb` (no document of that id and name), oldest
        first, less those a follow-up's answer already named. Turns stored before their documents were
        recorded add nothing."""
        space = self.space_of_guild(guild_id)
        rows = await self._read(
            space,
            "select documents from bot_turns where thread_id = ? and documents is not null and pending is null order by id",
            [thread_id],
        )
        found: dict[tuple[int, str], bool] = {}  # (id, name) -> cited (not only drawn on)
        removed: dict[tuple[int, str], bool] = {}  # recorded as removed when it was (`Redaction.apply`)
        told: set[int] = set()
        for row in rows:
            record = _turn_documents(row["documents"])
            if record is None:
                continue
            for pair in record.cited:
                found[pair] = True
            for pair in record.drawn:
                found.setdefault(pair, False)
            for gone in record.removed:
                removed[(gone.id, gone.name)] = removed.get((gone.id, gone.name), False) or gone.cited
            told |= record.told
        if not found and not removed:
            return []
        there = await self._documents_there(space, kb)
        for pair, was_cited in found.items():
            if pair not in there and pair not in removed:
                removed[pair] = was_cited
        return [GoneDocument(i, name, was_cited) for (i, name), was_cited in removed.items() if i not in told]

    async def _documents_there(self, space: str | None, kb: str) -> set[tuple[int, str]]:
        present = await self._read(
            space,
            "select d.id, d.name from documents d join kbs k on k.id = d.kb_id where k.name = ?",
            [kb],
        )
        return {(r["id"], r["name"]) for r in present}

    async def reply_history(
        self, guild_id: int, thread_id: int, message_id: int, limit: int = MAX_HISTORY_TURNS
    ) -> tuple[list[Turn], int] | None:
        """For a follow-up replying to Discord message `message_id` (a member's question or one of the bot's
        answer messages in the thread): the turns it is given, as `history` gives them but ending no
        earlier than that message's exchange (its answer included), and that exchange's index among
        their exchanges (the engine's `follows`). None when no turn of the thread holds the message."""
        rows = await self._read(
            self.space_of_guild(guild_id),
            "select id, role, posted_ids from bot_turns where thread_id = ? and pending is null order by id",
            [thread_id],
        )
        at = next((i for i, r in enumerate(rows) if message_id in _id_list(r["posted_ids"])), None)
        if at is None:
            return None
        answered = rows[at]["role"] == "user" and at + 1 < len(rows) and rows[at + 1]["role"] != "user"
        end = at + 1 if answered else at  # the exchange's last turn
        recent = limit - (OPENING_TURNS if limit > OPENING_TURNS else 0)
        # the latest turns when they hold that exchange (the engine then reads it), else those ending with it
        last = len(rows) - 1 if len(rows) - 1 - end < recent else end
        kept = _window(len(rows), last, limit)
        ids = [rows[i]["id"] for i in kept]
        marks = ",".join("?" * len(ids))
        texts = await self._read_copies(
            self.space_of_guild(guild_id),
            f"select id, role, content from bot_turns where id in ({marks}) order by id",
            ids,
        )
        turns = [Turn(r["role"], r["content"]) for r in texts]
        follows = sum(1 for i in kept if i <= end and rows[i]["role"] == "user") - 1
        return turns, max(follows, 0)

    async def member_exchange(self, guild_id: int, thread_id: int, member_id: int) -> int | None:
        """A Discord message of `member_id`'s latest exchange in the thread (its question's, or for an /ask,
        whose question has none, its answer's first), when other turns came after it; None when the member
        asked nothing there, or theirs is the latest (the thread's history reads it anyway).
        Read from the stored turns (`asked_by`), so a restart changes nothing a member's follow-up reads."""
        rows = await self._read(
            self.space_of_guild(guild_id),
            "select id, role, posted_ids, asked_by from bot_turns where thread_id = ? and pending is null "
            "and id >= coalesce((select max(id) from bot_turns where thread_id = ? and pending is null "
            "and role = 'user' and asked_by = ?), 0) order by id",
            [thread_id, thread_id, member_id],
        )
        own = next((i for i, r in enumerate(rows) if r["role"] == "user" and r["asked_by"] == member_id), None)
        if own is None or not any(r["role"] == "user" for r in rows[own + 1 :]):
            return None
        question = _id_list(rows[own]["posted_ids"])
        answered = own + 1 < len(rows) and rows[own + 1]["role"] != "user"
        answer = _id_list(rows[own + 1]["posted_ids"]) if answered else []
        return (question or answer or [None])[0]

    async def asked_exchange(
        self, guild_id: int, thread_id: int, message_id: int, limit: int = MAX_HISTORY_TURNS
    ) -> AskedExchange | None:
        """The exchange whose question is the member's message `message_id`, with the turns before it
        (the opening exchange, then the latest, at most `limit`); None when no question turn holds it."""
        rows = await self._read_copies(
            self.space_of_guild(guild_id),
            "select id, role, content, posted_ids from bot_turns where thread_id = ? and pending is null order by id",
            [thread_id],
        )
        at = next(
            (
                i
                for i, r in enumerate(rows)
                if r["role"] == "user" and message_id in _id_list(r["posted_ids"])
            ),
            None,
        )
        if at is None:
            return None
        answered = at + 1 < len(rows) and rows[at + 1]["role"] != "user"
        answer = rows[at + 1] if answered else None
        kept = _window(at, at - 1, limit)
        return AskedExchange(
            question_row=rows[at]["id"],
            answer_row=answer["id"] if answer else None,
            question=rows[at]["content"],
            answer_message_ids=_id_list(answer["posted_ids"]) if answer else [],
            history=[Turn(rows[i]["role"], rows[i]["content"]) for i in kept],
            thread_id=thread_id,
        )

    async def forget_questions(self, guild_id: int, thread_id: int, message_ids: Set[int]) -> list[int]:
        """Members deleted their questions (`message_ids`) in the thread: each one's exchange (the question
        and its answer) leaves the thread's memory, so no follow-up leans on it, and the file is scrubbed.
        Returns the answers' Discord messages, for the bot to delete (they repeat the question)."""

        def forget(store: Store) -> list[int]:
            with store.write() as db:
                rows = db.execute(
                    "select id, role, posted_ids from bot_turns where thread_id = ? order by id", [thread_id]
                ).fetchall()
                malformed = [turn_id for turn_id, _, posted in rows if _ids(posted) is None]
                if malformed:  # a store from elsewhere (`raptor guilds import`): read as no messages
                    log.warning(
                        "thread %s: %d turn(s) whose posted_ids is not a list of message ids (turn %s, ...) "
                        "are read as having none",
                        thread_id,
                        len(malformed),
                        malformed[0],
                    )
                gone: list[int] = []
                answers: list[int] = []
                for at, (turn_id, role, posted) in enumerate(rows):
                    if role != "user" or not message_ids.intersection(_id_list(posted)):
                        continue
                    gone.append(turn_id)
                    after = rows[at + 1] if at + 1 < len(rows) else None
                    if after is not None and after[1] != "user":
                        gone.append(after[0])
                        answers += _id_list(after[2])
                for turn_id in gone:
                    db.execute("delete from bot_turns where id = ?", [turn_id])
            if gone:
                store.scrub(text_index=False)
            return answers

        return await self._run(self.space_of_guild(guild_id), forget, create=False, empty=[])

    async def forget_answers(self, kb: str, answer_ids: Set[int]) -> None:
        """Drop saved answers of `kb` (their answer messages were deleted with the question they answer)."""
        marks = ", ".join("?" * len(answer_ids))
        sql = f"delete from bot_answers where kb = ? and id in ({marks})"
        await self._write(self._spaces.space_of(kb), [(sql, [kb, *answer_ids])], create=False, scrub=True)

    async def last_question(self, guild_id: int, thread_id: int) -> tuple[str, list[int]] | None:
        """The thread's latest question (not pending) and its Discord message, when its exchange is the
        last one; None when there is none or it has no message (an `/ask`)."""
        rows = await self._read(
            self.space_of_guild(guild_id),
            "select role, content, posted_ids from bot_turns where thread_id = ? and pending is null "
            "order by id desc limit 2",
            [thread_id],
        )
        question = next((r for r in rows if r["role"] == "user"), None)
        ids = _id_list(question["posted_ids"]) if question else []
        return (question["content"], ids) if question and ids else None

    async def history(self, guild_id: int, thread_id: int, limit: int = MAX_HISTORY_TURNS) -> list[Turn]:
        """The thread's opening exchange, then its most recent turns, oldest first; at most `limit` turns,
        so prompts stay small. The opening question is what the thread is about (it is named after it):
        after more vague follow-ups ("say more", "how so?") than the limit holds, a "she" still means
        whom that question asked about."""
        opening = OPENING_TURNS if limit > OPENING_TURNS else 0
        rows = await self._read_copies(
            self.space_of_guild(guild_id),
            "select id, role, content from (select * from bot_turns where thread_id = ? and pending is null "
            "order by id limit ?) "
            "union select id, role, content from "
            "(select * from bot_turns where thread_id = ? and pending is null order by id desc limit ?) order by id",
            [thread_id, opening, thread_id, max(limit - opening, 0)],
        )
        return [Turn(r["role"], r["content"]) for r in rows]

    async def note_question(
        self, guild_id: int, channel_id: int, message_id: int, token: str | None = None, token_until: float = 0.0
    ) -> None:
        """A question arrived: a thread message (`message_id`), or an /ask (the interaction's id, with its
        `token`). Kept, ids only, until `question_done`, so a bot killed before it answers finds it at its
        next start (`left_questions`)."""
        sql = (
            "INSERT OR IGNORE INTO bot_questions (message_id, guild_id, channel_id, asked_at, token, token_until)"
            " VALUES (?, ?, ?, ?, ?, ?)"
        )
        params = [message_id, guild_id, channel_id, time.time(), token, token_until if token else None]
        await self._write(self.space_of_guild(guild_id), [(sql, params)])

    async def question_done(self, guild_id: int, message_id: int) -> None:
        """The question `note_question` kept was handled: answered, refused, or found to ask nothing."""
        sql = "delete from bot_questions where message_id = ?"
        await self._write(self.space_of_guild(guild_id), [(sql, [message_id])], create=False)

    async def reply_intended(self, guild_id: int, message_id: int, digest: str) -> None:
        """A kept question's handling ends in a reply (a refusal) with this digest of its text, about to be
        posted: a restart before `question_done` looks for it before answering the message again."""
        sql = "update bot_questions set reply_digest = ?, reply_id = null where message_id = ?"
        await self._write(self.space_of_guild(guild_id), [(sql, [digest, message_id])], create=False)

    async def reply_posted(self, guild_id: int, message_id: int, reply_id: int) -> None:
        """The reply `reply_intended` noted was posted as message `reply_id`."""
        sql = "update bot_questions set reply_id = ? where message_id = ?"
        await self._write(self.space_of_guild(guild_id), [(sql, [reply_id, message_id])], create=False)

    async def left_questions(self) -> list[LeftQuestion]:
        """Every server's questions a stopped bot had not finished handling, oldest first; a thread message
        of a thread the bot no longer keeps is dropped."""
        found: list[LeftQuestion] = []
        for space in self._every_space():
            found += await self._run(space, _left_questions, create=False, empty=[])
        return sorted(found, key=lambda left: left.asked_at)

    async def forget_thread(self, guild_id: int, thread_id: int) -> None:
        await self._write(
            self.space_of_guild(guild_id),
            [
                ("delete from bot_questions where channel_id = ?", [thread_id]),
                ("delete from bot_turns where thread_id = ?", [thread_id]),
                ("delete from bot_threads where thread_id = ?", [thread_id]),
            ],
            scrub=True,  # the thread was deleted in Discord: its turns leave the file too
        )

    # ------------------------------------------------------------------ answers (for 'Show context')

    async def save_answer(
        self,
        kb: str,
        question: str,
        nodes: list[ContextNode],
        tokens_used: int,
        budget: int,
        cited: Sequence[int] = (),
        matched: Sequence[int] = (),
        since: float | None = None,
        hidden: bool = False,
    ) -> int:
        """Keep an answer's context for its 'Show context' pages; returns its id. `since`: when its retrieval
        began (`time.time()`): its nodes that a removal recorded since then took away (`record_removal`)
        are redacted under the same write, as that removal's redaction, which ran before this answer was
        saved, would have done. `hidden`: the question was asked under a spoiler, so its pages hide it too."""
        context = (
            {
                "hidden": hidden,
                "tokens_used": tokens_used,
                "budget": budget,
                "cited": [int(i) for i in cited],
                "matched": [int(i) for i in matched],
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
                        "message": n.message.to_dict() if n.message else None,
                    }
                    for n in nodes
                ],
            }
        )

        def write(store: Store) -> int:
            with store.write() as db:  # keep the newest answers' context only; older buttons say it is gone
                if since is not None:
                    _without_removed_since(db, kb, since, context["nodes"])
                payload = json.dumps(context)
                cursor = db.execute(
                    "INSERT INTO bot_answers (kb, question, context_json, created_at) VALUES (?, ?, ?, ?)",
                    [kb, question, payload, _now()],
                )
                answer_id = int(cursor.lastrowid or 0)
                db.execute(
                    "delete from bot_answers where kb = ? and id <= ?", [kb, answer_id - MAX_ANSWERS_PER_KB]
                )
            return answer_id

        return await self._run(self._spaces.space_of(kb), write, create=True)

    async def answer(self, guild_id: int | None, answer_id: int) -> StoredAnswer | None:
        if guild_id is None:  # answers are kept per server; a DM has none
            return None
        rows = await self._read_copies(
            self.space_of_guild(guild_id), "select * from bot_answers where id = ?", [answer_id]
        )
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
                message=MessageRef(**n["message"]) if n.get("message") else None,
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
            data.get("matched", []),  # nor, before the support check, matched ones
            bool(data.get("hidden", False)),
        )

    # ------------------------------------------------------------------ deletion

    async def delete_kb(self, kb: str) -> None:
        """Drop everything the bot kept about one channel's knowledge base (channel deleted, guild left)."""
        await self._write(
            self._spaces.space_of(kb),
            [
                (
                    "delete from bot_questions where channel_id in (select thread_id from bot_threads where kb = ?)",
                    [kb],
                ),
                (
                    "delete from bot_turns where thread_id in (select thread_id from bot_threads where kb = ?)",
                    [kb],
                ),
                ("delete from bot_threads where kb = ?", [kb]),
                ("delete from bot_answers where kb = ?", [kb]),
                ("delete from bot_channel_settings where kb = ?", [kb]),
                ("delete from bot_message_sync where kb = ?", [kb]),
                ("delete from bot_message_imports where kb = ?", [kb]),
                ("delete from bot_posted_files where kb = ?", [kb]),
                ("delete from bot_removals where kb = ?", [kb]),
            ],
            create=False,  # a server with no store has nothing to delete (and gets no store for it)
        )

    async def delete_guild(self, guild_id: int) -> None:
        """Drop every row of one server: its settings, every channel's settings, threads and answers.

        With spaces this empties the server's file, which `Engine.delete_space` then removes whole;
        with the pattern empty it is what removes the server from the root file.
        """
        prefix = guild_prefix(guild_id) + "%"  # digits and '-' only: nothing LIKE would read as a wildcard
        self._forgotten.pop(guild_id, None)
        await self._write(
            self.space_of_guild(guild_id),
            [
                (
                    """delete from bot_turns where thread_id in
                       (select thread_id from bot_threads where guild_id = ? or kb like ?)""",
                    [guild_id, prefix],
                ),
                ("delete from bot_questions where guild_id = ?", [guild_id]),
                ("delete from bot_threads where guild_id = ? or kb like ?", [guild_id, prefix]),
                ("delete from bot_answers where kb like ?", [prefix]),
                ("delete from bot_posted_files where kb like ?", [prefix]),
                ("delete from bot_removals where kb like ?", [prefix]),
                (
                    "delete from bot_channel_settings where guild_id = ? or kb like ?",
                    [guild_id, prefix],
                ),
                ("delete from bot_guild_settings where guild_id = ?", [guild_id]),
                ("delete from bot_message_sync where guild_id = ? or kb like ?", [guild_id, prefix]),
                ("delete from bot_message_imports where guild_id = ? or kb like ?", [guild_id, prefix]),
                ("delete from bot_forget_me where guild_id = ?", [guild_id]),
            ],
            create=False,
            scrub=True,  # with spaces the file goes next; without, the root file keeps other servers
        )

    async def count(self, table: str, *, guild_id: int, **where: Any) -> int:
        """Rows in one bot_* table of one server matching `where` (used by /kb status and by tests)."""
        if not table.startswith("bot_"):
            raise ValueError("only the bot's own tables")
        clause = " and ".join(f"{k} = ?" for k in where) or "1"
        rows = await self._read(
            self.space_of_guild(guild_id),
            f"select count(*) as n from {table} where {clause}",
            list(where.values()),
        )
        return int(rows[0]["n"]) if rows else 0

    def close(self) -> None:
        """Refuse further calls; the connections are the engine's spaces' and close with the engine."""
        self._closed = True


KEEP_REMOVALS_S = 3600.0  # a finished removal's node ids are kept this long, for answers written meanwhile


class Redaction(PendingRemoval):
    """What a removal's record asks of a channel's records (`finish_removals`; storage/removals.py): the
    removed messages' ids and quote marks, the nodes that went, the removed documents (id, name), or
    every one."""

    def apply(self, db: Any, kb: str, note: str) -> int:
        """Redact `kb`'s saved answers and thread turns in the open transaction; returns how many changed."""
        names = {name for _, name in self.documents}
        changed = _redact_answers(db, kb, note, self.ids, self.marks, self.node_ids, names, self.every)
        changed += _redact_turns(db, kb, note, self.ids, self.marks)
        if self.documents or self.every:
            changed += _redact_documents(db, kb, note, self.documents, self.every)
        return changed


def _finish_and_scrub(store: Store, kb: str | None) -> int:
    """`BotState.finish_removals` in one store file: the pending removals done in one transaction, then the
    file scrubbed (the records held the removed text's marks)."""
    with store.write() as db:
        done = _finish_removals(db, kb)
    if done:
        store.scrub(text_index=False)
    return done


def _finish_pending(store: Store) -> None:
    """Before the bot's copies are read: finish the file's pending removals, if a plain read finds one (a
    removal recorded by another process while the bot runs). A failure is logged and the read goes on:
    the next start, or the channel's next removal, finishes it."""
    if store.db.execute("select 1 from bot_removals where pending is not null limit 1").fetchone() is None:
        return
    try:
        done = _finish_and_scrub(store, None)
    except Exception:
        log.exception("finishing the removals recorded in %s failed", store.path)
        return
    if done:
        log.info("finished %d removal(s) another process recorded in %s", done, store.path)


def _finish_removals(db: Any, kb: str | None) -> int:
    """Do the pending removals (of `kb`, or all) in the open transaction and mark them done; forget the node
    ids of those done longer ago than `KEEP_REMOVALS_S`. Returns how many were done."""
    where, params = ("pending is not null and kb = ?", [kb]) if kb is not None else ("pending is not null", [])
    rows = db.execute(f"select id, kb, note, pending from bot_removals where {where} order by id", params).fetchall()
    for row_id, row_kb, note, pending in rows:
        redaction = Redaction.loads(pending) if isinstance(note, str) else None  # a blob note: not JSON's
        if redaction is None:
            log.warning("a removal recorded in %s could not be read; its redaction is skipped", row_kb)
        else:
            redaction.apply(db, row_kb, note)
        db.execute("update bot_removals set pending = null where id = ?", [row_id])
    db.execute("delete from bot_removals where pending is null and at < ?", [time.time() - KEEP_REMOVALS_S])
    return len(rows)


def _without_removed_since(db: Any, kb: str, since: float, nodes: list[dict[str, Any]]) -> None:
    """Redact the saved context `nodes` that a removal from `kb` recorded at or after `since` took away (its
    node ids: `record_removal`). Only removals after the answer's retrieval count: SQLite may give a
    removed node's id to a node written after it, which a later answer can cite."""
    gone: dict[int, tuple[str, str | None]] = {}
    for note, source, raw in db.execute(
        "select note, source, nodes from bot_removals where kb = ? and at >= ? order by id", [kb, since]
    ).fetchall():
        if not isinstance(note, str) or not isinstance(source, str | None):  # a store from elsewhere
            continue
        try:
            ids = json.loads(raw)
        except (ValueError, TypeError, RecursionError):
            continue
        for i in ids if isinstance(ids, list) else []:
            if is_id(i):
                gone.setdefault(i, (note, source))
    for node in nodes:
        if node["node_id"] in gone:
            note, source = gone[node["node_id"]]
            if source is not None:
                node["document"] = source
            node.update(text=note, heading=[], drawn_from=[], page_marks=[], message=None)


def _redact_answers(
    db: Any,
    kb: str,
    note: str,
    ids: set[int],
    marks: set[str],
    node_ids: Set[int],
    documents: Set[str],
    every: bool = False,
) -> int:
    """Saved answers of `kb` (see `Redaction.apply`); returns how many changed."""
    changed = 0
    for answer_id, question, payload in db.execute(
        "select id, question, context_json from bot_answers where kb = ?", [kb]
    ).fetchall():
        data = _context(payload)
        if data is None:  # a store from elsewhere: it cannot be read to be redacted, nor shown, so it goes
            log.warning("saved answer %s of %s is not a context the bot writes; it is deleted", answer_id, kb)
            db.execute("delete from bot_answers where id = ?", [answer_id])
            changed += 1
            continue
        nodes = data["nodes"]
        quoted = quotes(question, marks) or any(
            (n.get("message") or {}).get("message_id") in ids or quotes(n["text"], marks) for n in nodes
        )
        hit = [n for n in nodes if quoted or n["node_id"] in node_ids or every or _drew_on(n, documents)]
        for node in hit:
            if every or _drew_on(node, documents):
                node["document"] = REMOVED_SOURCE
            node.update(text=note, heading=[], drawn_from=[], page_marks=[], message=None)
        if hit or quoted:
            db.execute(
                "update bot_answers set question = ?, context_json = ? where id = ?",
                [note if quoted else question, json.dumps(data), answer_id],
            )
            changed += 1
    return changed


def _context(payload: str) -> dict[str, Any] | None:
    """A saved answer's context read back; None when it is not of the shape `save_answer` writes."""
    try:
        data = json.loads(payload)
    except (ValueError, TypeError, RecursionError):
        return None
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, list) or not all(_saved_node(n) for n in nodes):
        return None
    return data


def _saved_node(node: object) -> bool:
    """Whether a saved context node has what redaction reads, of the types `save_answer` writes."""
    if not isinstance(node, dict) or not isinstance(node.get("text"), str) or "node_id" not in node:
        return False
    drawn = node.get("drawn_from", [])
    return (
        (node.get("document") is None or isinstance(node["document"], str))
        and isinstance(drawn, list)
        and all(isinstance(d, list) and len(d) == 2 for d in drawn)
        and (node.get("message") is None or isinstance(node["message"], dict))
    )


def _drew_on(node: dict[str, Any], documents: Set[str]) -> bool:
    """Whether a saved context node is of one of `documents`, or a cross-document summary drawing on one."""
    return node["document"] in documents or any(name in documents for name, _ in node.get("drawn_from", []))


def _redact_turns(db: Any, kb: str, note: str, ids: set[int], marks: set[str]) -> int:
    """Thread turns of `kb`: an exchange (a question and its answer, stored as a pair) that drew on a removed
    message or quotes one is replaced whole; returns how many turns changed."""
    rows = db.execute(
        "select t.id, t.thread_id, t.content, t.message_ids from bot_turns t join bot_threads h "
        "on h.thread_id = t.thread_id where h.kb = ? order by t.thread_id, t.id",
        [kb],
    ).fetchall()
    by_thread: dict[int, list[tuple[int, str, str | None]]] = {}
    for turn_id, thread_id, content, sources in rows:
        by_thread.setdefault(thread_id, []).append((turn_id, content, sources))
    redacted: list[int] = []
    for turns in by_thread.values():
        for begin in range(0, len(turns), 2):
            exchange = turns[begin : begin + 2]
            if any(_turn_quotes(content, sources, ids, marks) for _, content, sources in exchange):
                redacted += [turn_id for turn_id, content, _ in exchange if content != note]
    for turn_id in redacted:
        db.execute("update bot_turns set content = ?, message_ids = null where id = ?", [note, turn_id])
    return len(redacted)


def _pending(db: Any, thread_id: int | None = None) -> list[PendingExchange]:
    """`BotState.pending_exchanges` in one store file (of one thread, given `thread_id`): each pending
    question turn with the answer after it."""
    rows = db.execute(
        "select t.id, t.role, t.posted_ids, h.thread_id, h.kb, h.guild_id, h.channel_id from bot_turns t "
        "join bot_threads h on h.thread_id = t.thread_id where t.pending = 1 and (? is null or t.thread_id = ?) "
        "order by t.thread_id, t.id",
        [thread_id, thread_id],
    ).fetchall()
    found: list[PendingExchange] = []
    for turn_id, role, posted, thread_id, kb, guild_id, channel_id in rows:
        if role == "user" or not found or found[-1].record.thread_id != thread_id:
            record = ThreadRecord(thread_id, kb, guild_id, channel_id)
            found.append(PendingExchange(record, [], _id_list(posted) if role == "user" else []))
        found[-1].turn_ids.append(turn_id)
        if role != "user":
            found[-1].answer_message_ids = _id_list(posted)
    return found


def _left_questions(store: Store) -> list[LeftQuestion]:
    """`BotState.left_questions` in one store file: a kept thread message of a thread no longer recorded is
    dropped."""
    rows = store.db.execute(
        "select q.guild_id, q.channel_id, q.message_id, q.asked_at, q.token, q.token_until, h.thread_id, h.kb,"
        " h.channel_id, q.reply_digest, q.reply_id from bot_questions q"
        " left join bot_threads h on h.thread_id = q.channel_id"
        " order by q.asked_at"
    ).fetchall()
    if any(row[4] is None and row[6] is None for row in rows):
        with store.write() as db:
            db.execute(
                "delete from bot_questions where token is null and channel_id not in (select thread_id from bot_threads)"
            )
    found = []
    for guild_id, channel_id, message_id, asked_at, token, until, thread_id, kb, parent_id, digest, reply in rows:
        record = ThreadRecord(thread_id, kb, guild_id, parent_id) if thread_id is not None else None
        if record is not None or token is not None:
            left = LeftQuestion(guild_id, channel_id, message_id, asked_at, record, token, until or 0.0, digest, reply)
            found.append(left)
    return found


def _thread_row(record: ThreadRecord, opened_by: str) -> tuple[str, list[Any]]:
    """The statement recording a thread the bot opened."""
    sql = """INSERT OR REPLACE INTO bot_threads (thread_id, kb, guild_id, channel_id, opened_by, created_at)
             VALUES (?, ?, ?, ?, ?, ?)"""
    return sql, [record.thread_id, record.kb, record.guild_id, record.channel_id, opened_by, _now()]


def _recent_questions(db: Any, since: str, limit: int) -> list[tuple[str, ThreadRecord, list[int]]]:
    """`BotState.recent_questions` in one store file: (last turn's time, thread, its questions' messages)."""
    threads = db.execute(
        "select h.thread_id, h.kb, h.guild_id, h.channel_id, max(t.created_at) as last from bot_threads h "
        "join bot_turns t on t.thread_id = h.thread_id group by h.thread_id having last >= ? "
        "order by last desc limit ?",
        [since, limit],
    ).fetchall()
    found = []
    for thread_id, kb, guild_id, channel_id, last in threads:
        rows = db.execute("select role, posted_ids from bot_turns where thread_id = ? order by id", [thread_id]).fetchall()
        kept = _window(len(rows), len(rows) - 1, MAX_HISTORY_TURNS)
        ids = [i for at in kept if rows[at][0] == "user" for i in _id_list(rows[at][1])]
        if ids:
            found.append((str(last), ThreadRecord(thread_id, kb, guild_id, channel_id), ids))
    return found


def _turn_quotes(content: str, sources: str | None, ids: set[int], marks: set[str]) -> bool:
    return bool(ids.intersection(_id_list(sources))) or quotes(content, marks)


def _ids(raw: str | None) -> list[int] | None:
    """A stored list of Discord message ids (`posted_ids`, `message_ids`) read back: [] for NULL, None when
    it is not a JSON list of integers (a store from elsewhere, `raptor guilds import`)."""
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        return None
    if not isinstance(value, list) or not all(is_id(i) for i in value):
        return None
    return value


def _id_list(raw: str | None) -> list[int]:
    """`_ids`, a malformed value read as no messages (the callers that log it: `forget_questions`)."""
    return _ids(raw) or []


def _told_by(thread_id: int, cited: CitedNodes | None) -> Callable[[Any], bool] | None:
    """After an answer named removed documents (`cited.told`), the thread's records drop them, names and
    all: the notice was all they were kept for (`_forget_told`)."""
    if cited is None or not cited.told:
        return None
    told = {int(i) for i in cited.told}
    return lambda db: _forget_told(db, thread_id, told)


def _forget_told(db: Any, thread_id: int, told: set[int]) -> bool:
    """Drop the documents of ids `told` that are no longer there (by id and name: an id may have been
    given to a new document) from the thread's turn records; True when a record changed. An answer still
    citing one (removed while the bot was down, or by a removal whose redaction had not run yet) is
    replaced by `REMOVED_DOCUMENT` as `_redact_documents` would have done."""
    there = {
        (int(r[0]), r[1])
        for r in db.execute(
            "select d.id, d.name from documents d join kbs k on k.id = d.kb_id join bot_threads h on h.kb = k.name "
            "where h.thread_id = ?",
            [thread_id],
        ).fetchall()
    }

    def kept(pair: tuple[int, str]) -> bool:
        return pair[0] not in told or pair in there

    changed = False
    for turn_id, raw in db.execute(
        "select id, documents from bot_turns where thread_id = ? and documents is not null", [thread_id]
    ).fetchall():
        record = _turn_documents(raw)
        if record is None:
            continue
        new = TurnDocuments(
            [p for p in record.cited if kept(p)],
            [p for p in record.drawn if kept(p)],
            [g for g in record.removed if g.id not in told],
            record.told,
        )
        if new == record:
            continue
        if (new.cited, new.drawn) != (record.cited, record.drawn):
            db.execute(
                "update bot_turns set content = ?, message_ids = null where id = ?", [REMOVED_DOCUMENT, turn_id]
            )
        db.execute("update bot_turns set documents = ? where id = ?", [new.dumps(), turn_id])
        changed = True
    return changed


def _redact_documents(db: Any, kb: str, note: str, documents: Set[tuple[int, str]], every: bool) -> int:
    """Thread turns of `kb` after documents were removed (`documents`, or `every` one): an answer that cited
    one, or a cross-document summary drawing on one, is replaced by `note` (the question, the member's own
    words, stays for the follow-ups); its record drops the documents, keeping each one's id and name once
    per thread, as removed, for the follow-up that says so (`BotState.removed_cited`). Returns how many
    turns changed."""
    rows = db.execute(
        "select t.id, t.thread_id, t.documents from bot_turns t join bot_threads h "
        "on h.thread_id = t.thread_id where h.kb = ? and t.documents is not null order by t.thread_id, t.id",
        [kb],
    ).fetchall()
    pending: dict[int, set[tuple[int, str]]] = {}  # thread -> removed documents its records keep for the notice
    for _, thread_id, raw in rows:
        record = _turn_documents(raw)
        if record is not None:
            pending.setdefault(thread_id, set()).update((g.id, g.name) for g in record.removed)
            pending[thread_id].update((i, "") for i in record.told)  # named already (older stores)
    changed = 0
    for turn_id, thread_id, raw in rows:
        record = _turn_documents(raw)
        if record is None:
            continue
        hit = [(p, True) for p in record.cited if every or p in documents]
        hit += [(p, False) for p in record.drawn if every or p in documents]
        if not hit:
            continue
        known = pending.setdefault(thread_id, set())
        told = {i for i, name in known if not name}
        for (doc_id, name), was_cited in hit:
            if (doc_id, name) not in known and doc_id not in told:
                record.removed.append(GoneDocument(doc_id, name, was_cited))
                known.add((doc_id, name))
        gone = {p for p, _ in hit}
        record.cited = [p for p in record.cited if p not in gone]
        record.drawn = [p for p in record.drawn if p not in gone]
        db.execute(
            "update bot_turns set content = ?, message_ids = null, documents = ? where id = ?",
            [note, record.dumps(), turn_id],
        )
        changed += 1
    return changed
