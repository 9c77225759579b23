"""SQLite, through sqlite-utils, is the source of truth: knowledge bases, documents, nodes, edges, builds.

Every write that changes a tree happens in one `BEGIN IMMEDIATE` transaction, so a crash or an
error leaves the previous tree exactly as it was. Each thread gets its own connection (WAL lets
readers go on while the single writer writes); a busy timeout absorbs other processes' writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from ..errors import NotFoundError, did_you_mean
from ..ingest.messages import MESSAGE_FORMAT
from ..ingest.sentences import encode_spans
from .db import connect, immediate, scrub
from .message_store import MessageStoreMixin, tainted_nodes
from .records import (
    DocumentInfo,
    NewNode,
    StoredNode,
    StoredTop,
    StoreReplacedError,
    TreeShape,
    _blob,
    _check_version,
    _now,
    create_kb,
)
from .schema import schema_problems
from .store_migrations import bot_migrations, store_migrations
from .text_index import (
    WordForms,
    drop_kb_index,
    index_node_ids,
    leaf_word_forms,
    optimize_text_index,
    rebuild_text_index,
    substring_search,
    text_index_problems,
    text_search,
    unindex_nodes,
)

WORD_FORMS_CACHED = 8  # knowledge bases whose words are kept for respelling questions
# A sha256 prefix this long names one document among any a knowledge base may hold (raptor docs shows 12).
MIN_SHA_PREFIX = 8


def _insert_rows(db: sqlite_utils.Database, table: str, rows: list[dict[str, Any]]) -> None:
    """Rows of one shape (every value a str, int, float, bytes or None already) in one `executemany`:
    sqlite_utils' `insert_all` checked and converted every value and built multi-row statements in Python,
    most of a 100k-token document's write (0.25 of 0.43 s for its 1,328 nodes, profiled)."""
    if not rows:
        return
    columns = list(rows[0])
    sql = f"INSERT INTO {table} ({', '.join(f'[{c}]' for c in columns)}) VALUES ({', '.join('?' * len(columns))})"
    db.conn.executemany(sql, [tuple(row[c] for c in columns) for row in rows])


class Store(MessageStoreMixin):
    """All reads and writes of the database. Safe to share between threads (chat-message documents'
    tables: message_store.py)."""

    def __init__(self, db_path: str | Path):
        self.path = Path(db_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._forms_lock = threading.Lock()
        self._word_forms: dict[tuple[Any, ...], WordForms] = {}
        self._ensure_schema()
        self._identity = self._file_identity()

    # -- connections and transactions -------------------------------------------------------

    @property
    def db(self) -> sqlite_utils.Database:
        db = getattr(self._local, "db", None)
        if db is None:
            if getattr(self, "_identity", None) is not None:  # not a new file being created
                self._check_not_replaced()  # a thread's first connection must not create a new file
            db = connect(self.path)
            self._local.db = db
            with self._connections_lock:
                self._connections.append(db.conn)
        return db

    def _file_identity(self) -> tuple[int, int] | None:
        """(device, inode) of the file at `path` now; None when there is none."""
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino

    def replaced(self) -> bool:
        """Whether the file at `path` is no longer the one this store opened (deleted, or replaced).

        An open connection keeps writing to a deleted file: every commit would succeed and vanish when
        the store closes. `Spaces` reopens a replaced space; a write refuses (`write`)."""
        return self._file_identity() != self._identity

    def _check_not_replaced(self) -> None:
        if self.replaced():
            raise StoreReplacedError(
                f"The store in {self.path.parent} was deleted or replaced while in use, so nothing was "
                "written; try again."
            )

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite_utils.Database]:
        """One writer at a time in this process; BEGIN IMMEDIATE takes SQLite's write lock up front.

        Before committing, the file is checked to be still the one opened: a write into a deleted
        store is rolled back and refused in one sentence instead of vanishing."""
        with self._write_lock, immediate(self.db.conn):
            yield self.db
            self._check_not_replaced()

    def close(self) -> None:
        """Close every thread's connection, once the write (or scrub) in progress is done: closing a
        connection another thread is using crashes the process."""
        with self._write_lock, self._connections_lock:
            for conn in self._connections:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._connections.clear()
        self._local = threading.local()

    def _ensure_schema(self) -> None:
        """Bring the file up to date through the named migrations (a new file starts with none run), and
        the bot's tables too when the file has them: a removal made by another process (`raptor forget`)
        must find the table its record goes to (`record_removal`)."""
        with self._write_lock:
            store_migrations.apply(self.db)
            bot_steps = bot_migrations.applied(self.db)
            if bot_steps and set(bot_migrations.names()) - set(bot_steps):  # a write only when one is missing
                bot_migrations.apply(self.db)

    # -- knowledge bases ----------------------------------------------------------------------

    def kb_id(self, name: str, *, create: bool = False) -> int | None:
        row = self.db.execute("SELECT id FROM kbs WHERE name = ?", [name]).fetchone()
        if row:
            return int(row[0])
        if not create:
            return None
        with self.write() as db:
            create_kb(db, name)
        return self.kb_id(name)

    def require_kb(self, name: str) -> int:
        kb_id = self.kb_id(name)
        if kb_id is None:
            raise NotFoundError(f"There is no knowledge base named {name!r}.")
        return kb_id

    def kb_names(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM kbs ORDER BY name").fetchall()]

    def kb_version(self, kb_id: int) -> int:
        row = self.db.execute("SELECT version FROM kbs WHERE id = ?", [kb_id]).fetchone()
        return int(row[0]) if row else -1

    def delete_kb(
        self, kb_id: int, within: Callable[[Any, list[int], dict[int, str]], None] | None = None
    ) -> list[str]:
        """Drop a knowledge base's rows; returns its summaries' texts (for the summary cache to forget).
        `within(db, node ids, {})` runs in the same transaction (`Engine.clear`'s record of the removal)."""
        with self.write() as db:
            summaries = [
                r[0] for r in db.execute("SELECT text FROM nodes WHERE kb_id = ? AND layer > 0", [kb_id]).fetchall()
            ]
            if within is not None:
                nodes = [int(r[0]) for r in db.execute("SELECT id FROM nodes WHERE kb_id = ?", [kb_id]).fetchall()]
                within(db, nodes, dict.fromkeys(nodes, ""))
            db.execute("DELETE FROM edges WHERE kb_id = ?", [kb_id])
            drop_kb_index(db, kb_id)  # its pages are freed and zeroed (secure_delete)
            db.execute("DELETE FROM nodes WHERE kb_id = ?", [kb_id])
            db.execute("DELETE FROM documents WHERE kb_id = ?", [kb_id])
            db.execute("DELETE FROM builds WHERE kb_id = ?", [kb_id])
            db.execute("DELETE FROM questions WHERE kb_id = ?", [kb_id])
            db.execute("DELETE FROM kbs WHERE id = ?", [kb_id])
        self._forget_words(kb_id)  # a knowledge base made next may get its id, its name and the same second
        return summaries

    # -- documents ----------------------------------------------------------------------------

    def documents(self, kb_id: int) -> list[DocumentInfo]:
        rows = self.db.execute(
            "SELECT id, name, sha256, size, format, added_by, added_at, chunks, layers, nodes, tokens "
            "FROM documents WHERE kb_id = ? ORDER BY added_at, id",
            [kb_id],
        ).fetchall()
        return [DocumentInfo(*row) for row in rows]

    def has_documents(self, kb_id: int) -> bool:
        """Whether a knowledge base stores any document (one row looked at)."""
        return self.db.execute("SELECT 1 FROM documents WHERE kb_id = ? LIMIT 1", [kb_id]).fetchone() is not None

    def document_by_sha(self, kb_id: int, sha256: str) -> DocumentInfo | None:
        return next((d for d in self.documents(kb_id) if d.sha256 == sha256), None)

    def document_by_text(self, kb_id: int, text_sha256: str) -> DocumentInfo | None:
        """The earliest document whose text has this fingerprint (ingest/load.py `text_fingerprint`)."""
        return self._earliest_with(kb_id, "text_sha256", text_sha256)

    def document_by_words(self, kb_id: int, words_sha256: str) -> DocumentInfo | None:
        """The earliest document whose words alone have this fingerprint (ingest/load.py `words_fingerprint`):
        the same document stored under another kind, or by an earlier loader."""
        return self._earliest_with(kb_id, "words_sha256", words_sha256)

    def _earliest_with(self, kb_id: int, column: str, fingerprint: str) -> DocumentInfo | None:
        """The earliest document of `kb_id` whose fingerprint `column` (a fixed name) holds `fingerprint`."""
        row = self.db.execute(
            f"SELECT id FROM documents WHERE kb_id = ? AND {column} = ? ORDER BY added_at, id LIMIT 1",
            [kb_id, fingerprint],
        ).fetchone()
        return next((d for d in self.documents(kb_id) if d.id == row[0]), None) if row else None

    def find_document(self, kb_id: int, name_or_sha: str) -> DocumentInfo:
        """A document by exact name (or the same name in another Unicode normal form), or by a sha256 prefix
        of at least MIN_SHA_PREFIX characters (a shorter one that matches is refused as too short)."""
        docs = self.documents(kb_id)
        by_name = [d for d in docs if d.name == name_or_sha]
        if not by_name:  # "café" typed composed finds a name stored decomposed (names are NFC since)
            wanted = unicodedata.normalize("NFC", name_or_sha)
            by_name = [d for d in docs if unicodedata.normalize("NFC", d.name) == wanted]
        if len(by_name) == 1:
            return by_name[0]
        if len(by_name) > 1:
            prefixes = ", ".join(d.sha256[:12] for d in by_name)
            raise NotFoundError(
                f"Several documents are named {name_or_sha!r} (sha256 {prefixes}); name one by its sha256 prefix instead."
            )
        prefix = name_or_sha.lower()
        by_sha = [d for d in docs if prefix and d.sha256.startswith(prefix)]
        if len(prefix) >= MIN_SHA_PREFIX and len(by_sha) == 1:
            return by_sha[0]
        if by_sha and len(prefix) < MIN_SHA_PREFIX:
            raise NotFoundError(
                f"{name_or_sha!r} is too short a sha256 prefix to name a document; "
                f"give at least {MIN_SHA_PREFIX} characters."
            )
        close = did_you_mean(name_or_sha, [d.name for d in docs])
        raise NotFoundError(f"No document named {name_or_sha!r} in this knowledge base.{close}")

    def kb_tokens(self, kb_id: int) -> int:
        row = self.db.execute(
            "SELECT COALESCE(SUM(tokens), 0) FROM documents WHERE kb_id = ?", [kb_id]
        ).fetchone()
        return int(row[0])

    # -- nodes --------------------------------------------------------------------------------

    def _node_rows(self, where: str, params: list[Any]) -> list[StoredNode]:
        rows = self.db.execute(
            "SELECT n.id, n.kb_id, n.doc_id, d.name, n.layer, n.kind, n.text, n.tokens, n.leaf_count, "
            'n.start, n."end", n.page, n.heading, n.page_marks, n.sentences, n.code FROM nodes n '
            f"LEFT JOIN documents d ON d.id = n.doc_id WHERE {where}",
            params,
        ).fetchall()
        return [
            StoredNode(*r[:12], tuple(json.loads(r[12])), tuple(tuple(m) for m in json.loads(r[13])), r[14], bool(r[15]))
            for r in rows
        ]

    def nodes_by_ids(self, ids: list[int]) -> dict[int, StoredNode]:
        out: dict[int, StoredNode] = {}
        for begin in range(0, len(ids), 500):
            part = [int(i) for i in ids[begin : begin + 500]]
            marks = ",".join("?" * len(part))
            for node in self._node_rows(f"n.id IN ({marks})", part):
                out[node.id] = node
        return out

    def documents_under(self, node_id: int) -> list[tuple[str, int]]:
        """The documents a node's leaves come from, with how many leaves each, most first.

        What a cross-document summary draws on, so a reader can trace its text to files."""
        rows = self.db.execute(
            "SELECT d.name, COUNT(*) AS leaves FROM nodes p, json_each(p.leaf_ids) j "
            "JOIN nodes l ON l.id = j.value JOIN documents d ON d.id = l.doc_id "
            "WHERE p.id = ? GROUP BY d.id ORDER BY leaves DESC, d.added_at, d.id",
            [node_id],
        ).fetchall()
        return [(str(name), int(leaves)) for name, leaves in rows]

    def document_edges(self, ids: list[int]) -> dict[int, tuple[bool, bool]]:
        """For each of the given leaves (others are left out): whether it is its document's first leaf and
        whether its last, so 'and then?' after the last passage can say the document ends there."""
        out: dict[int, tuple[bool, bool]] = {}
        for begin in range(0, len(ids), 500):
            part = [int(i) for i in ids[begin : begin + 500]]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                "SELECT n.id, n.start = (SELECT MIN(m.start) FROM nodes m WHERE m.doc_id = n.doc_id AND m.layer = 0),"
                " n.start = (SELECT MAX(m.start) FROM nodes m WHERE m.doc_id = n.doc_id AND m.layer = 0)"
                f" FROM nodes n WHERE n.id IN ({marks}) AND n.layer = 0 AND n.start IS NOT NULL",
                part,
            ).fetchall()
            out.update((int(node_id), (bool(first), bool(last))) for node_id, first, last in rows)
        return out

    def document_leaves(self, node_id: int, max_chars: int) -> list[StoredNode] | None:
        """The leaves of the document a node stands in, in their order; None when together they hold more than
        `max_chars` characters (measured before any is read), or the node is of no document."""
        of_document = "n.layer = 0 AND n.doc_id = (SELECT m.doc_id FROM nodes m WHERE m.id = ?)"
        (count, chars) = self.db.execute(
            f"SELECT COUNT(*), COALESCE(SUM(LENGTH(n.text)), 0) FROM nodes n WHERE {of_document}", [node_id]
        ).fetchone()
        if not count or chars > max_chars:
            return None
        leaves = self._node_rows(of_document, [node_id])
        return sorted(leaves, key=lambda node: (node.start is None, node.start or 0, node.id))

    def superseded_nodes(self, ids: list[int]) -> set[int]:
        """Those of the given nodes whose document a later file of the same name follows in its knowledge
        base (a file posted again with new content is added beside the earlier one): the earlier file's
        sentences that the later one says otherwise are not quoted. Message documents are left out (two
        threads may share a title)."""
        out: set[int] = set()
        for begin in range(0, len(ids), 500):
            part = [int(i) for i in ids[begin : begin + 500]]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                "SELECT n.id FROM nodes n JOIN documents d ON d.id = n.doc_id"
                f" WHERE n.id IN ({marks}) AND d.format != ? AND EXISTS (SELECT 1 FROM documents e"
                " WHERE e.kb_id = d.kb_id AND e.name = d.name AND e.format != ? AND e.id > d.id)",
                [*part, MESSAGE_FORMAT, MESSAGE_FORMAT],
            ).fetchall()
            out.update(int(node_id) for (node_id,) in rows)
        return out

    def reposted_names(self, kb_id: int, names: list[str]) -> set[str]:
        """Those of the given document names that more than one file of the knowledge base bears (a file
        posted again with new content beside the earlier one; message documents left out)."""
        out: set[str] = set()
        for begin in range(0, len(names), 500):
            part = names[begin : begin + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT name FROM documents WHERE kb_id = ? AND format != ? AND name IN ({marks})"
                " GROUP BY name HAVING COUNT(*) > 1",
                [kb_id, MESSAGE_FORMAT, *part],
            ).fetchall()
            out.update(str(name) for (name,) in rows)
        return out

    def document_openings(self, kb_id: int) -> dict[str, tuple[tuple[str, ...], str]]:
        """Each document's name -> the headings and text of its first leaf, in the order the documents
        were added: where a document's title is ('Harbour survey report 2021'), for a follow-up that
        names a document by a year or a label ('the 2021 report', 'the Q3 one')."""
        rows = self.db.execute(
            "SELECT d.name, n.heading, n.text FROM documents d JOIN nodes n ON n.doc_id = d.id AND n.layer = 0 "
            "AND n.start = (SELECT MIN(m.start) FROM nodes m WHERE m.doc_id = d.id AND m.layer = 0) "
            "WHERE d.kb_id = ? ORDER BY d.added_at, d.id",
            [kb_id],
        ).fetchall()
        return {str(name): (tuple(json.loads(heading)), str(text)) for name, heading, text in rows}

    def node_tokens(self, ids: list[int]) -> dict[int, int]:
        """Token counts of the given nodes (those that exist): what a budget is decided on, cheaply."""
        out: dict[int, int] = {}
        for begin in range(0, len(ids), 500):
            part = [int(i) for i in ids[begin : begin + 500]]
            marks = ",".join("?" * len(part))
            out.update(
                self.db.execute(f"SELECT id, tokens FROM nodes WHERE id IN ({marks})", part).fetchall()
            )
        return out

    def vector_size(self, kb_id: int) -> int:
        """How many numbers a vector of this knowledge base holds (all hold the same: builds and import
        check it); 0 when it has no node."""
        row = self.db.execute("SELECT length(embedding) FROM nodes WHERE kb_id = ? LIMIT 1", [kb_id]).fetchone()
        return int(row[0]) // 4 if row and row[0] else 0

    def token_counts(self, kb_id: int) -> dict[int, int]:
        """Every node's token count in a knowledge base (kept beside its index, see `index.KBIndex`)."""
        return dict(self.db.execute("SELECT id, tokens FROM nodes WHERE kb_id = ?", [kb_id]).fetchall())

    def leaf_samples(self, kb_id: int, count: int) -> list[tuple[int, str, np.ndarray]]:
        """(id, text, stored vector) of a knowledge base's first `count` leaves: what `model_check` embeds
        again to tell whether the configured model made its vectors."""
        rows = self.db.execute(
            "SELECT id, text, embedding FROM nodes WHERE kb_id = ? AND layer = 0 ORDER BY id LIMIT ?", [kb_id, count]
        ).fetchall()
        return [(int(i), str(text), np.frombuffer(blob, dtype=np.float32)) for i, text, blob in rows]

    def nodes_of_kb(self, kb_id: int) -> list[StoredNode]:
        return self._node_rows("n.kb_id = ? ORDER BY n.id", [kb_id])

    def embeddings(self, kb_id: int, *, ids: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(ids, matrix) of a knowledge base's nodes, or of the given ids within it."""
        if ids is None:
            rows = self.db.execute(
                "SELECT id, embedding FROM nodes WHERE kb_id = ? ORDER BY id", [kb_id]
            ).fetchall()
        else:
            rows = []
            for begin in range(0, len(ids), 500):
                part = [int(i) for i in ids[begin : begin + 500]]
                marks = ",".join("?" * len(part))
                rows += self.db.execute(
                    f"SELECT id, embedding FROM nodes WHERE kb_id = ? AND id IN ({marks}) ORDER BY id",
                    [kb_id, *part],
                ).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        node_ids = np.array([r[0] for r in rows], dtype=np.int64)
        matrix = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        return node_ids, matrix

    def children(self, parent_ids: list[int]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {p: [] for p in parent_ids}
        for begin in range(0, len(parent_ids), 500):
            part = parent_ids[begin : begin + 500]
            marks = ",".join("?" * len(part))
            for parent, child in self.db.execute(
                f"SELECT parent_id, child_id FROM edges WHERE parent_id IN ({marks}) ORDER BY child_id", part
            ).fetchall():
                out[parent].append(child)
        return out

    def root_ids(self, kb_id: int) -> list[int]:
        """Nodes with no parent: the top of each document's tree, or the cross-document layer."""
        rows = self.db.execute(
            "SELECT id FROM nodes WHERE kb_id = ? AND id NOT IN (SELECT child_id FROM edges WHERE kb_id = ?) "
            "ORDER BY id",
            [kb_id, kb_id],
        ).fetchall()
        return [r[0] for r in rows]

    def document_tops(self, kb_id: int, exclude_doc: int | None = None) -> list[StoredTop]:
        """The top layer of each document's tree, in document order: what the cross-document layer groups."""
        rows = self.db.execute(
            "SELECT n.id, n.layer, n.text, n.tokens, n.embedding FROM nodes n JOIN documents d ON d.id = n.doc_id "
            "WHERE n.kb_id = ? AND n.layer = d.layers - 1 AND d.id IS NOT ? ORDER BY d.added_at, d.id, n.id",
            [kb_id, exclude_doc],
        ).fetchall()
        return [StoredTop(r[0], r[1], r[2], r[3], np.frombuffer(r[4], dtype=np.float32)) for r in rows]

    def summaries_top_down(self, kb_id: int, limit: int) -> list[tuple[int, int]]:
        """(id, layer) of up to `limit` summary nodes (layer 1 and above), highest layer first."""
        rows = self.db.execute(
            "SELECT id, layer FROM nodes WHERE kb_id = ? AND layer > 0 ORDER BY layer DESC, id LIMIT ?",
            [kb_id, limit],
        ).fetchall()
        return [(int(node_id), int(layer)) for node_id, layer in rows]

    def layer_stats(self, kb_id: int) -> list[tuple[int, str, int, int]]:
        """(layer, kind, nodes, tokens) for a knowledge base."""
        return [
            tuple(r)
            for r in self.db.execute(
                "SELECT layer, kind, COUNT(*), SUM(tokens) FROM nodes WHERE kb_id = ? GROUP BY layer, kind "
                "ORDER BY layer, kind",
                [kb_id],
            ).fetchall()
        ]

    def tree_shape(self, kb_id: int) -> TreeShape:
        """Documents, nodes and edges of a tree without text or embeddings: what a picture needs.

        Read in one transaction so a build committing meanwhile cannot leave edges to unread nodes.
        Nodes come by layer, then document order, then position in the document.
        """
        db = self.db
        own = not db.conn.in_transaction
        if own:
            db.conn.execute("BEGIN")
        try:
            documents = [
                (int(r[0]), str(r[1]))
                for r in db.execute(
                    "SELECT id, name FROM documents WHERE kb_id = ? ORDER BY added_at, id", [kb_id]
                ).fetchall()
            ]
            nodes = [
                (int(r[0]), r[1], int(r[2]), str(r[3]))
                for r in db.execute(
                    "SELECT n.id, n.doc_id, n.layer, n.kind FROM nodes n LEFT JOIN documents d ON d.id = n.doc_id "
                    "WHERE n.kb_id = ? ORDER BY n.layer, d.added_at, d.id, n.start, n.id",
                    [kb_id],
                ).fetchall()
            ]
            edges = [
                (int(r[0]), int(r[1]))
                for r in db.execute(
                    "SELECT parent_id, child_id FROM edges WHERE kb_id = ? ORDER BY parent_id, child_id",
                    [kb_id],
                ).fetchall()
            ]
        finally:
            if own:
                db.conn.execute("COMMIT")
        return TreeShape(documents, nodes, edges)

    def node_ids(self, kb_id: int) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT id FROM nodes WHERE kb_id = ?", [kb_id]).fetchall()]

    def next_node_id(self) -> int:
        """The id the next stored node will get, unless another writer stores nodes first (see `_allocate_ids`)."""
        return int(self.db.execute("SELECT value FROM meta WHERE key = 'next_node_id'").fetchone()[0])

    def document_node_ids(self, doc_id: int) -> list[int]:
        """A document's node ids, in the order they were stored."""
        return [int(r[0]) for r in self.db.execute("SELECT id FROM nodes WHERE doc_id = ? ORDER BY id", [doc_id])]

    def has_nodes(self, kb_id: int) -> bool:
        """Whether a knowledge base has any node; cheap (COUNT(*) costs ~7 ms at 100k nodes, per question)."""
        return self.db.execute("SELECT 1 FROM nodes WHERE kb_id = ? LIMIT 1", [kb_id]).fetchone() is not None

    def node_count(self, kb_id: int) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM nodes WHERE kb_id = ?", [kb_id]).fetchone()[0])

    # -- writing trees ------------------------------------------------------------------------

    def _allocate_ids(self, db: sqlite_utils.Database, count: int) -> int:
        """Node ids only ever grow, so an id never names two nodes (the index relies on it)."""
        first = int(db.execute("SELECT value FROM meta WHERE key = 'next_node_id'").fetchone()[0])
        db.execute("UPDATE meta SET value = ? WHERE key = 'next_node_id'", [str(first + count)])
        return first

    def _insert_nodes(
        self, db: sqlite_utils.Database, kb_id: int, doc_id: int | None, nodes: list[NewNode]
    ) -> dict[int, int]:
        """Insert nodes and their edges; returns key -> id. Children must come before parents."""
        first = self._allocate_ids(db, len(nodes))
        ids = {node.key: first + i for i, node in enumerate(nodes)}
        stored_leaf_ids = self._stored_leaf_ids(db, [c for n in nodes for c in n.stored_children])
        leaf_ids: dict[int, list[int]] = {}
        spans: dict[int, list[list[int]]] = {}
        rows, edges = [], []
        for node in nodes:
            node_id = ids[node.key]
            if node.kind == "leaf":
                leaves = [node_id]
                node_spans = [[node.start, node.end]] if node.start is not None else []
            else:
                leaves = sorted(
                    {leaf for c in node.children for leaf in leaf_ids[c]}
                    | {leaf for c in node.stored_children for leaf in stored_leaf_ids[c]}
                )
                node_spans = _merge_spans([s for c in node.children for s in spans[c]])
            leaf_ids[node.key], spans[node.key] = leaves, node_spans
            rows.append(
                {
                    "id": node_id,
                    "kb_id": kb_id,
                    "doc_id": doc_id,
                    "layer": node.layer,
                    "kind": node.kind,
                    "text": node.text,
                    "tokens": node.tokens,
                    "embedding": _blob(node.embedding),
                    "leaf_ids": json.dumps(leaves),
                    "leaf_count": len(leaves),
                    "start": node.start,
                    "end": node.end,
                    "page": node.page,
                    "heading": json.dumps(list(node.heading)),
                    "spans": json.dumps(node_spans),
                    "page_marks": json.dumps([list(m) for m in node.page_marks]),
                    "sentences": None if node.sentences is None else encode_spans(node.sentences),
                    "code": int(node.code),
                }
            )
            edges += [{"parent_id": node_id, "child_id": ids[c], "kb_id": kb_id} for c in node.children]
            edges += [{"parent_id": node_id, "child_id": c, "kb_id": kb_id} for c in node.stored_children]
        _insert_rows(db, "nodes", rows)
        index_node_ids(db, kb_id, [row["id"] for row in rows])
        _insert_rows(db, "edges", edges)
        return ids

    def _stored_leaf_ids(self, db: sqlite_utils.Database, node_ids: list[int]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for node_id in set(node_ids):
            row = db.execute("SELECT leaf_ids FROM nodes WHERE id = ?", [node_id]).fetchone()
            if row is None:
                raise NotFoundError(f"Node {node_id} disappeared while the tree was being rebuilt.")
            out[node_id] = json.loads(row[0])
        return out

    def _replace_kb_layer(self, db: sqlite_utils.Database, kb_id: int, kb_nodes: list[NewNode]) -> None:
        db.execute(
            "DELETE FROM edges WHERE parent_id IN (SELECT id FROM nodes WHERE kb_id = ? AND kind = 'kb')",
            [kb_id],
        )
        unindex_nodes(db, kb_id, "kind = 'kb'", [])
        db.execute("DELETE FROM nodes WHERE kb_id = ? AND kind = 'kb'", [kb_id])
        if kb_nodes:
            self._insert_nodes(db, kb_id, None, kb_nodes)

    def _insert_document(
        self, db: sqlite_utils.Database, kb_id: int, document: dict[str, Any], node_count: int
    ) -> int:
        """A documents row (its nodes follow in the same transaction); returns its id."""
        cursor = db.execute(
            "INSERT INTO documents (kb_id, name, sha256, size, format, added_by, added_at, chunks, layers, "
            "nodes, tokens, text_sha256, words_sha256) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                kb_id,
                document["name"],
                document["sha256"],
                document["size"],
                document["format"],
                document.get("added_by", ""),
                _now(),
                document["chunks"],
                document["layers"],
                node_count,
                document["tokens"],
                document.get("text_sha256") or None,  # none for chat messages' documents
                document.get("words_sha256") or None,
            ],
        )
        return int(cursor.lastrowid)

    def commit_document(
        self,
        kb_name: str,
        document: dict[str, Any],
        nodes: list[NewNode],
        kb_nodes_for: Callable[[dict[int, int]], list[NewNode]],
        build: dict[str, Any],
        expected_version: int | None = None,
    ) -> tuple[int, int]:
        """Store a document's tree, the new cross-document layer and the build record, all or nothing.

        The knowledge base is created in the same transaction, so a failed first upload leaves no
        trace. `kb_nodes_for(ids)` turns the new tree's key -> id map into the cross-document
        layer's nodes, so that layer can point at nodes inserted a moment before.
        Returns (kb_id, doc_id).
        """
        with self.write() as db:
            kb_id = create_kb(db, kb_name)
            _check_version(db, kb_id, expected_version)  # a new knowledge base is at version 0
            doc_id = self._insert_document(db, kb_id, document, len(nodes))
            ids = self._insert_nodes(db, kb_id, doc_id, nodes)
            self._replace_kb_layer(db, kb_id, kb_nodes_for(ids))
            self._record_build(db, kb_id, build)
            db.execute("UPDATE kbs SET version = version + 1 WHERE id = ?", [kb_id])
        return kb_id, doc_id

    def commit_forget(
        self,
        kb_id: int,
        doc_id: int,
        kb_nodes: list[NewNode],
        build: dict[str, Any],
        expected_version: int | None = None,
        within: Callable[[Any, list[int], dict[int, str]], None] | None = None,
    ) -> dict[int, str]:
        """Remove a document and replace the cross-document layer, all or nothing; returns the nodes that
        went whose text held or summarised the document's (id -> text: `tainted_nodes`). `within(db, gone,
        tainted)` runs in the same transaction (`Engine.forget`'s record of the removal)."""
        with self.write() as db:
            _check_version(db, kb_id, expected_version)
            leaves = {
                int(r[0])
                for r in db.execute("SELECT id FROM nodes WHERE doc_id = ? AND layer = 0", [doc_id]).fetchall()
            }
            gone = [
                int(r[0])
                for r in db.execute(
                    "SELECT id FROM nodes WHERE doc_id = ? OR (kb_id = ? AND kind = 'kb')", [doc_id, kb_id]
                ).fetchall()
            ]
            tainted = tainted_nodes(db, leaves, gone)
            db.execute(
                "DELETE FROM edges WHERE parent_id IN (SELECT id FROM nodes WHERE kb_id = ? AND kind = 'kb')",
                [kb_id],
            )
            unindex_nodes(db, kb_id, "kind = 'kb'", [])
            db.execute("DELETE FROM nodes WHERE kb_id = ? AND kind = 'kb'", [kb_id])
            db.execute(
                "DELETE FROM edges WHERE parent_id IN (SELECT id FROM nodes WHERE doc_id = ?)", [doc_id]
            )
            unindex_nodes(db, kb_id, "doc_id = ?", [doc_id])
            db.execute("DELETE FROM nodes WHERE doc_id = ?", [doc_id])
            db.execute("DELETE FROM documents WHERE id = ?", [doc_id])
            if kb_nodes:
                self._insert_nodes(db, kb_id, None, kb_nodes)
            self._record_build(db, kb_id, _unnamed_builds(db, kb_id, build))
            db.execute("UPDATE kbs SET version = version + 1 WHERE id = ?", [kb_id])
            if within is not None:
                within(db, gone, tainted)
        return tainted

    def _record_build(self, db: sqlite_utils.Database, kb_id: int, build: dict[str, Any]) -> None:
        row = {
            "kb_id": kb_id,
            "document": build.get("document"),
            "action": build["action"],
            "status": build.get("status", "ok"),
            "started_at": build.get("started_at", _now()),
            "finished_at": _now(),
            "seconds": float(build.get("seconds", 0.0)),
            "embedder": build.get("embedder", ""),
            "summarizer": build.get("summarizer", ""),
            "layers": json.dumps(build.get("layers", [])),
            "notes": json.dumps(build.get("notes", [])),
            "prompt_tokens": int(build.get("prompt_tokens", 0)),
            "completion_tokens": int(build.get("completion_tokens", 0)),
            "error": build.get("error"),
        }
        db["builds"].insert(row)

    def record_failed_build(self, kb_id: int, build: dict[str, Any]) -> None:
        """A failed build leaves a record (and nothing else), so `status` can say what happened."""
        with self.write() as db:
            self._record_build(db, kb_id, {**build, "status": "failed"})

    def builds(self, kb_id: int, limit: int = 20) -> list[dict[str, Any]]:
        rows = self.db.query("SELECT * FROM builds WHERE kb_id = ? ORDER BY id DESC LIMIT ?", [kb_id, limit])
        out = []
        for row in rows:
            row["layers"] = json.loads(row["layers"])
            row["notes"] = json.loads(row["notes"])
            out.append(row)
        return out

    def record_question(self, kb_id: int, row: dict[str, Any]) -> None:
        with self.write() as db:
            db["questions"].insert({"kb_id": kb_id, "asked_at": _now(), **row})

    def usage(self, kb_id: int) -> dict[str, int]:
        b = self.db.execute(
            "SELECT COALESCE(SUM(prompt_tokens),0), COALESCE(SUM(completion_tokens),0) FROM builds WHERE kb_id=?",
            [kb_id],
        ).fetchone()
        q = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens),0), COALESCE(SUM(completion_tokens),0) FROM questions "
            "WHERE kb_id=?",
            [kb_id],
        ).fetchone()
        return {
            "build_prompt_tokens": b[0],
            "build_completion_tokens": b[1],
            "questions": q[0],
            "question_prompt_tokens": q[1],
            "question_completion_tokens": q[2],
        }

    # -- the full-text index -------------------------------------------------------------------

    def text_search(
        self, kb_id: int, phrases: list[str], limit: int, *, inside_words: bool = False
    ) -> list[tuple[int, float]]:
        """Nodes of a knowledge base holding any of the phrases, best BM25 first: (id, score), the score
        positive and larger for a better match. Each phrase is matched as written (quoted for FTS5), so
        'E-4012' matches the tokens 'e 4012' in that order and no phrase is read as FTS5 syntax.
        `inside_words` (a question in Chinese, Japanese or Korean) matches the phrases inside the text
        instead, where FTS5's tokens would hide them (`substring_search`)."""
        if limit <= 0:
            return []
        if inside_words:
            found = substring_search(self.db, kb_id, [p for p in phrases if any(ch.isalnum() for ch in p)])
            return sorted(found.items(), key=lambda hit: (-hit[1], hit[0]))[:limit]
        quoted = [f'"{p.replace(chr(34), chr(34) * 2)}"' for p in phrases if any(ch.isalnum() for ch in p)]
        if not quoted:
            return []
        return text_search(self.db, kb_id, " OR ".join(quoted), limit)

    def word_forms(self, kb_id: int) -> WordForms:
        """The words of the knowledge base's leaves and how each is written (`text_index.WordForms`), what a
        question's mistyped word is compared with; read once per version of the knowledge base."""
        row = self.db.execute("SELECT version, name, created_at FROM kbs WHERE id = ?", [kb_id]).fetchone()
        key = (kb_id, *(row or ()))  # another process may delete it and make one again under its id
        with self._forms_lock:
            cached = self._word_forms.get(key)
        if cached is None:
            cached = leaf_word_forms(self.db, kb_id)
            self._forget_words(kb_id)
            with self._forms_lock:
                while len(self._word_forms) >= WORD_FORMS_CACHED:
                    self._word_forms.pop(next(iter(self._word_forms)))
                self._word_forms[key] = cached
        return cached

    def _forget_words(self, kb_id: int) -> None:
        """Drop the knowledge base's cached words (`word_forms`)."""
        with self._forms_lock:
            self._word_forms = {k: v for k, v in self._word_forms.items() if k[0] != kb_id}

    def text_index_problems(self) -> list[str]:
        """What is wrong with the knowledge bases' full-text indices: missing, out of step with the nodes,
        or left by a knowledge base that is gone."""
        return text_index_problems(self.db.conn)

    def scrub(self, *, text_index: bool = True) -> bool:
        """After text was removed for privacy: leave none of it readable in the file. Deleted rows are
        already zeroed (`secure_delete`); a knowledge base's full-text index still holds the removed terms
        in its older segments under delete markers until they merge, so each is merged into one ('optimize',
        a rewrite of the indices; `text_index=False` skips it when only other tables changed), and the WAL's
        older page images are copied back and the WAL truncated. Returns False when the WAL was kept busy
        (`db.scrub`)."""
        if text_index:
            with self.write() as db:
                optimize_text_index(db)
        with self._write_lock:
            return scrub(self.db.conn)

    def rebuild_text_index(self) -> None:
        """Recreate every knowledge base's full-text index from its nodes (SQLite's text is the truth)."""
        with self.write() as db:
            rebuild_text_index(db)

    # -- checks -------------------------------------------------------------------------------

    def integrity_problems(self) -> list[str]:
        """SQLite's own check plus the project's invariants; an empty list means healthy."""
        problems = []
        result = [r[0] for r in self.db.execute("PRAGMA integrity_check").fetchall()]
        if result != ["ok"]:
            problems += [f"integrity_check: {r}" for r in result]
        problems += [f"schema: {problem}" for problem in schema_problems(self.db.conn)]
        checks = {
            "edges pointing at missing nodes": "SELECT COUNT(*) FROM edges WHERE parent_id NOT IN (SELECT id FROM nodes) "
            "OR child_id NOT IN (SELECT id FROM nodes)",
            "edges crossing knowledge bases": "SELECT COUNT(*) FROM edges e JOIN nodes p ON p.id = e.parent_id "
            "JOIN nodes c ON c.id = e.child_id WHERE p.kb_id != c.kb_id OR e.kb_id != p.kb_id",
            "nodes of missing documents": "SELECT COUNT(*) FROM nodes WHERE doc_id IS NOT NULL AND doc_id NOT IN "
            "(SELECT id FROM documents)",
            "documents whose node count is wrong": "SELECT COUNT(*) FROM documents d WHERE d.nodes != "
            "(SELECT COUNT(*) FROM nodes n WHERE n.doc_id = d.id)",
            "documents without leaves": "SELECT COUNT(*) FROM documents d WHERE NOT EXISTS "
            "(SELECT 1 FROM nodes n WHERE n.doc_id = d.id AND n.kind = 'leaf')",
            "summaries without children": "SELECT COUNT(*) FROM nodes n WHERE n.kind != 'leaf' AND NOT EXISTS "
            "(SELECT 1 FROM edges e WHERE e.parent_id = n.id)",
            "edges that do not point down the tree": "SELECT COUNT(*) FROM edges e JOIN nodes p ON p.id = "
            "e.parent_id JOIN nodes c ON c.id = e.child_id WHERE p.layer <= c.layer",
            "nodes whose stored lists are malformed": "SELECT COUNT(*) FROM nodes WHERE NOT ("
            f"{_json_list('leaf_ids')} AND {_json_list('heading', item='text')} AND {_json_list('spans', width=2)} "
            f"AND {_json_list('page_marks', width=2)} AND (sentences IS NULL OR {_json_list('sentences', width=4)}))",
            "builds whose stored details are malformed": "SELECT COUNT(*) FROM builds WHERE NOT ("
            "COALESCE(json_valid(layers) AND json_valid(notes), 0))",
        }
        for label, sql in checks.items():
            count = int(self.db.execute(sql).fetchone()[0])
            if count:
                problems.append(f"{count} {label}")
        return problems


def _json_list(column: str, *, item: str = "integer", width: int = 0) -> str:
    """SQL that is true when `column` holds a JSON array of `item`s, or (a `width`) of arrays of that
    many integers: what the store reads back with json.loads and unpacks, so that a row written
    elsewhere (an imported archive) cannot break every question that reaches it."""
    if width:
        bad = (
            f"e.type != 'array' OR json_array_length(e.value) != {width} "
            "OR EXISTS (SELECT 1 FROM json_each(e.value) WHERE type != 'integer')"
        )
    else:
        bad = f"e.type != '{item}'"
    return (
        f"CASE WHEN json_valid({column}) THEN CASE WHEN json_type({column}) = 'array' THEN NOT EXISTS "
        f"(SELECT 1 FROM json_each({column}) e WHERE {bad}) ELSE 0 END ELSE 0 END"
    )


def _merge_spans(spans: list[list[int]]) -> list[list[int]]:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def _unnamed_builds(db: sqlite_utils.Database, kb_id: int, build: dict[str, Any]) -> dict[str, Any]:
    """A removed document's name leaves the build log with it (its earlier builds keep no name), unless
    another document of the knowledge base has that name; returns the removal's own build, named alike."""
    name = build.get("document")
    if name is None or db.execute(
        "SELECT 1 FROM documents WHERE kb_id = ? AND name = ?", [kb_id, name]
    ).fetchone():
        return build
    db.execute("UPDATE builds SET document = NULL WHERE kb_id = ? AND document = ?", [kb_id, name])
    return {**build, "document": None}
