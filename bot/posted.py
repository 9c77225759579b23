"""Files posted in messages leave with their message.

A file added from a message (auto-ingest, or *Apps → Add to knowledge base* on it) is that member's post:
when the message is deleted, its channel or thread deleted, or the message edited to drop the file, the
document it became leaves the knowledge base as `/kb remove` would take it (its nodes, the cross-document
layer made again, its text in saved *Show context* pages replaced by a note). A message deleted or edited while the bot was down is
found when it starts again (`reconcile`). The member's `/kb forget-me` takes
every document of the files they posted, and files they post later are not added. A message deleted while its file
is still being added, edited to drop it or its channel or thread deleted, takes the document as soon as
it is stored, and the file's progress line says so. A restarted bot that builds a posted
file it had not finished records it the same way, and removes it at once when its message went while the
bot was down. A file added with `/kb add` has no message behind it (a slash command's attachment belongs
to its interaction) and stays until a manager removes it with `/kb remove`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import discord

from raptor_engine.errors import NotFoundError

from .kb import parse_kb_name
from .services import Services
from .state import PostedFile
from .uploads import Post

log = logging.getLogger(__name__)



async def remove_document(services: Services, kb: str, sha256: str) -> None:
    """Forget a document, then its text in this channel's saved answers ('Show context') and threads. The
    engine records what they must lose in the removal's own transaction (`record_removal`), so a crash
    before they are redacted leaves it for the next start (`BotState.finish_every_removal`)."""
    await services.state.ready_for_removal(kb)
    await services.engine.forget(kb, sha256)
    await services.state.finish_removals(kb)
    await forget_uploads(services, kb, sha256)


async def clear_documents(services: Services, kb: str) -> int:
    """Remove every document of a knowledge base (`/kb clear`), then their text and names from this
    channel's saved answers and threads, as `remove_document` does for one; returns how many there were."""
    await services.state.ready_for_removal(kb)
    count = await services.engine.clear(kb)
    await services.state.finish_removals(kb)
    await forget_uploads(services, kb)
    return count


async def forget_uploads(services: Services, kb: str, sha256: str | None = None) -> None:
    """The upload log's finished rows of the removed document(s) go too (`UploadLog.forget`)."""
    uploads = services.jobs.uploads
    if uploads is not None:
        await asyncio.to_thread(uploads.forget, kb, sha256)


def post_of(message: discord.Message, attachment: discord.Attachment) -> Post:
    """Where `attachment` was posted: what its document's removal with the message needs."""
    return Post(message.channel.id, message.id, attachment.id, message.author.id)


async def remember_posted(services: Services, kb: str, post: Post, sha256: str) -> tuple[PostedFile | None, str | None]:
    """Record that the document `sha256` came from the posted attachment `post`: (the record, or None when
    it could not be written, logged, the document staying as a /kb add's would; why the document was
    removed at once, or None): its message deleted or edited to drop it, or its channel or thread deleted,
    while the file was being added."""
    file = PostedFile(kb, post.channel_id, post.message_id, post.attachment_id, sha256, post.author_id)
    try:
        await services.state.add_posted_file(file)
    except Exception:
        log.exception("could not record that %s came from message %s", sha256[:12], post.message_id)
        return None, None
    why = services.sync.taken_back(post) if services.sync is not None else None
    if why is not None:
        await _remove(services, [file], f"{why} while the file was being added")
    return file, why


async def remember_resumed(
    services: Services, kb: str, post: Post, sha256: str, channel_for: Callable[[int], Any]
) -> bool:
    """A restarted bot built a posted file it had not finished: record it, then remove it at once if its
    message was deleted, or edited to drop the file, while the bot was down; True when it stays."""
    file, gone = await remember_posted(services, kb, post, sha256)
    if file is None or gone is not None:
        return False
    if await _still_posted(channel_for(post.channel_id), file):
        return True
    await _remove(services, [file], "its message was deleted or edited while the bot was down")
    return False


async def _remove(services: Services, files: Iterable[PostedFile], why: str) -> int:
    """Remove each file's document (one already gone counts as removed) and its record. A stopping bot
    waits for it (`BuildJobs.track`): cut between the document's removal and the redaction of the saved
    answers, the next start would find the document gone and leave its text in 'Show context' pages."""
    async with services.jobs.track():
        return await _remove_each(services, files, why)


async def _remove_each(services: Services, files: Iterable[PostedFile], why: str) -> int:
    removed = 0
    for file in files:
        try:
            await remove_document(services, file.kb, file.sha256)
            removed += 1
            log.info("removed document %s from %s: %s", file.sha256[:12], file.kb, why)
        except NotFoundError:
            log.info("document %s of %s was already gone (%s)", file.sha256[:12], file.kb, why)
        await services.state.drop_posted_file(file)
    return removed


async def messages_deleted(services: Services, guild_id: int | None, message_ids: set[int]) -> int:
    """Messages deleted in Discord: the documents their files became leave; returns how many."""
    if guild_id is None:
        return 0
    files = await services.state.posted_files(guild_id, message_ids=message_ids)
    return await _remove(services, files, "its message was deleted")


async def channel_deleted(services: Services, guild_id: int | None, channel_id: int) -> int:
    """A channel or thread deleted: the documents of files posted in it leave."""
    if guild_id is None:
        return 0
    files = await services.state.posted_files(guild_id, channel_id=channel_id)
    return await _remove(services, files, "its channel or thread was deleted")


async def message_edited(services: Services, guild_id: int | None, message_id: int, data: dict) -> int:
    """A message edited: a file it no longer carries takes its document with it. An edit event without
    the attachments field (an embed resolving) changes nothing."""
    if "attachments" not in data:
        return 0
    kept = {int(a["id"]) for a in data["attachments"]}
    if services.sync is not None:  # a file of it still being added leaves once stored (`remember_posted`)
        services.sync.attachments_edited(message_id, frozenset(kept))
    if guild_id is None:
        return 0
    files = await services.state.posted_files(guild_id, message_ids={message_id})
    return await _remove(services, [f for f in files if f.attachment_id not in kept], "its message dropped it")


async def member_forgotten(services: Services, guild_id: int, user_id: int) -> int:
    """/kb forget-me: the documents of the files the member posted leave; returns how many."""
    files = await services.state.posted_files(guild_id, author_id=user_id)
    return await _remove(services, files, "its author ran /kb forget-me")


async def author_forgotten(services: Services, message: discord.Message) -> bool:
    """Whether the message's author ran /kb forget-me: their files are not added, as their messages are not."""
    return message.guild is not None and message.author.id in await services.state.forgotten(message.guild.id)


async def reconcile(services: Services, channel_for: Callable[[int, int], Awaitable[Any | None]]) -> int:
    """At start: a posted file whose message was deleted, or edited to drop it, while the bot was down
    leaves now; returns how many went. One message fetch per recorded file; a channel the bot can no
    longer read keeps its files (logged)."""
    guilds = {ids[0] for kb in await services.call(services.engine.knowledge_bases) if (ids := parse_kb_name(kb))}
    gone: list[PostedFile] = []
    for guild_id in sorted(guilds):
        for file in await services.state.posted_files(guild_id, every=True):
            channel = await channel_for(guild_id, file.channel_id)
            if channel is not None and not await _still_posted(channel, file):  # None: another guild's, kept
                gone.append(file)
    return await _remove(services, gone, "its message was deleted or edited while the bot was down")


async def _still_posted(channel: Any, file: PostedFile) -> bool:
    """Whether the file's message still carries it (True when that cannot be read: nothing is removed on
    a doubt)."""
    try:
        message = await channel.fetch_message(file.message_id)
    except discord.NotFound:  # the message, or its channel or thread, is gone
        return False
    except discord.HTTPException as error:
        log.warning("cannot check message %s of %s (%s); its file stays", file.message_id, file.kb, error)
        return True
    return any(a.id == file.attachment_id for a in message.attachments)
