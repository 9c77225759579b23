"""The records the store reads and writes (nodes to store, documents, tops, tree shapes) and the errors
it raises: their own module, so that the store and its chat-message tables (`message_store`) both use
them without importing each other."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlite_utils

from ..errors import RaptorError
from ..ingest.sentences import SentenceSpan
from .text_index import create_kb_index


@dataclass
class NewNode:
    """A node built in memory, not yet stored. `children` refer to other NewNodes by `key`,
    or to stored nodes by id through `stored_children`."""

    key: int
    layer: int
    kind: str  # "leaf" | "summary" | "kb"
    text: str
    tokens: int
    embedding: np.ndarray
    children: list[int] = field(default_factory=list)
    stored_children: list[int] = field(default_factory=list)
    start: int | None = None
    end: int | None = None
    page: int | None = None
    heading: tuple[str, ...] = ()
    page_marks: tuple[tuple[int, int], ...] = ()  # where each page begins in `text` (leaves)
    sentences: list[SentenceSpan] | None = None  # stored for retrieval (see `sentences.sentence_spans`)
    code: bool = False  # a leaf wholly inside a block of code (`Chunk.code`)


@dataclass
class DocumentInfo:
    id: int
    name: str
    sha256: str
    size: int
    format: str
    added_by: str
    added_at: str
    chunks: int
    layers: int
    nodes: int
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class StoredTop:
    id: int
    layer: int
    text: str
    tokens: int
    embedding: np.ndarray


@dataclass
class StoredNode:
    id: int
    kb_id: int
    doc_id: int | None
    document: str | None
    layer: int
    kind: str
    text: str
    tokens: int
    leaf_count: int
    start: int | None
    end: int | None
    page: int | None
    heading: tuple[str, ...]
    page_marks: tuple[tuple[int, int], ...] = ()
    sentences: str | None = None  # stored sentence spans, JSON (`sentences.decode_spans`); None if older
    code: bool = False  # a leaf wholly inside a block of code (`Chunk.code`)


@dataclass
class TreeShape:
    """A tree's structure only: (doc id, name) in document order, (id, doc id, layer, kind), (parent, child)."""

    documents: list[tuple[int, str]]
    nodes: list[tuple[int, int | None, int, str]]
    edges: list[tuple[int, int]]


class StoreReplacedError(RaptorError):
    """The store's file was deleted or replaced under it (its directory removed while in use)."""


class StaleTreeError(Exception):
    """Another writer (another process) changed the knowledge base after its tops were read."""


def _check_version(db: sqlite_utils.Database, kb_id: int, expected: int | None) -> None:
    if expected is None:
        return
    row = db.execute("SELECT version FROM kbs WHERE id = ?", [kb_id]).fetchone()
    if row is None or int(row[0]) != expected:
        raise StaleTreeError(f"knowledge base {kb_id} is at version {row and row[0]}, expected {expected}")


def create_kb(db: sqlite_utils.Database, name: str) -> int:
    """The id of the knowledge base `name`, created (with its full-text index) in the caller's
    transaction if it is new."""
    db.execute("INSERT OR IGNORE INTO kbs (name, created_at) VALUES (?, ?)", [name, _now()])
    kb_id = int(db.execute("SELECT id FROM kbs WHERE name = ?", [name]).fetchone()[0])
    create_kb_index(db, kb_id)
    return kb_id


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()
