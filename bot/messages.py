"""A channel's own messages into its knowledge base: /kb add-messages and 'Add to knowledge base' on a
message without a file.

A message becomes an engine `ChatMessage` (its text, author, time and jump link); the engine groups them
into small documents (a day of a channel, a thread or forum post) and builds their subtrees. Bots' and
system messages, empty ones and those of members who asked to be forgotten (`/kb forget-me`) are left
out. A history import reads oldest first in batches, puts each batch in the tree before reading on,
shows its progress in one message (edited at most once a second) and is recorded (bot_message_imports):
a restarted bot carries on after the last message it stored. Attachments of supported types in the
history are added as files, as uploads are.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import discord

from raptor_engine.engine import MessagesResult
from raptor_engine.errors import RaptorError
from raptor_engine.ingest.messages import ChatMessage, MessagePlace

from .adding import add_files, is_supported, screen
from .jobs import StatusMessage, ThrottledEditor
from .kb import channel_of_guild, guild_id_of, parse_kb_name
from .posted import post_of
from .render import inert, truncate
from .services import Services
from .state import MessageImport
from .uploads import Post

log = logging.getLogger(__name__)

IMPORT_BATCH = 500  # messages read, then put in the tree, at a time
MAX_IMPORT = 10_000  # the most messages one /kb add-messages reads
NEEDS_CONTENT = (
    "This bot runs without the Message Content intent, so Discord does not show it what people write; "
    "ask the bot's owner to enable it (see docs/BOT.md)."
)


def iso_time(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def chat_message(
    message: discord.Message, forgotten: set[int] | frozenset[int] = frozenset(), guild_id: int | None = None
) -> ChatMessage | None:
    """The engine's view of a member's message; None for bots', webhooks', system and empty messages,
    and for members who asked to be forgotten. `guild_id` names the server of a message that does not
    know it (one an interaction carries), for its jump link."""
    if message.author.bot or message.webhook_id is not None or message.is_system():
        return None
    if message.author.id in forgotten or not message.content.strip():
        return None
    return ChatMessage(
        message_id=message.id,
        channel_id=message.channel.id,
        author_id=message.author.id,
        author=message.author.display_name,
        created_at=iso_time(message.created_at),
        url=message.jump_url
        if message.guild is not None or guild_id is None
        else f"https://discord.com/channels/{guild_id}/{message.channel.id}/{message.id}",
        text=message.content,
    )


async def add_chats(
    services: Services, kb: str, guild_id: int, place: MessagePlace, chats: list[ChatMessage], added_by: str
) -> MessagesResult:
    """Messages into `kb`, leaving out, at the moment they are stored, those of members who opted out: a
    /kb forget-me that ran while these were read or waited their turn is honoured (`Engine.add_messages`'s
    `keep`, over the server's live opt-out set)."""
    forgotten = await services.state.forgotten(guild_id)
    return await services.engine.add_messages(
        kb, place, chats, added_by=added_by, keep=lambda chat: chat.author_id not in forgotten
    )


def place_of(channel: Any) -> MessagePlace:
    """A thread or forum post is one document named by its title; a channel is grouped by day."""
    name = str(getattr(channel, "name", None) or channel.id)
    return MessagePlace(channel.id, name, thread=isinstance(channel, discord.Thread))


@dataclass
class ImportTotals:
    """What an import has done so far, for its progress line and its final one."""

    read: int = 0
    added: int = 0
    edited: int = 0
    skipped: int = 0
    documents: set[str] = field(default_factory=set)
    attachments: list[discord.Attachment] = field(default_factory=list)
    posts: dict[int, Post] = field(default_factory=dict)  # by attachment id: the message that posted it

    def count(self, result: MessagesResult) -> None:
        self.added += result.added
        self.edited += result.edited
        self.documents.update(result.documents)

    def line(self) -> str:
        return (
            f"{self.read:,} messages read, {self.added:,} added"
            + (f", {self.edited:,} updated" if self.edited else "")
            + f", {self.skipped:,} skipped (bots, system, empty or opted out) · {len(self.documents)} document(s)"
        )


async def batches(history: AsyncIterator[discord.Message], size: int) -> AsyncIterator[list[discord.Message]]:
    batch: list[discord.Message] = []
    async for message in history:
        batch.append(message)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


async def sources_of(channel: Any) -> list[Any]:
    """What one import reads: a forum's every post (active and archived threads), else the channel itself."""
    if not isinstance(channel, discord.ForumChannel):
        return [channel]
    posts = {thread.id: thread for thread in channel.threads}
    async for thread in channel.archived_threads(limit=None):
        posts.setdefault(thread.id, thread)
    return sorted(posts.values(), key=lambda thread: thread.id)


async def import_history(
    services: Services, record: MessageImport, channel: Any, status: StatusMessage, name: str
) -> ImportTotals:
    """Read `channel`'s history oldest first (a forum: every post) into `record.kb`, batch by batch, showing
    progress on `status`; the record notes how far it got after each batch, so a restart carries on."""
    async with ThrottledEditor(status.show, interval=services.status_interval) as editor:
        return await _imported(services, record, channel, editor, name)


async def _imported(
    services: Services, record: MessageImport, channel: Any, editor: ThrottledEditor, name: str
) -> ImportTotals:
    """`import_history` with its status's editor, which it finishes."""
    totals = ImportTotals()
    header = f"Adding the messages of {name} to this channel's knowledge base…"
    editor.request(f"{header}\n⏳ reading…")
    forgotten = await services.state.forgotten(record.guild_id)
    sources = await sources_of(channel)
    resumable = len(sources) == 1
    try:
        for source in sources:
            after = discord.Object(record.after_id) if resumable and record.after_id else None
            limit = record.remaining
            if limit is not None and limit <= 0:
                break
            history = source.history(limit=limit, after=after, oldest_first=True)
            async for batch in batches(history, IMPORT_BATCH):
                await _import_batch(services, record, source, batch, forgotten, totals)
                record.after_id = batch[-1].id if resumable else record.after_id
                await services.state.import_progress(record)
                editor.request(f"{header}\n⏳ {totals.line()}")
            await _import_pins(services, record, source, forgotten, totals)
    except RaptorError as error:
        record.status = "failed"
        await services.state.import_progress(record)
        await editor.finish(f"{header}\n❌ Stopped: {inert(str(error))}\n{totals.line()}")
        return totals
    record.status = "done"
    await services.state.import_progress(record)
    await editor.finish(
        f"Done: the messages of {name} are in this channel's knowledge base.\n✅ {totals.line()}"
    )
    return totals


async def _import_batch(
    services: Services,
    record: MessageImport,
    source: Any,
    batch: list[discord.Message],
    forgotten: set[int],
    totals: ImportTotals,
) -> None:
    """One batch of history into the tree; files of supported types kept aside to add as uploads."""
    totals.read += len(batch)
    if record.remaining is not None:
        record.remaining -= len(batch)
    chats = [c for c in (chat_message(m, forgotten) for m in batch) if c is not None]
    totals.skipped += len(batch) - len(chats)
    for m in batch:
        if m.author.bot or m.author.id in forgotten:
            continue
        for a in m.attachments:
            if is_supported(a.filename):
                totals.attachments.append(a)
                totals.posts[a.id] = post_of(m, a)
    if chats:
        totals.count(
            await add_chats(services, record.kb, record.guild_id, place_of(source), chats, record.added_by)
        )


async def _import_pins(
    services: Services, record: MessageImport, source: Any, forgotten: set[int], totals: ImportTotals
) -> None:
    """Pinned messages (rules, FAQs) join even when the history read stopped short of them."""
    try:
        pins = [m async for m in source.pins(limit=None)]
    except discord.HTTPException as error:
        log.info("could not read the pins of %s: %s", source.id, error)
        return
    chats = [c for c in (chat_message(m, forgotten) for m in pins) if c is not None]
    if chats:
        totals.count(
            await add_chats(services, record.kb, record.guild_id, place_of(source), chats, record.added_by)
        )


async def add_history_files(
    services: Services, kb: str, totals: ImportTotals, added_by: str, status: StatusMessage
) -> None:
    """The supported files found in the history, added as uploads are (type and size checked first)."""
    if not totals.attachments:
        return
    accepted, refused = screen(
        totals.attachments[: services.jobs.max_waiting], services.settings.max_file_bytes
    )
    refusal = services.jobs.refusal(kb, len(accepted))
    if refusal or not accepted:
        await status.show("\n".join(([refusal] if refusal else []) + refused))
        return
    await add_files(services, kb, accepted, refused, added_by, status, totals.posts)


async def add_one_message(
    services: Services, kb: str, guild_id: int, message: discord.Message, added_by: str
) -> str:
    """'Add to knowledge base' on a message without a file: its text joins the tree; the reply line."""
    chat = chat_message(message, await services.state.forgotten(guild_id), guild_id)
    if chat is None:
        return "That message has no text to add (bots', system and empty messages, and those of members who asked to be forgotten, are not added)."
    if services.sync is not None:
        services.sync.note_source(kb, chat.channel_id)
    result = await add_chats(services, kb, guild_id, place_of(message.channel), [chat], added_by)
    if not result.added and not result.edited:
        return "That message is already in this channel's knowledge base."
    where = inert(truncate(result.documents[0], 120)) if result.documents else "this channel's knowledge base"
    return f"✅ Added the message by {inert(truncate(chat.author, 80))} to **{where}**."


def parse_after(text: str | None) -> int | None:
    """`after` as a message id or link ('…/channels/G/C/M'); RaptorError with one sentence otherwise."""
    if not text:
        return None
    tail = text.strip().rstrip("/").rsplit("/", 1)[-1]
    if not tail.isdigit():
        raise RaptorError("`after` must be a message link or id (right-click a message → Copy Message Link).")
    return int(tail)


async def run_import(
    services: Services, record: MessageImport, channel: Any, status: StatusMessage, requester: str
) -> None:
    """An import from start (or a resumed one) to its end: the history, then the files found in it."""
    name = inert(f"#{getattr(channel, 'name', channel.id)}")
    async with services.jobs.track():
        try:
            if services.sync is not None:  # before reading: a deletion arriving meanwhile must find it
                for source in await sources_of(channel):
                    services.sync.note_source(record.kb, source.id)
            totals = await import_history(services, record, channel, status, name)
        except discord.Forbidden:
            record.status = "failed"
            await services.state.import_progress(record)
            await status.show(
                f"❌ The bot cannot read the history of {name} (it needs View Channel and Read Message History)."
            )
            return
        files_status = StatusMessage(
            status.channel, requester_id=status.requester_id, token_lifetime=services.token_lifetime
        )
        await add_history_files(services, record.kb, totals, requester, files_status)


async def resume_imports(services: Services, client: discord.Client) -> int:
    """Carry on every history import a previous run recorded and did not finish; returns how many."""
    kbs = await services.call(services.engine.knowledge_bases)
    guilds = {ids[0] for ids in map(parse_kb_name, kbs) if ids is not None}
    guilds |= {int(name) for name in services.engine.spaces.names() if name.isdigit()}
    resumed = 0
    for guild_id in sorted(guilds):
        for record in await services.state.unfinished_imports(guild_id):
            if record.run_id == services.run_id:  # started by a command of this run meanwhile
                continue
            channel = client.get_channel(record.source_id)
            if channel is None:
                try:
                    channel = await client.fetch_channel(record.source_id)
                except discord.HTTPException as error:
                    log.info("import %d cannot resume: %s", record.id, error)
                    record.status = "failed"
                    await services.state.import_progress(record)
                    continue
            status_channel = await _status_channel(client, record)
            if guild_id_of(channel) != guild_id or status_channel is None:
                # a record naming another guild's channel (a store from elsewhere): nothing is read or posted
                log.warning("import %d names a channel of another guild than %s; it is not resumed", record.id, guild_id)
                record.status = "failed"
                await services.state.import_progress(record)
                continue
            messageable = client.get_partial_messageable(status_channel, guild_id=guild_id)
            status = StatusMessage(
                messageable, requester_id=record.requester_id, token_lifetime=services.token_lifetime
            )
            await run_import(services, record, channel, status, record.added_by)
            resumed += 1
    return resumed


async def _status_channel(client: discord.Client, record: MessageImport) -> int | None:
    """The id of the channel a resumed import reports in (where it was asked, else its source), when it is the
    import's guild's (`channel_of_guild`); None when it is another guild's."""
    channel_id = record.status_channel_id or record.source_id
    return channel_id if await channel_of_guild(client, record.guild_id, channel_id) is not None else None
