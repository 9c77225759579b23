"""Messages that change after they were added: sync, deletions, forget-me, and the reconcile at start.

Deletions are always honoured, synced or not: a message deleted in Discord (one, a bulk delete, its thread
or channel deleted) leaves every knowledge base of its server that holds it, and so does every message
of a member who runs /kb forget-me (recorded, so they are not added again). An edit replaces the stored
text wherever the message is held. With `/kb sync enabled`, new messages in the channel (and its threads)
are added too. Events are queued per knowledge base and applied by one task each, straight away: a
deletion is gone from the store and the index once its task has rebuilt the message's small document
(seconds), and a saved answer's 'Show context' no longer shows the nodes that went.

What happened while the bot was down is reconciled when it starts: for each channel whose messages a
knowledge base holds, the history from its oldest stored message to its newest (to now, when synced) is
read again; a message no longer there is removed (a deleted channel or thread removes all of its), an
edited one replaced, and in a synced channel new ones are added.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import discord

from raptor_engine.ingest.messages import ChatMessage, MessagePlace

from .kb import guild_prefix, kb_for_channel, parse_kb_name
from .messages import add_chats, chat_message, place_of
from .services import Services
from .state import REMOVED_MESSAGE
from .uploads import Post

log = logging.getLogger(__name__)

DELETED_REMEMBERED = 10_000  # ids of deleted messages kept, so a late edit event cannot add one back
REDACTED = REMOVED_MESSAGE  # what a removed message's text becomes in saved answers and thread turns


def guild_of(kb: str) -> int:
    """The server a knowledge base of the bot belongs to (its name carries it)."""
    ids = parse_kb_name(kb)
    if ids is None:
        raise ValueError(f"{kb!r} is not a channel's knowledge base")
    return ids[0]


@dataclass
class KbQueue:
    """What waits to be applied to one knowledge base; coalesced, so a burst costs one rebuild."""

    deletes: set[int] = field(default_factory=set)
    channels: set[int] = field(default_factory=set)  # deleted channels or threads: all their messages go
    upserts: dict[int, tuple[MessagePlace, ChatMessage, bool]] = field(
        default_factory=dict
    )  # id -> (.., new ok)
    task: asyncio.Task[None] | None = None

    def empty(self) -> bool:
        return not (self.deletes or self.channels or self.upserts)


def remember(ids: OrderedDict[int, Any], key: int, value: Any) -> None:
    """Keep `key` as the newest of `ids`, which holds at most DELETED_REMEMBERED (the oldest go)."""
    ids[key] = value
    ids.move_to_end(key)
    while len(ids) > DELETED_REMEMBERED:
        ids.popitem(last=False)


class MessageSync:
    """Routes message events to the knowledge bases that hold (or, synced, should hold) the messages."""

    def __init__(self, services: Services):
        self.services = services
        self.engine = services.engine
        self._sources: dict[
            int, set[str]
        ] = {}  # channel or thread id -> knowledge bases holding its messages
        self._loaded: set[int] = set()  # guilds whose sources were read from the store
        self._sync: dict[str, bool] = {}
        self._queues: dict[str, KbQueue] = {}
        self._deleted: OrderedDict[int, None] = OrderedDict()  # the last DELETED_REMEMBERED deleted ids
        # what else takes a posted file back while it is being added (`taken_back`), as many kept:
        self._kept: OrderedDict[int, frozenset[int]] = OrderedDict()  # edited message -> attachments it kept
        self._channels_gone: OrderedDict[int, None] = OrderedDict()  # deleted channels and threads
        self._idle = asyncio.Event()
        self._idle.set()

    # ------------------------------------------------------------------ where messages are held

    async def holders(self, guild_id: int, channel_id: int) -> set[str]:
        """The knowledge bases of this server that hold messages of this channel or thread."""
        if guild_id not in self._loaded:
            await self._load_guild(guild_id)
        return set(self._sources.get(channel_id, ()))

    async def _load_guild(self, guild_id: int) -> None:
        space = self.services.state.space_of_guild(guild_id)
        names = await self.services.call(self.engine.knowledge_bases, space)
        for kb in names:
            if kb.startswith(guild_prefix(guild_id)):
                for channel_id in await self.services.call(self.engine.message_channels, kb):
                    self._sources.setdefault(channel_id, set()).add(kb)
        self._loaded.add(guild_id)

    def note_source(self, kb: str, channel_id: int) -> None:
        """`kb` now holds messages of `channel_id` (after an import or an added message)."""
        self._sources.setdefault(channel_id, set()).add(kb)

    def forget_kb(self, kb: str) -> None:
        for kbs in self._sources.values():
            kbs.discard(kb)
        self._sync.pop(kb, None)

    async def sync_enabled(self, kb: str) -> bool:
        if kb not in self._sync:
            self._sync[kb] = await self.services.state.sync_enabled(kb)
        return self._sync[kb]

    def sync_changed(self, kb: str) -> None:
        self._sync.pop(kb, None)

    # ------------------------------------------------------------------ gateway events

    async def message_created(self, message: discord.Message) -> None:
        """A new message: added when its channel syncs (and the bot can read what people write)."""
        if message.guild is None or not self.services.message_content:
            return
        kb = kb_for_channel(message.guild.id, message.channel)
        if kb is None or not await self.sync_enabled(kb):
            return
        chat = chat_message(message, await self.services.state.forgotten(message.guild.id))
        if chat is not None and chat.message_id not in self._deleted:
            self._queue(kb).upserts[chat.message_id] = (place_of(message.channel), chat, True)
            self._start(kb)

    async def message_edited(self, payload: discord.RawMessageUpdateEvent) -> None:
        """An edit replaces the text wherever the message is held; one left with no text is removed."""
        if payload.guild_id is None or not self.services.message_content or payload.message_id in self._deleted:
            return  # an edit event that came after the message's deletion must not add it back
        message = payload.message
        synced = kb_for_channel(payload.guild_id, message.channel)
        kbs = await self.holders(payload.guild_id, payload.channel_id)
        answer_thread = await self._answer_thread(payload.guild_id, payload.channel_id)
        if synced is not None and await self.sync_enabled(synced) and not answer_thread:
            kbs.add(synced)
        if not kbs:  # most edits: a channel no knowledge base reads
            return
        chat = chat_message(message, await self.services.state.forgotten(payload.guild_id))
        for kb in kbs:
            queue = self._queue(kb)
            if chat is None:
                queue.deletes.add(payload.message_id)
            else:
                queue.upserts[chat.message_id] = (place_of(message.channel), chat, kb == synced)
            self._start(kb)

    async def _answer_thread(self, guild_id: int, channel_id: int) -> bool:
        """Whether the channel is a thread the bot opened on an answer: its follow-ups are a conversation
        with the bot, never synced (a new one is answered, not added; so is an edited one)."""
        return await self.services.state.thread(guild_id, channel_id) is not None

    async def messages_deleted(self, guild_id: int | None, channel_id: int, message_ids: set[int]) -> None:
        if guild_id is None:
            return
        self._remember_deleted(message_ids)
        for kb in await self.holders(guild_id, channel_id):
            queue = self._queue(kb)
            queue.deletes |= message_ids
            for message_id in message_ids:
                queue.upserts.pop(message_id, None)
            self._start(kb)

    def was_deleted(self, message_id: int) -> bool:
        """Whether Discord said this message was deleted (one of the last DELETED_REMEMBERED)."""
        return message_id in self._deleted

    def _remember_deleted(self, message_ids: set[int]) -> None:
        for message_id in message_ids:
            remember(self._deleted, message_id, None)

    def attachments_edited(self, message_id: int, kept: frozenset[int]) -> None:
        """A message was edited and now carries the attachments `kept` (ids)."""
        remember(self._kept, message_id, kept)

    def taken_back(self, post: Post) -> str | None:
        """Why the posted file `post` is no longer offered, as Discord has told since it was posted (its
        message deleted or edited to drop it, its channel or thread deleted), or None: a file still being
        added when that happened must leave as soon as it is stored."""
        if post.message_id in self._deleted:
            return "its message was deleted"
        if post.channel_id in self._channels_gone:
            return "its channel or thread was deleted"
        kept = self._kept.get(post.message_id)
        if kept is not None and post.attachment_id not in kept:
            return "its message was edited to drop it"
        return None

    async def channel_deleted(self, guild_id: int | None, channel_id: int) -> None:
        """A channel or thread was deleted: its messages leave every knowledge base that holds them."""
        remember(self._channels_gone, channel_id, None)
        if guild_id is None:
            return
        for kb in await self.holders(guild_id, channel_id):
            self._queue(kb).channels.add(channel_id)
            self._start(kb)
        self._sources.pop(channel_id, None)

    # ------------------------------------------------------------------ forget-me

    async def forget_member(self, guild_id: int, user_id: int) -> int:
        """Record the opt-out, then take the member's messages out of every knowledge base of the server;
        returns how many messages went. The opt-out counts from the first line: an add that gets its turn
        after the removal leaves theirs out (`messages.add_chats`), and the removal takes every message of
        theirs held when it gets its turn, so none stored by an add before it escapes."""
        await self.services.state.forget_me(guild_id, user_id)
        space = self.services.state.space_of_guild(guild_id)
        removed = 0
        for kb in await self.services.call(self.engine.knowledge_bases, space):
            if kb.startswith(guild_prefix(guild_id)):
                removed += await self._remove(kb, [], author_id=user_id)
        return removed

    # ------------------------------------------------------------------ applying

    def _queue(self, kb: str) -> KbQueue:
        return self._queues.setdefault(kb, KbQueue())

    def _start(self, kb: str) -> None:
        queue = self._queues[kb]
        self._idle.clear()
        if queue.task is None or queue.task.done():
            queue.task = asyncio.get_running_loop().create_task(self._drain(kb))

    async def _drain(self, kb: str) -> None:
        """Apply what waits for `kb` until nothing does; deletions first."""
        queue = self._queues[kb]
        while not queue.empty():
            deletes, channels, upserts = queue.deletes, queue.channels, queue.upserts
            queue.deletes, queue.channels, queue.upserts = set(), set(), {}
            try:
                await self._apply(kb, deletes, channels, upserts)
            except Exception:
                log.exception("applying message changes to %s failed; the next start reconciles them", kb)
        if all(
            q.empty() and (q.task is None or q.task.done() or q.task is asyncio.current_task())
            for q in self._queues.values()
        ):
            self._idle.set()

    async def _apply(
        self,
        kb: str,
        deletes: set[int],
        channels: set[int],
        upserts: dict[int, tuple[MessagePlace, ChatMessage, bool]],
    ) -> None:
        for channel_id in channels:
            deletes |= set(await asyncio.to_thread(self.engine.message_ids, kb, channel_id=channel_id))
        if deletes:
            await self._remove(kb, deletes)
        if not upserts:
            return
        held = set(await asyncio.to_thread(self.engine.message_ids, kb))
        by_place: dict[MessagePlace, list[ChatMessage]] = {}
        for message_id, (place, chat, may_add) in upserts.items():
            if may_add or message_id in held:
                by_place.setdefault(place, []).append(chat)
        guild_id = guild_of(kb)
        for place, chats in by_place.items():
            self.note_source(kb, place.channel_id)  # before: a deletion arriving meanwhile must find it
            await add_chats(self.services, kb, guild_id, place, chats, "sync")

    async def _remove(self, kb: str, message_ids: set[int] | list[int], author_id: int | None = None) -> int:
        """Remove messages from `kb` (with `author_id`, every one of that author's too), then what quoted
        them from its saved answers and thread turns: the engine records what they must lose in the removal's
        own transaction (`record_removal`), then it is done (`finish_removals`)."""
        await self.services.state.ready_for_removal(kb)
        result = await self.engine.remove_messages(kb, message_ids, author_id=author_id)
        if result.removed:
            await self.services.state.finish_removals(kb)
            log.info("removed %d message(s) from %s in %.1f s", result.removed, kb, result.seconds)
        return result.removed

    async def settled(self, timeout: float | None = None) -> bool:
        """Wait until every queued change is applied (tests, and a graceful stop)."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        for queue in self._queues.values():
            if queue.task is not None and not queue.task.done():
                queue.task.cancel()

    # ------------------------------------------------------------------ reconcile at start

    async def reconcile(self, channel_for: Callable[[int, int], Awaitable[Any | None]]) -> int:
        """Apply what changed while the bot was down to every knowledge base holding messages; returns how
        many channels were read. `channel_for(guild_id, channel_id)` gives a channel to read the history of."""
        kbs = await self.services.call(self.engine.knowledge_bases)
        read = 0
        for kb in kbs:
            ids = parse_kb_name(kb)
            if ids is None:
                continue
            for channel_id in await self.services.call(self.engine.message_channels, kb):
                self.note_source(kb, channel_id)
                try:
                    channel = await channel_for(ids[0], channel_id)
                    if channel is None:  # a stored message of another guild's channel: not read there
                        continue
                    await self._reconcile_channel(kb, ids[0], channel)
                    read += 1
                except Exception:
                    log.exception("reconciling the messages of %s in %s failed", channel_id, kb)
        return read

    async def _reconcile_channel(self, kb: str, guild_id: int, channel: Any) -> None:
        stored = set(await asyncio.to_thread(self.engine.message_ids, kb, channel_id=channel.id))
        if not stored:
            return
        synced = await self.sync_enabled(kb) and kb_for_channel(guild_id, channel) == kb
        newest = max(stored)
        present: dict[int, discord.Message] = {}
        try:
            history = channel.history(limit=None, after=discord.Object(min(stored) - 1), oldest_first=True)
            async for message in history:
                if message.id > newest and not synced:
                    break  # past what this knowledge base holds: nothing there to check
                present[message.id] = message
        except discord.NotFound:  # the channel or thread is gone: so are its messages
            log.info("channel %s of %s was deleted while the bot was down", channel.id, kb)
            await self._remove(kb, stored)
            return
        except discord.Forbidden:
            log.warning(
                "cannot read channel %s any more; its messages in %s were left as they are", channel.id, kb
            )
            return
        forgotten = await self.services.state.forgotten(guild_id)
        gone = {i for i in stored if i not in present}
        chats: list[ChatMessage] = []
        for message_id, message in present.items():
            if message_id not in stored and not synced:
                continue
            chat = chat_message(message, forgotten)
            if chat is None and message_id in stored and self._sees_content(message):
                gone.add(message_id)  # its text was removed, or its author opted out
            elif chat is not None:
                chats.append(chat)
        if gone:
            log.info("%d message(s) of channel %s were deleted while the bot was down", len(gone), channel.id)
            await self._remove(kb, gone)
        if chats and self.services.message_content:
            await add_chats(self.services, kb, guild_id, place_of(channel), chats, "sync")

    def _sees_content(self, message: discord.Message) -> bool:
        """Whether an empty text means the message has none (not that Discord hid it: no intent)."""
        return self.services.message_content or message.author.bot
