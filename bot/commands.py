"""Slash commands and the message context menu as discord.py Cogs, loaded in `RaptorBot.setup_hook`.

Each Cog gets the bot's `Services` (engine, state, jobs, limits), never the client; each command parses
its options and hands over to a flow module. /ask and /kb list|tree|status are open to everyone;
/kb add|remove|clear|autoingest and the context menu need Manage Messages or a manager role, checked
here at run time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import discord
from discord import app_commands
from discord.ext import commands

from raptor_engine.engine import TreeInfo
from raptor_engine.errors import RaptorError
from raptor_engine.ingest.load import file_kinds
from raptor_engine.types import counted

from .adding import Tally, add_files, is_supported, screen
from .answering import EMPTY_KB, NO_KB, handle_ask
from .jobs import StatusMessage
from .kb import kb_for_channel, parse_kb_name
from .messages import MAX_IMPORT, NEEDS_CONTENT, add_one_message, parse_after, run_import
from .permissions import can_manage, refusal_text
from .pictures import TREE_FILE, tree_attachment
from .posted import author_forgotten, clear_documents, member_forgotten, post_of, remove_document
from .render import embeds_from_lines, human_size, human_time, inert, truncate
from .replies import Replier, tell
from .services import Services
from .state import MessageImport
from .views import ConfirmView

log = logging.getLogger(__name__)
# /ask takes what a thread message can hold (Discord's longest message), so a question pasted from one is
# asked the same way: over the engine's MAX_QUESTION_CHARS it is shortened there and its answer says so.
ASK_OPTION_CHARS = 4000

AUTOCOMPLETE_LIMIT = 25
FORGOTTEN_AUTHOR = "That message's author ran `/kb forget-me`, so the files they post are not added."
FORGOTTEN_POSTER = "You ran `/kb forget-me`, so the files you post are not added."


async def manager_check(services: Services, interaction: discord.Interaction) -> bool:
    """True when the user may change this channel's knowledge base; otherwise refuses and says why."""
    guild_role_id = await services.state.manager_role_id(interaction.guild_id) if interaction.guild_id else None
    if can_manage(interaction.permissions, interaction.user, services.settings.manager_role, guild_role_id):
        return True
    guild_role = interaction.guild.get_role(guild_role_id) if interaction.guild and guild_role_id else None
    log.info(
        "refused %s: %s lacks manager rights in %s",
        interaction.command and interaction.command.qualified_name,
        interaction.user.id,
        interaction.channel_id,
    )
    await tell(interaction, refusal_text(services.settings.manager_role, guild_role))
    return False


async def channel_kb(interaction: discord.Interaction) -> str | None:
    kb = kb_for_channel(interaction.guild_id, interaction.channel)
    if kb is None:
        await tell(interaction, NO_KB)
    return kb


async def start_adding(
    services: Services,
    interaction: discord.Interaction,
    attachments: list[discord.Attachment],
    posted_in: discord.Message | None = None,
) -> None:
    """Shared by /kb add and the context menu (the files of message `posted_in`, which take their
    documents with them when deleted): check rights and files, then defer and build."""
    kb = await channel_kb(interaction)
    if kb is None or not await manager_check(services, interaction):
        return
    if not attachments:
        await tell(interaction, "That message has no attached file to add.")
        return
    if posted_in is not None and await author_forgotten(services, posted_in):
        await tell(interaction, FORGOTTEN_AUTHOR)
        return
    accepted, refused = screen(attachments, services.settings.max_file_bytes)
    if not accepted:
        await tell(interaction, "Nothing was added.\n" + "\n".join(refused))
        return
    refusal = services.upload_refusal(kb, interaction.user.id, len(accepted))
    if refusal:
        await tell(interaction, refusal)
        return
    with services.jobs.promise(kb, len(accepted)) as promised:  # waiting from now: /ask meanwhile knows
        replier = Replier(interaction, token_lifetime=services.token_lifetime)
        await replier.defer()
        status = StatusMessage(
            interaction.channel,  # type: ignore[arg-type]
            interaction=None if replier.expired else interaction,
            requester_id=interaction.user.id,
            token_lifetime=services.token_lifetime,
        )
        posts = {a.id: post_of(posted_in, a) for a in accepted} if posted_in is not None else None
        await add_files(services, kb, accepted, refused, str(interaction.user), status, posts, promised)


async def auto_ingest(services: Services, message: discord.Message, kb: str) -> Tally:
    """Files posted in a channel with auto-ingest on: supported types are added, others ignored; what
    became of each file."""
    candidates = [a for a in message.attachments if is_supported(a.filename)]
    passed_over = len(message.attachments) - len(candidates)
    if not candidates:
        return Tally(passed_over=passed_over)
    accepted, refused = screen(candidates, services.settings.max_file_bytes)
    status = StatusMessage(message.channel, reply_to=message, token_lifetime=services.token_lifetime)
    if await author_forgotten(services, message):
        await status.show(FORGOTTEN_POSTER)
        return Tally(not_added=len(candidates), passed_over=passed_over)
    refusal = services.upload_refusal(kb, message.author.id, len(accepted))
    if refusal or not accepted:
        await status.show("\n".join(([refusal] if refusal else []) + refused))
        return Tally(not_added=len(candidates), passed_over=passed_over)
    posts = {a.id: post_of(message, a) for a in accepted}
    tally = await add_files(services, kb, accepted, refused, str(message.author), status, posts)
    tally.passed_over = passed_over
    return tally


SHA_CHOICE = 16  # a shared name's autocomplete value: the document's sha256, its first 16 hex digits


def pick_document(docs: list[Any], value: str) -> Any | str:
    """The document `/kb remove` was given: by its name when no other document has it, else by the sha256
    prefix its autocomplete choice carries; a sentence for the user when there is no single one. A name
    typed instead of picked may differ from the document's by spaces around it or by case."""
    named = named_as(docs, value)
    if len(named) == 1:
        return named[0]
    shown = inert(truncate(value, 100))
    if named:
        return (
            f"Several documents are named '{shown}'; pick the one to remove from the list, where each shows "
            "when it was added."
        )
    if len(value) >= 8:
        by_sha = [d for d in docs if d.sha256.startswith(value.lower())]
        if len(by_sha) == 1:
            return by_sha[0]
    return f"There is no document named '{shown}' in this channel's knowledge base; pick one from the list."


def named_as(docs: list[Any], value: str) -> list[Any]:
    """The documents named `value`: as given, else with the spaces around it dropped, else in any case
    ("  MINUTES.MD " is minutes.md), the first reading that names any."""
    typed = value.strip()
    for same in (
        lambda name: name == value,
        lambda name: name == typed,
        lambda name: name.casefold() == typed.casefold(),
    ):
        named = [d for d in docs if same(d.name)]
        if named:
            return named
    return []


def shared_name(doc: Any, docs: list[Any]) -> bool:
    return sum(d.name == doc.name for d in docs) > 1


def removal_choice(doc: Any, docs: list[Any]) -> app_commands.Choice[str] | None:
    """An autocomplete choice: the name; for a name several documents share (a file posted again with
    new content), the name with when it was added, its size and sha256, and the sha256 as the value."""
    if not shared_name(doc, docs):
        return app_commands.Choice(name=doc.name, value=doc.name) if len(doc.name) <= 100 else None
    label = f" · added {human_time(doc.added_at)} · {human_size(doc.size)} · {doc.sha256[:8]}"
    return app_commands.Choice(name=truncate(doc.name, 100 - len(label)) + label, value=doc.sha256[:SHA_CHOICE])


def document_line(doc: object) -> str:
    name = inert(truncate(str(getattr(doc, "name", "?")), 100))
    added_by = inert(truncate(str(getattr(doc, "added_by", "?")), 100))
    return (
        f"**{name}** · {human_size(getattr(doc, 'size', 0))} · {counted(getattr(doc, 'chunks', 0), 'chunk')} · "
        f"{counted(getattr(doc, 'layers', 0), 'layer')} · added by {added_by} "
        f"on {human_time(getattr(doc, 'added_at', None))}"
    )


@app_commands.guild_only()
class KnowledgeBaseCog(commands.GroupCog, group_name="kb", group_description="This channel's knowledge base"):
    """/kb: this channel's knowledge base."""

    def __init__(self, services: Services):
        self.services = services
        super().__init__()

    @app_commands.command(name="add", description="Add files to this channel's knowledge base")
    @app_commands.describe(
        file=file_kinds("or", capital=True),  # Discord allows 100 characters
        file2="Another document",
        file3="Another document",
        file4="Another document",
        file5="Another document",
    )
    async def add(
        self,
        interaction: discord.Interaction,
        file: discord.Attachment,
        file2: discord.Attachment | None = None,
        file3: discord.Attachment | None = None,
        file4: discord.Attachment | None = None,
        file5: discord.Attachment | None = None,
    ) -> None:
        attachments = [a for a in (file, file2, file3, file4, file5) if a is not None]
        await start_adding(self.services, interaction, attachments)

    @app_commands.command(name="list", description="Documents in this channel's knowledge base")
    async def list_(self, interaction: discord.Interaction) -> None:
        kb = await channel_kb(interaction)
        if kb is None:
            return
        replier = Replier(interaction, ephemeral=True, token_lifetime=self.services.token_lifetime)
        await replier.defer()
        docs = await self.services.documents(kb)
        if not docs:
            await replier.send(EMPTY_KB)
            return
        total = sum(d.size for d in docs)
        lines = [document_line(d) for d in docs]
        await replier.send_all(
            embeds_from_lines(f"Documents ({len(docs)})", lines, f"{human_size(total)} in total")
        )

    @app_commands.command(name="remove", description="Remove one document from this channel's knowledge base")
    @app_commands.describe(document="The document's name (start typing to pick)")
    async def remove(self, interaction: discord.Interaction, document: str) -> None:
        kb = await channel_kb(interaction)
        if kb is None or not await manager_check(self.services, interaction):
            return
        docs = await self.services.documents(kb)
        doc = pick_document(docs, document)
        if isinstance(doc, str):
            await tell(interaction, doc)
            return
        name = inert(truncate(doc.name, 120))
        which = f"**{name}** (added {human_time(doc.added_at)})" if shared_name(doc, docs) else f"**{name}**"

        async def confirmed(click: discord.Interaction) -> None:
            await run_change(
                self.services,
                click,
                f"Removed {which}.",
                self.remove_document,
                kb,
                doc.sha256,  # the one picked, whatever other documents share its name
            )

        view = ConfirmView(interaction.user.id, confirmed, f"Removing {name}")
        await interaction.response.send_message(
            f"Remove {which} and its summaries from this channel's knowledge base?",
            view=view,
            ephemeral=True,
        )

    async def remove_document(self, kb: str, sha256: str) -> None:
        await remove_document(self.services, kb, sha256)

    async def clear_documents(self, kb: str) -> int:
        return await clear_documents(self.services, kb)

    @remove.autocomplete("document")
    async def remove_autocomplete(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        kb = kb_for_channel(interaction.guild_id, interaction.channel)
        if kb is None:
            return []
        try:
            docs = await self.services.documents(kb)
        except Exception:
            log.exception("autocomplete for %s failed", kb)
            return []
        needle = current.lower()
        choices = [removal_choice(d, docs) for d in docs if needle in d.name.lower()]
        return [choice for choice in choices if choice is not None][:AUTOCOMPLETE_LIMIT]

    @app_commands.command(
        name="clear", description="Remove every document from this channel's knowledge base"
    )
    async def clear(self, interaction: discord.Interaction) -> None:
        kb = await channel_kb(interaction)
        if kb is None or not await manager_check(self.services, interaction):
            return
        docs = await self.services.documents(kb)
        if not docs:
            await tell(interaction, "This channel's knowledge base is already empty.")
            return

        async def confirmed(click: discord.Interaction) -> None:
            await run_change(
                self.services,
                click, f"Cleared: {len(docs)} document(s) removed.", self.clear_documents, kb
            )

        view = ConfirmView(interaction.user.id, confirmed, "Clearing the knowledge base")
        await interaction.response.send_message(
            f"Remove all {len(docs)} document(s) from this channel's knowledge base? This cannot be undone.",
            view=view,
            ephemeral=True,
        )

    @app_commands.command(
        name="tree", description="A picture of this channel's RAPTOR tree, with node counts"
    )
    async def tree(self, interaction: discord.Interaction) -> None:
        kb = await channel_kb(interaction)
        if kb is None:
            return
        replier = Replier(interaction, ephemeral=True, token_lifetime=self.services.token_lifetime)
        await replier.defer()
        info = await self.services.call(self.services.engine.tree_info, kb)
        if not info.documents:
            await replier.send(EMPTY_KB)
            return
        attachments, trouble = await tree_attachment(self.services, interaction, kb)
        messages = embeds_from_lines("Tree", tree_lines(info) + ([trouble] if trouble else []))
        if attachments:  # the picture shows inside the last embed
            messages[-1].embeds[-1].set_image(url=f"attachment://{TREE_FILE}")
        await replier.send_all(messages, attachments=attachments)

    @app_commands.command(name="status", description="Backend, build queue and sizes")
    async def status(self, interaction: discord.Interaction) -> None:
        kb = await channel_kb(interaction)
        if kb is None:
            return
        replier = Replier(interaction, ephemeral=True, token_lifetime=self.services.token_lifetime)
        await replier.defer()
        await replier.send_all(embeds_from_lines("Status", await status_lines(self.services, kb)))

    @app_commands.command(name="autoingest", description="Add files posted in this channel automatically")
    @app_commands.describe(enabled="Turn auto-ingest on or off for this channel")
    async def autoingest(self, interaction: discord.Interaction, enabled: bool) -> None:
        kb = await channel_kb(interaction)
        if kb is None or not await manager_check(self.services, interaction):
            return
        guild_id, channel_id = parse_kb_name(kb) or (0, 0)
        await self.services.state.set_autoingest(kb, guild_id, channel_id, enabled, str(interaction.user))
        self.services.forget_autoingest(kb)
        text = f"Auto-ingest is now **{'on' if enabled else 'off'}** for this channel."
        if enabled and not self.services.message_content:
            text += (
                " Note: this bot runs without the message-content intent, so Discord does not show it the "
                "files people post; ask the bot's owner to enable it (see docs/BOT.md), or use `/kb add`."
            )
        await tell(interaction, text, ephemeral=False)

    @app_commands.command(
        name="add-messages",
        description="Add a channel's, thread's or forum's messages to this channel's knowledge base",
    )
    @app_commands.describe(
        channel="Where to read (default: here); a forum adds every post",
        limit=f"How many messages to read, oldest first (at most {MAX_IMPORT:,})",
        after="Only messages after this one (a message link or id)",
    )
    async def add_messages(
        self,
        interaction: discord.Interaction,
        channel: app_commands.AppCommandChannel | app_commands.AppCommandThread | None = None,
        limit: app_commands.Range[int, 1, MAX_IMPORT] = 1000,
        after: str | None = None,
    ) -> None:
        kb = await channel_kb(interaction)
        if kb is None or not await manager_check(self.services, interaction):
            return
        if not self.services.message_content:
            await tell(interaction, NEEDS_CONTENT)
            return
        source = await resolve_channel(interaction, channel)
        if source is None:
            await tell(interaction, "The bot cannot see that channel.")
            return
        if not (hasattr(source, "history") or isinstance(source, discord.ForumChannel)):
            await tell(interaction, "That channel has no messages to add; pick a text channel, thread or forum.")
            return
        if self.services.jobs.closing:
            await tell(interaction, "The bot is restarting; please try again in a minute.")
            return
        after_id = parse_after(after)
        replier = Replier(interaction, token_lifetime=self.services.token_lifetime)
        await replier.defer()
        status = StatusMessage(
            interaction.channel,  # type: ignore[arg-type]
            interaction=None if replier.expired else interaction,
            requester_id=interaction.user.id,
            token_lifetime=self.services.token_lifetime,
        )
        guild_id = interaction.guild_id or 0
        record = MessageImport(
            0,
            kb,
            guild_id,
            source.id,
            interaction.channel_id,
            interaction.user.id,
            str(interaction.user),
            limit,
            after_id,
            "running",
            self.services.run_id,
        )
        record.id = await self.services.state.start_import(record)
        await run_import(self.services, record, source, status, str(interaction.user))

    @app_commands.command(
        name="sync", description="Keep this channel's messages in its knowledge base as they change"
    )
    @app_commands.describe(enabled="Add new messages and edits of this channel and its threads automatically")
    async def sync(self, interaction: discord.Interaction, enabled: bool) -> None:
        kb = await channel_kb(interaction)
        if kb is None or not await manager_check(self.services, interaction):
            return
        if enabled and not self.services.message_content:
            await tell(interaction, NEEDS_CONTENT)
            return
        guild_id, channel_id = parse_kb_name(kb) or (0, 0)
        await self.services.state.set_sync(kb, guild_id, channel_id, enabled, str(interaction.user))
        if self.services.sync is not None:
            self.services.sync.sync_changed(kb)
        text = (
            "Sync is now **on**: new messages and edits in this channel and its threads join its knowledge base."
            if enabled
            else "Sync is now **off**: new messages are no longer added (deleted messages still leave it)."
        )
        await tell(interaction, text, ephemeral=False)

    @app_commands.command(
        name="forget-me",
        description="Remove your messages from this server's knowledge bases and never add them again",
    )
    async def forget_me(self, interaction: discord.Interaction) -> None:
        if self.services.sync is None or interaction.guild_id is None:
            await tell(interaction, "This command works in server channels only.")
            return
        replier = Replier(interaction, ephemeral=True, token_lifetime=self.services.token_lifetime)
        await replier.defer()
        removed = await self.services.sync.forget_member(interaction.guild_id, interaction.user.id)
        files = await member_forgotten(self.services, interaction.guild_id, interaction.user.id)
        posted = f" and {files:,} document(s) of files you posted" if files else ""
        await replier.send(
            f"Done: {removed:,} of your messages{posted} were removed from this server's knowledge bases, and "
            "your messages and files will not be added again."
        )

    @app_commands.command(
        name="managers", description="Choose a role that may add and remove documents (server managers)"
    )
    @app_commands.describe(role="The role; leave empty to go back to Manage Messages only")
    async def managers(self, interaction: discord.Interaction, role: discord.Role | None = None) -> None:
        if not (interaction.permissions.manage_guild or interaction.permissions.administrator):
            await tell(
                interaction, "Only members with the Manage Server permission can choose the manager role."
            )
            return
        assert interaction.guild_id is not None
        await self.services.state.set_manager_role(
            interaction.guild_id, role.id if role else None, str(interaction.user)
        )
        if role:
            await tell(
                interaction,
                f"Members with the **{inert(role.name)}** role may now manage knowledge bases.",
                ephemeral=False,
            )
        else:
            await tell(
                interaction,
                "Only members with Manage Messages may manage knowledge bases now.",
                ephemeral=False,
            )


async def resolve_channel(
    interaction: discord.Interaction,
    option: app_commands.AppCommandChannel | app_commands.AppCommandThread | None,
) -> Any:
    """The channel a command names (or the one it runs in), as a full channel object; None if unseen."""
    if option is None:
        return interaction.channel
    found = interaction.guild.get_channel_or_thread(option.id) if interaction.guild else None
    if found is not None:
        return found
    try:
        return await option.fetch()
    except discord.HTTPException:
        return None


def tree_lines(info: TreeInfo) -> list[str]:
    """TreeInfo as lines: per layer its nodes and tokens, then the document count."""
    lines = [
        f"**L{layer.layer}**: {layer.nodes} {info.layer_label(layer)} · {layer.tokens:,} tokens"
        for layer in info.layers
    ]
    lines.append(f"{info.documents} document(s)")
    return lines


class AskCog(commands.Cog):
    """/ask: a question to this channel's knowledge base."""

    def __init__(self, services: Services):
        self.services = services

    @app_commands.command(name="ask", description="Ask this channel's documents a question")
    @app_commands.describe(
        question="Your question",
        mode="collapsed (default): best nodes from all layers; traversal: walk down from the top layer",
        private="Only you see the answer (no thread is opened)",
    )
    @app_commands.guild_only()
    async def ask(
        self,
        interaction: discord.Interaction,
        question: app_commands.Range[str, 1, ASK_OPTION_CHARS],
        mode: Literal["collapsed", "traversal"] = "collapsed",
        private: bool = False,
    ) -> None:
        await handle_ask(self.services, interaction, question, mode, private)


class AddFromMessageCog(commands.Cog):
    """The message menu *Apps → Add to knowledge base*. A context menu cannot be a Cog method, so the
    Cog adds it to the tree it is given when loaded and takes it out when unloaded."""

    def __init__(self, services: Services, tree: app_commands.CommandTree[Any]):
        self.services = services
        self.tree = tree
        self.menu = app_commands.ContextMenu(name="Add to knowledge base", callback=self.add_from_message)

    async def cog_load(self) -> None:
        self.tree.add_command(self.menu)

    async def cog_unload(self) -> None:
        self.tree.remove_command(self.menu.name, type=self.menu.type)

    @app_commands.guild_only()
    async def add_from_message(self, interaction: discord.Interaction, message: discord.Message) -> None:
        if message.attachments:
            await start_adding(self.services, interaction, list(message.attachments), message)
            return
        kb = await channel_kb(interaction)
        if kb is None or not await manager_check(self.services, interaction):
            return
        replier = Replier(interaction, ephemeral=True, token_lifetime=self.services.token_lifetime)
        await replier.defer()
        try:
            line = await add_one_message(
                self.services, kb, interaction.guild_id or 0, message, str(interaction.user)
            )
        except RaptorError as error:
            line = f"⚠️ {inert(str(error))}"
        await replier.send(line)


def cogs(services: Services, tree: app_commands.CommandTree[Any]) -> list[commands.Cog]:
    """Every command the bot offers, as Cogs (syncing them with Discord is separate and explicit)."""
    return [AskCog(services), KnowledgeBaseCog(services), AddFromMessageCog(services, tree)]


# ---- what several commands share ---------------------------------------------------------------


async def run_change(
    services: Services, interaction: discord.Interaction, done_text: str, fn: Callable[..., Any], *args: Any
) -> None:
    """A confirmed removal or clear; reports the outcome on the confirm message."""
    try:
        await services.call(fn, *args)
    except RaptorError as error:
        log.info("change %s%s refused: %s", getattr(fn, "__name__", fn), args, error)
        await _edit_or_tell(interaction, f"⚠️ {inert(str(error))}")
        return
    except Exception:
        log.exception("change %s%s failed", getattr(fn, "__name__", fn), args)
        await _edit_or_tell(interaction, "⚠️ That failed; the error was logged and nothing was changed.")
        return
    log.info("change %s%s done by %s", getattr(fn, "__name__", fn), args, interaction.user.id)
    await _edit_or_tell(interaction, done_text)


async def _edit_or_tell(interaction: discord.Interaction, text: str) -> None:
    try:
        await interaction.edit_original_response(content=text, view=None)
    except discord.HTTPException:
        await tell(interaction, text)


async def message_line(services: Services, kb: str) -> str:
    """/kb status: how many messages this channel's knowledge base holds, and whether it syncs."""
    held = len(await services.call(services.engine.message_ids, kb))
    synced = services.sync is not None and await services.sync.sync_enabled(kb)
    return f"**Messages here**: {held:,} held · sync {'on' if synced else 'off'}"


def storage_sizes(db_path: Path, index_dir: Path) -> tuple[int, int]:
    """Bytes on disk of the SQLite database (its file, -wal and -shm: recent writes live in the WAL
    until a checkpoint) and of the hnswlib index files; what is missing counts as 0."""
    database = sum(_size(Path(f"{db_path}{suffix}")) for suffix in ("", "-wal", "-shm"))
    indices = sum(_size(p) for p in index_dir.rglob("*") if p.is_file()) if index_dir.is_dir() else 0
    return database, indices


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # not there (no WAL right after a checkpoint), or removed while we looked
        return 0


async def status_lines(services: Services, kb: str) -> list[str]:
    """/kb status: backend, this channel's documents and builds, all channels' queue and storage."""
    docs = await services.documents(kb)
    queue = services.jobs.state()
    running_here = queue.running.get(kb)
    lines = [
        f"**Backend**: {services.engine.backend_name}",
        f"**This channel**: {len(docs)} document(s), {human_size(sum(d.size for d in docs))}, "
        f"{sum(d.chunks for d in docs)} chunks, {sum(d.tokens for d in docs):,} tokens",
        f"**Building here**: {inert(truncate(running_here, 120)) if running_here else 'nothing'}"
        f" · {queue.waiting.get(kb, 0)} waiting",
        f"**All channels**: {len(queue.running)} of {queue.limit} build slots in use, "
        f"{sum(queue.waiting.values())} file(s) waiting",
        f"**Auto-ingest here**: {'on' if await services.autoingest_enabled(kb) else 'off'}"
        + ("" if services.message_content else " (message-content intent off: uploads are not seen)"),
        await message_line(services, kb),
    ]
    database, indices = await asyncio.to_thread(storage_sizes, *services.engine.spaces.files_of(kb))
    lines.append(
        f"**Storage (this server)**: database {human_size(database)} (with its write-ahead log), "
        f"search indices {human_size(indices)}"
    )
    return lines
