"""Chat messages as documents: which document each message belongs to, and its leaves.

A channel's own messages join its RAPTOR tree as small documents, so that a new message, an edit or a
deletion rebuilds one small subtree and the cross-document layer, never the whole channel: a thread (a
forum post) is one document named by its title; a channel's history is one document per day. Either is
split into parts of at most `group_tokens` tokens. Each message is one leaf (a long one several), which
keeps who wrote it, when, and where it is (`MessageRef`), so an answer cites "message by NAME, DATE".

Nothing here knows Discord: the bot turns its messages into `ChatMessage`s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..types import Chunk, LoadedDocument, MessageRef, Section
from .chunk import chunk_document
from .load import chat_plain, strip_unsafe

CountTokensBatch = Callable[[list[str]], list[int]]
CountTokens = Callable[[str], int]
MESSAGE_FORMAT = "messages"


@dataclass(frozen=True)
class ChatMessage:
    """One message as the engine keeps it: its text and where it came from."""

    message_id: int
    channel_id: int  # the channel or thread it was posted in
    author_id: int
    author: str
    created_at: str  # ISO 8601, UTC
    url: str  # where a reader finds it (a Discord jump link)
    text: str

    def ref(self) -> MessageRef:
        return MessageRef(self.message_id, self.author, self.created_at, self.url)


@dataclass(frozen=True)
class MessagePlace:
    """Where a batch of messages was posted: a channel (grouped by day) or a thread (one document)."""

    channel_id: int
    name: str  # the channel's name, or the thread's (forum post's) title
    thread: bool = False

    def group_key(self, message: ChatMessage) -> str:
        """The document group a message of this place belongs to."""
        if self.thread:
            return f"thread-{self.channel_id}"
        return f"channel-{self.channel_id}-{message.created_at[:10]}"

    def group_name(self, message: ChatMessage) -> str:
        """The group's name as users see it (documents list, citations)."""
        if self.thread:
            return self.name
        return f"#{self.name} {message.created_at[:10]}"


def clean_text(text: str) -> str:
    """A message's text as stored: control and invisible characters removed, its markdown read as Discord
    shows it (`load.chat_plain`: '**Meeting** moved to [Friday](https://…)' is 'Meeting moved to
    Friday'), outer blank space trimmed."""
    return chat_plain(strip_unsafe(text)).strip()


def part_name(group_name: str, part: int) -> str:
    """The document name of one part of a group: the group's name, then '(part N)' from the second on."""
    return group_name if part == 1 else f"{group_name} (part {part})"


def messages_sha(messages: Iterable[ChatMessage]) -> str:
    """The content hash of a message document (its documents row's sha256): ids, authors and texts."""
    canonical = [[m.message_id, m.author_id, m.created_at, m.text] for m in sorted(messages, key=_order)]
    return hashlib.sha256(json.dumps(canonical, ensure_ascii=False).encode()).hexdigest()


def _order(message: ChatMessage) -> int:
    return message.message_id


def pack_parts(
    messages: list[ChatMessage], tokens: dict[int, int], group_tokens: int, first_part: int = 1
) -> list[list[ChatMessage]]:
    """Messages in order, packed greedily into parts of at most `group_tokens` tokens (a longer message
    is a part alone)."""
    parts: list[list[ChatMessage]] = []
    size = 0
    for message in sorted(messages, key=_order):
        cost = tokens.get(message.message_id, 1)
        if not parts or (parts[-1] and size + cost > group_tokens):
            parts.append([])
            size = 0
        parts[-1].append(message)
        size += cost
    return parts


def message_chunks(
    messages: list[ChatMessage],
    count_tokens: CountTokens,
    count_tokens_batch: CountTokensBatch,
    *,
    max_tokens: int,
    hard_limit: int,
    max_chars: int,
) -> tuple[list[Chunk], list[int]]:
    """The leaves' chunks of a message document, and the message id of each chunk.

    A message of at most `max_tokens` tokens is one chunk; a longer one is chunked as a document of its
    own (whole sentences), every piece keeping its message. Offsets are within the document's text, the
    messages joined by blank lines in order."""
    ordered = sorted(messages, key=_order)
    counts = count_tokens_batch([m.text for m in ordered])
    chunks: list[Chunk] = []
    owners: list[int] = []
    offset = 0
    for message, count in zip(ordered, counts, strict=True):
        if count <= max_tokens and len(message.text) <= max_chars:
            pieces = [Chunk(0, message.text, 0, len(message.text), count)]
        else:
            loaded = LoadedDocument("message", message.text, [Section(0, len(message.text))], "txt")
            pieces = chunk_document(
                loaded,
                count_tokens,
                max_tokens=max_tokens,
                hard_limit=hard_limit,
                count_tokens_batch=count_tokens_batch,
                max_chars=max_chars,
            )
        for piece in pieces:
            chunks.append(
                Chunk(len(chunks), piece.text, offset + piece.start, offset + piece.end, piece.tokens)
            )
            owners.append(message.message_id)
        offset += len(message.text) + 2
    return chunks, owners


@dataclass
class PartPlan:
    """One message document to write: its group, part and messages; `old_doc_id` is the stored document
    it replaces (None for a new one)."""

    group_key: str
    group_name: str
    part: int
    messages: list[ChatMessage]
    old_doc_id: int | None = None

    @property
    def name(self) -> str:
        return part_name(self.group_name, self.part)


def plan_additions(
    place: MessagePlace,
    messages: list[ChatMessage],
    stored: dict[str, list[PartPlan]],
    tokens: dict[int, int],
    group_tokens: int,
    stored_keys: dict[int, str] | None = None,
) -> list[PartPlan]:
    """The documents to (re)write so `messages` (new, or edited versions of stored ones) are in the tree.

    `stored` holds each group's stored parts (their messages and document ids), `stored_keys` the group
    of each edited message (wherever it was posted from, it is edited where it is). An edited message stays
    in its part; a new one joins the last part that starts at or before it (messages arrive in order, so
    usually the newest); a part that grows past `group_tokens` is split, the overflow becoming new parts.
    Only touched parts are rewritten."""
    by_group: dict[str, list[ChatMessage]] = {}
    stored_keys = stored_keys or {}
    for message in messages:
        key = stored_keys.get(message.message_id) or place.group_key(message)
        by_group.setdefault(key, []).append(message)
    plans: list[PartPlan] = []
    for key, new in by_group.items():
        parts = [
            PartPlan(p.group_key, p.group_name, p.part, list(p.messages), p.old_doc_id)
            for p in stored.get(key, [])
        ]
        if not parts:
            name = place.group_name(min(new, key=_order))
            packed = pack_parts(new, tokens, group_tokens)
            plans += [PartPlan(key, name, number, chunk) for number, chunk in enumerate(packed, start=1)]
            continue
        touched = {_place_in_parts(parts, message) for message in new}
        next_part = max(p.part for p in parts) + 1
        for index in sorted(touched):
            part = parts[index]
            first, *overflow = pack_parts(part.messages, tokens, group_tokens)
            plans.append(PartPlan(key, part.group_name, part.part, first, part.old_doc_id))
            for extra in overflow:
                plans.append(PartPlan(key, part.group_name, next_part, extra))
                next_part += 1
    return plans


def _place_in_parts(parts: list[PartPlan], message: ChatMessage) -> int:
    """Put `message` in its part (replacing a stored version of it); returns that part's index."""
    for index, part in enumerate(parts):
        for position, held in enumerate(part.messages):
            if held.message_id == message.message_id:
                part.messages[position] = message
                return index
    starts = [min((m.message_id for m in p.messages), default=0) for p in parts]
    index = max((i for i, start in enumerate(starts) if start <= message.message_id), default=0)
    parts[index].messages.append(message)
    return index


class ReusingEmbedder:
    """An embedder that gives the stored vector of a text it was handed (a leaf of the document being
    rebuilt) instead of embedding it again, and embeds only the rest: a message added to, edited in or
    deleted from a document re-embeds only what is new. Everything else is the wrapped embedder's."""

    def __init__(self, embedder: Any, known: dict[str, np.ndarray]):
        self._embedder = embedder
        self._known = known

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed(
        self, texts: list[str], progress: Any = None, *, token_counts: Sequence[int] | None = None
    ) -> np.ndarray:
        """The wrapped embedder's `embed`, for the texts without a stored vector only."""
        fresh = [i for i, text in enumerate(texts) if text not in self._known]
        counts = [token_counts[i] for i in fresh] if token_counts is not None else None
        vectors = self._embedder.embed([texts[i] for i in fresh], progress, token_counts=counts)
        out = np.empty((len(texts), vectors.shape[1] if len(fresh) else self._dim()), dtype=np.float32)
        for row, i in enumerate(fresh):
            out[i] = vectors[row]
        for i, text in enumerate(texts):
            if text in self._known:
                out[i] = self._known[text]
        if progress and not fresh:
            progress(len(texts), len(texts))
        return out

    def _dim(self) -> int:
        return len(next(iter(self._known.values())))
