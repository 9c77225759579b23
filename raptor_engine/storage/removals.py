"""The record of each removal of text from a knowledge base (a document, every document, chat messages),
written by the engine in the removal's own transaction, whoever asked for it (the bot, `raptor forget`,
any other caller), into a store file that holds the bot's tables.

The bot keeps copies of the knowledge base's text in the same file (saved answers behind 'Show context',
thread turns): those copies must lose what a removal took. The record (`bot_removals`, bot migration
m007) says what: the documents (id, name), or every one, or the messages' ids and quote marks, and the
nodes that went. The bot redacts its copies from the pending records (bot/state.py `finish_removals`) at
once when it made the removal, or at its next removal or start when another process did. A file with no
bot tables gets no record: nothing there keeps copies.

What quotes a removed message: an exchange or a saved answer whose text shares a mark of the message's
text, a run of five words or a code-like word (letters and digits mixed, six characters or more). A
summary in a saved context is not traced to the messages under it (a cross-document summary covers them
all, so every answer would go); when the answer repeats words of the message that a summary carried,
the marks catch it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from ..ingest.messages import ChatMessage

TABLE = "bot_removals"

# What removed text becomes in the copies the record asks to redact, by what was removed.
REMOVED_DOCUMENT = "(This text came from a document that was removed from this knowledge base.)"
REMOVED_MESSAGE = "(This text came from a message that was deleted or whose author asked to be forgotten.)"
REMOVED_SOURCE = "a removed document"  # a copied node's document, once it is removed

RUN = 5  # words in a row that mark a quote (fewer would match common phrases)
CODE_CHARS = 6  # a word mixing letters and digits this long marks a quote by itself

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _runs(words: list[str]) -> set[str]:
    return {" ".join(words[i : i + RUN]) for i in range(len(words) - RUN + 1)}


def _codes(words: list[str]) -> set[str]:
    return {
        w
        for w in words
        if len(w) >= CODE_CHARS and any(c.isdigit() for c in w) and any(c.isalpha() for c in w)
    }


def quote_marks(texts: Iterable[str]) -> set[str]:
    """The marks of the removed texts: their five-word runs and their code-like words."""
    marks: set[str] = set()
    for text in texts:
        words = _words(text)
        marks |= _runs(words) | _codes(words)
    return marks


def quotes(text: str, marks: set[str]) -> bool:
    """Whether `text` carries one of the marks."""
    if not marks or not text:
        return False
    words = _words(text)
    return not marks.isdisjoint(_runs(words)) or not marks.isdisjoint(words)


@dataclass(frozen=True)
class Removal:
    """What one removal took out of a knowledge base, as the store's transaction knows it."""

    kb: str
    documents: tuple[tuple[int, str], ...] = ()  # (id, name) of each document removed
    every: bool = False  # every document of the knowledge base went (`clear`)
    messages: tuple[ChatMessage, ...] = field(default=(), repr=False)  # chat messages taken out
    gone_nodes: tuple[int, ...] = ()  # every node that went
    tainted_nodes: tuple[int, ...] = ()  # of those, the ones whose text held or summarised the removed text


@dataclass
class PendingRemoval:
    """A record's `pending` value: what the copies of a knowledge base's text must still lose (the removed
    messages' ids and quote marks, the nodes of their documents that went, the removed documents (id,
    name), or every one). JSON in the file; read back by `loads`, which trusts nothing of it (a store
    from elsewhere: `raptor guilds import`)."""

    ids: set[int] = field(default_factory=set)
    marks: set[str] = field(default_factory=set)
    node_ids: set[int] = field(default_factory=set)
    documents: set[tuple[int, str]] = field(default_factory=set)
    every: bool = False

    @classmethod
    def of(cls, removal: Removal) -> Self:
        return cls(
            {m.message_id for m in removal.messages},
            quote_marks(m.text for m in removal.messages),
            set(removal.gone_nodes) if removal.messages else set(),  # the nodes of the messages' documents
            set(removal.documents),
            removal.every,
        )

    def dumps(self) -> str:
        return json.dumps(
            {
                "ids": sorted(self.ids),
                "marks": sorted(self.marks),
                "node_ids": sorted(self.node_ids),
                "documents": sorted([i, name] for i, name in self.documents),
                "every": self.every,
            }
        )

    @classmethod
    def loads(cls, raw: str) -> Self | None:
        """A pending record read back (of the class it is called on); None when it is not of that shape."""
        try:
            value = json.loads(raw)
        except (ValueError, TypeError, RecursionError):
            return None
        if not isinstance(value, dict):
            return None

        def listed(key: str) -> list[Any]:
            item = value.get(key)
            return item if isinstance(item, list) else []

        return cls(
            {i for i in listed("ids") if is_id(i)},
            {m for m in listed("marks") if isinstance(m, str)},
            {i for i in listed("node_ids") if is_id(i)},
            set(id_pairs(value.get("documents"))),
            value.get("every") is True,
        )


def is_id(value: object) -> bool:
    """Whether a value read from JSON is an id (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def id_pairs(value: object) -> list[tuple[int, str]]:
    """The (id, name) pairs of a JSON value read back, the malformed ones left out ([] for a non-list)."""
    return [
        (pair[0], pair[1])
        for pair in (value if isinstance(value, list) else [])
        if isinstance(pair, list) and len(pair) == 2 and is_id(pair[0]) and isinstance(pair[1], str)
    ]


def has_record_table(db: Any) -> bool:
    """Whether the store file holds the record's table (the bot's tables, bot migration m007)."""
    row = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [TABLE]).fetchone()
    return row is not None


def record_removal(db: Any, removal: Removal) -> bool:
    """Write `removal`'s record in the open transaction (the removal's), when the file has the table; True
    when written. The note is what the removed text becomes; the source, what its document is then called;
    `nodes` (ids, no text) the nodes whose text held or summarised it, kept after the redaction a while,
    for copies written while the removal landed (bot/state.py `_without_removed_since`)."""
    if not has_record_table(db):
        return False
    by_document = bool(removal.documents) or removal.every
    db.execute(
        f"INSERT INTO {TABLE} (kb, at, note, source, pending, nodes) VALUES (?, ?, ?, ?, ?, ?)",  # noqa: S608
        [
            removal.kb,
            time.time(),
            REMOVED_DOCUMENT if by_document else REMOVED_MESSAGE,
            REMOVED_SOURCE if by_document else None,
            PendingRemoval.of(removal).dumps(),
            json.dumps(list(removal.tainted_nodes)),
        ],
    )
    return True
