"""The store's chat-message tables (migration m005_chat_messages): reads, and the one commit that swaps
message documents.

A message document is an ordinary document (its nodes, edges and documents row) plus its messages'
rows, its group and part, and which message each leaf holds. Rewriting a document (a message added,
edited or deleted) removes the old document and stores the new one in the same transaction as the new
cross-document layer, so a reader sees either the old tree or the new one, and a deleted message's text
is gone from every table once the transaction commits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlite_utils

from ..ingest.messages import ChatMessage
from ..types import MessageRef
from .text_index import unindex_nodes

if TYPE_CHECKING:
    from .records import NewNode, StoredTop


@dataclass
class MessagePart:
    """One message document as stored: its id, group and part, and its messages in order."""

    doc_id: int
    group_key: str
    group_name: str
    part: int
    messages: list[ChatMessage] = field(default_factory=list)


@dataclass
class MessageDocumentWrite:
    """A message document to store: its documents row, its tree (keys unique within one commit) and which
    message each leaf key holds."""

    document: dict[str, Any]
    nodes: list[NewNode]
    leaf_messages: dict[int, int]  # leaf key -> message id
    messages: list[ChatMessage]
    group_key: str
    group_name: str
    part: int


def _chunked(values: list[int], size: int = 500) -> Iterable[list[int]]:
    for begin in range(0, len(values), size):
        yield [int(v) for v in values[begin : begin + size]]


def tainted_nodes(db: sqlite_utils.Database, leaf_ids: set[int], node_ids: list[int]) -> dict[int, str]:
    """Of `node_ids`, those whose text may quote one of the leaves `leaf_ids` (text removed for privacy):
    the leaves themselves and every summary whose leaves include one. id -> text, for the caller to purge
    the copies kept elsewhere (saved answers, the summary cache). Call it before deleting the nodes."""
    out: dict[int, str] = {}
    if not leaf_ids:
        return out
    for part in _chunked(sorted(set(node_ids))):
        marks = ",".join("?" * len(part))
        for node_id, text, leaves in db.execute(
            f"SELECT id, text, leaf_ids FROM nodes WHERE id IN ({marks})", part
        ).fetchall():
            if int(node_id) in leaf_ids or leaf_ids.intersection(json.loads(leaves)):
                out[int(node_id)] = text
    return out


def message_leaves(db: sqlite_utils.Database, kb_id: int, message_ids: Iterable[int]) -> set[int]:
    """The leaves holding the given messages."""
    out: set[int] = set()
    for part in _chunked(sorted(set(message_ids))):
        marks = ",".join("?" * len(part))
        out.update(
            int(r[0])
            for r in db.execute(
                f"SELECT node_id FROM leaf_messages WHERE kb_id = ? AND message_id IN ({marks})", [kb_id, *part]
            ).fetchall()
        )
    return out


class MessageStoreMixin:
    """Methods of `Store` over the chat-message tables (the Store supplies `db`, `write` and the tree
    writers these call)."""

    db: sqlite_utils.Database

    # -- reading ------------------------------------------------------------------------------

    def message_parts(self, kb_id: int, group_keys: Iterable[str]) -> dict[str, list[MessagePart]]:
        """The stored parts of the given groups, with their messages, parts in order."""
        out: dict[str, list[MessagePart]] = {}
        for key in set(group_keys):
            rows = self.db.execute(
                "SELECT doc_id, group_key, group_name, part FROM message_documents WHERE kb_id = ? AND "
                "group_key = ? ORDER BY part",
                [kb_id, key],
            ).fetchall()
            parts = [MessagePart(int(r[0]), r[1], r[2], int(r[3])) for r in rows]
            for part in parts:
                part.messages = self.messages_of_document(part.doc_id)
            if parts:
                out[key] = parts
        return out

    def group_keys(self, doc_ids: Iterable[int]) -> dict[int, str]:
        """document id -> its message group, for the given message documents."""
        out: dict[int, str] = {}
        for part in _chunked(sorted(set(doc_ids))):
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT doc_id, group_key FROM message_documents WHERE doc_id IN ({marks})", part
            ).fetchall()
            out.update((int(doc_id), key) for doc_id, key in rows)
        return out

    def message_part(self, doc_id: int) -> MessagePart | None:
        row = self.db.execute(
            "SELECT doc_id, group_key, group_name, part FROM message_documents WHERE doc_id = ?", [doc_id]
        ).fetchone()
        if row is None:
            return None
        return MessagePart(int(row[0]), row[1], row[2], int(row[3]), self.messages_of_document(doc_id))

    def messages_of_document(self, doc_id: int) -> list[ChatMessage]:
        rows = self.db.execute(
            "SELECT message_id, channel_id, author_id, author, created_at, url, text FROM messages "
            "WHERE doc_id = ? ORDER BY message_id",
            [doc_id],
        ).fetchall()
        return [ChatMessage(*row) for row in rows]

    def message_homes(self, kb_id: int, message_ids: Iterable[int]) -> dict[int, tuple[int, str]]:
        """message id -> (document id, stored text) for those of the ids this knowledge base holds."""
        out: dict[int, tuple[int, str]] = {}
        for part in _chunked(sorted(set(message_ids))):
            marks = ",".join("?" * len(part))
            for message_id, doc_id, text in self.db.execute(
                f"SELECT message_id, doc_id, text FROM messages WHERE kb_id = ? AND message_id IN ({marks})",
                [kb_id, *part],
            ).fetchall():
                out[int(message_id)] = (int(doc_id), text)
        return out

    def message_ids(
        self, kb_id: int, *, channel_id: int | None = None, author_id: int | None = None
    ) -> list[int]:
        """Ids of the stored messages of one channel (or thread), or of one author, or all, in order."""
        where, params = ["kb_id = ?"], [kb_id]
        if channel_id is not None:
            where.append("channel_id = ?")
            params.append(channel_id)
        if author_id is not None:
            where.append("author_id = ?")
            params.append(author_id)
        rows = self.db.execute(
            f"SELECT message_id FROM messages WHERE {' AND '.join(where)} ORDER BY message_id", params
        ).fetchall()
        return [int(r[0]) for r in rows]

    def message_channels(self, kb_id: int) -> list[int]:
        """The channels and threads whose messages this knowledge base holds."""
        rows = self.db.execute(
            "SELECT DISTINCT channel_id FROM messages WHERE kb_id = ? ORDER BY channel_id", [kb_id]
        ).fetchall()
        return [int(r[0]) for r in rows]

    def document_tokens(self, doc_id: int) -> int:
        row = self.db.execute("SELECT tokens FROM documents WHERE id = ?", [doc_id]).fetchone()
        return int(row[0]) if row else 0

    def message_count(self, kb_id: int) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM messages WHERE kb_id = ?", [kb_id]).fetchone()[0])

    def message_refs(self, node_ids: Iterable[int]) -> dict[int, MessageRef]:
        """The message each of the given leaves holds (leaves of message documents only)."""
        out: dict[int, MessageRef] = {}
        for part in _chunked(sorted(set(node_ids))):
            marks = ",".join("?" * len(part))
            for node_id, message_id, author, created_at, url in self.db.execute(
                "SELECT l.node_id, m.message_id, m.author, m.created_at, m.url FROM leaf_messages l "
                "JOIN nodes n ON n.id = l.node_id JOIN messages m ON m.kb_id = n.kb_id AND "
                f"m.message_id = l.message_id WHERE l.node_id IN ({marks})",
                part,
            ).fetchall():
                out[int(node_id)] = MessageRef(int(message_id), author, created_at, url)
        return out

    def leaf_vectors(self, doc_ids: Iterable[int]) -> dict[str, np.ndarray]:
        """Text -> stored vector of the given documents' leaves (what a rebuild of them can reuse)."""
        out: dict[str, np.ndarray] = {}
        for part in _chunked(sorted(set(doc_ids))):
            marks = ",".join("?" * len(part))
            for text, blob in self.db.execute(
                f"SELECT text, embedding FROM nodes WHERE layer = 0 AND doc_id IN ({marks})", part
            ).fetchall():
                out[text] = np.frombuffer(blob, dtype=np.float32)
        return out

    def tops_except(self, kb_id: int, exclude: set[int]) -> list[StoredTop]:
        """The documents' top nodes (what the cross-document layer groups), leaving out some documents."""
        from .records import StoredTop

        rows = self.db.execute(
            "SELECT n.id, n.layer, n.text, n.tokens, n.embedding, d.id FROM nodes n JOIN documents d "
            "ON d.id = n.doc_id WHERE n.kb_id = ? AND n.layer = d.layers - 1 ORDER BY d.added_at, d.id, n.id",
            [kb_id],
        ).fetchall()
        return [
            StoredTop(r[0], r[1], r[2], r[3], np.frombuffer(r[4], dtype=np.float32))
            for r in rows
            if int(r[5]) not in exclude
        ]

    # -- writing ------------------------------------------------------------------------------

    def commit_message_documents(
        self,
        kb_name: str,
        removed: list[int],
        written: list[MessageDocumentWrite],
        kb_nodes_for: Callable[[dict[int, int]], list[NewNode]],
        build: dict[str, Any],
        expected_version: int | None = None,
        dropped: Iterable[int] = (),
        within: Callable[[Any, list[int], dict[int, str]], None] | None = None,
    ) -> tuple[int, list[int], dict[int, str]]:
        """Remove documents `removed`, store `written` and the new cross-document layer, all or nothing.

        Returns (kb_id, the ids of the nodes that went: the removed documents' and the old cross-document
        layer's, and of those the nodes that held or summarised a message of `dropped` (the messages taken
        out) with their text: `tainted_nodes`)."""
        from .records import _check_version, create_kb

        with self.write() as db:  # type: ignore[attr-defined]
            kb_id = create_kb(db, kb_name)
            _check_version(db, kb_id, expected_version)
            gone = [
                int(r[0])
                for r in db.execute(
                    "SELECT id FROM nodes WHERE kb_id = ? AND kind = 'kb'", [kb_id]
                ).fetchall()
            ]
            for doc_id in removed:
                gone += [
                    int(r[0])
                    for r in db.execute("SELECT id FROM nodes WHERE doc_id = ?", [doc_id]).fetchall()
                ]
            tainted = tainted_nodes(db, message_leaves(db, kb_id, dropped), gone)
            for doc_id in removed:
                db.execute(
                    "DELETE FROM edges WHERE parent_id IN (SELECT id FROM nodes WHERE doc_id = ?)", [doc_id]
                )
                unindex_nodes(db, kb_id, "doc_id = ?", [doc_id])
                db.execute("DELETE FROM nodes WHERE doc_id = ?", [doc_id])
                db.execute("DELETE FROM documents WHERE id = ?", [doc_id])
            ids: dict[int, int] = {}
            for item in written:
                ids.update(self._insert_message_document(db, kb_id, item))
            self._replace_kb_layer(db, kb_id, kb_nodes_for(ids))  # type: ignore[attr-defined]
            self._record_build(db, kb_id, build)  # type: ignore[attr-defined]
            db.execute("UPDATE kbs SET version = version + 1 WHERE id = ?", [kb_id])
            if within is not None:  # the removal's record (`Engine.remove_messages`, `record_removal`)
                within(db, gone, tainted)
        return kb_id, gone, tainted

    def _insert_message_document(
        self, db: sqlite_utils.Database, kb_id: int, item: MessageDocumentWrite
    ) -> dict[int, int]:
        """One message document's rows; returns its nodes' key -> id."""
        doc_id = self._insert_document(db, kb_id, item.document, len(item.nodes))  # type: ignore[attr-defined]
        ids = self._insert_nodes(db, kb_id, doc_id, item.nodes)  # type: ignore[attr-defined]
        db.execute(
            "INSERT INTO message_documents (doc_id, kb_id, group_key, group_name, part) VALUES (?,?,?,?,?)",
            [doc_id, kb_id, item.group_key, item.group_name, item.part],
        )
        db.conn.executemany(
            "INSERT INTO messages (kb_id, doc_id, message_id, channel_id, author_id, author, created_at, url, "
            "text) VALUES (?,?,?,?,?,?,?,?,?)",
            [
                [
                    kb_id,
                    doc_id,
                    m.message_id,
                    m.channel_id,
                    m.author_id,
                    m.author,
                    m.created_at,
                    m.url,
                    m.text,
                ]
                for m in item.messages
            ],
        )
        db.conn.executemany(
            "INSERT INTO leaf_messages (node_id, kb_id, message_id) VALUES (?, ?, ?)",
            [[ids[key], kb_id, message_id] for key, message_id in item.leaf_messages.items()],
        )
        return ids
