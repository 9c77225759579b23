"""The Discord client: intents, setup, events, errors and shutdown. No RAPTOR logic lives here.

`setup_hook` builds the `Services` and loads the command Cogs (discord.py's advanced_startup pattern);
the client imports the Cogs and flows, and none of them imports the client.

The message-content intent is optional (DISCORD_MESSAGE_CONTENT=1). Without it Discord hides the text
and files of messages that do not mention the bot, so auto-ingest cannot see uploads and thread
follow-ups need a mention or /ask; everything else works the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from typing import Any

import aiohttp
import discord
from discord import app_commands
from discord.ext import commands

from raptor_engine.config import Settings
from raptor_engine.engine import Engine
from raptor_engine.errors import NotFoundError, RaptorError, storage_error, storage_failure
from raptor_engine.query.ratelimit import FileLimiter, QuestionLimiter
from raptor_engine.query.smalltalk import asks

from . import posted
from .adding import Tally, resume_uploads
from .answering import (
    answer_left_questions,
    asks_nothing,
    conversation_turn,
    follow_up_text,
    handle_deleted_questions,
    handle_edited_follow_up,
    handle_follow_up,
    kept_until_handled,
    reconcile_questions,
    settle_pending,
)
from .commands import auto_ingest, cogs
from .gateway import IdentifyGate, shard_plan
from .hints import mention_hint, thread_files_hint
from .jobs import MIN_EDIT_INTERVAL_SECONDS, TOKEN_LIFETIME_SECONDS, BuildJobs
from .kb import channel_of_guild, guild_prefix, kb_for_channel, kb_name
from .messages import resume_imports
from .permissions import Cooldown
from .pictures import ShowTreeButton
from .render import inert
from .replies import failure_text, reply_quietly, tell
from .services import Services
from .state import BotState, ThreadRecord
from .sync import MessageSync
from .uploads import UploadLog
from .views import ContextPageButton, ShowContextButton

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 300.0
# A member replied in the channel to an answer whose thread holds its conversation.
THREAD_POINTER = "Follow up in this answer's thread, <#{thread}>: I answer there by message, with the conversation so far."
ANSWER_STOPPED = "The bot is restarting, so this answer stops here; ask again in a minute."
# A member wrote to the bot in a direct message, where it has no knowledge base and no commands.
DM_POINTER = "I answer in server channels, not in direct messages: use `/ask` in a channel of a server we share."
DM_POINTER_SECONDS = 600.0  # one pointer per member in this long, however many messages they send


def make_intents(message_content: bool) -> discord.Intents:
    intents = discord.Intents.default()  # guilds and guild messages; no privileged intents
    intents.message_content = message_content
    intents.members = False
    intents.presences = False
    return intents


def open_uploads(settings: Settings) -> UploadLog:
    """The upload records (data_dir/uploads.db), or StorageError in one sentence when the data
    directory cannot hold them (read-only, full, not permitted)."""
    try:
        return UploadLog(settings.data_dir / "uploads.db")
    except (sqlite3.Error, OSError) as error:
        failure = storage_error(error, str(settings.data_dir))
        if failure is None:
            raise
        raise failure from error


class RaptorBot(commands.AutoShardedBot):
    """A discord.py Bot (for its Cogs; it has no prefix commands) over one raptor_engine.Engine.

    Sharded (see gateway.py): Discord's recommended shard count, or the range the settings name."""

    def __init__(
        self,
        settings: Settings,
        *,
        engine: Engine | None = None,
        message_content: bool = False,
        sync: bool = False,
        warm: bool = True,
        status_interval: float = MIN_EDIT_INTERVAL_SECONDS,
        token_lifetime: float = TOKEN_LIFETIME_SECONDS,
        shutdown_grace: float = SHUTDOWN_GRACE_SECONDS,
    ):
        plan = shard_plan(settings)
        super().__init__(
            command_prefix=(),  # slash commands only: no message is ever parsed as a command
            help_command=None,
            intents=make_intents(message_content),
            allowed_mentions=discord.AllowedMentions.none(),
            shard_count=plan.count,
            shard_ids=plan.ids,
        )
        self.identify_gate = IdentifyGate(settings.cache_dir / "identify")
        self.settings = settings
        self.engine = engine
        self.sync_on_start = sync
        self.warm_on_start = warm
        self.status_interval = status_interval
        self.token_lifetime = token_lifetime
        self.shutdown_grace = shutdown_grace
        self.tree.on_error = self.report_command_error  # type: ignore[method-assign]
        self._shutdown_started = False
        self.services: Services | None = None
        self._own_cluster: Any = None  # the Dask cluster this bot started (closed with it)
        self._resuming: asyncio.Task[int] | None = None
        self._reconciling: asyncio.Task[None] | None = None
        self._answering_left: asyncio.Task[None] | None = None
        self._dm_pointed = Cooldown(DM_POINTER_SECONDS)

    # ------------------------------------------------------------------ start-up

    async def setup_hook(self) -> None:
        engine = self.engine or await asyncio.to_thread(Engine, self.settings)
        self.engine = engine
        if self.warm_on_start:
            log.info("warming the engine (embedding model, clustering code)…")
            await asyncio.to_thread(engine.warm)
        await asyncio.to_thread(self.check_store, engine)
        await self.start_build_cluster(engine)
        uploads = await asyncio.to_thread(open_uploads, self.settings)
        unfinished = await asyncio.to_thread(uploads.unfinished)  # queued before the bot connects
        self.services = Services(
            settings=self.settings,
            engine=engine,
            state=BotState(engine.spaces),
            jobs=BuildJobs(engine, self.settings.max_concurrent_builds, uploads=uploads),
            cdn=aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)),
            cooldown=Cooldown(self.settings.ask_cooldown_seconds),
            question_limit=QuestionLimiter(self.settings.questions_per_minute),
            file_limit=FileLimiter(self.settings.files_per_hour),
            message_content=self.intents.message_content,
            token_lifetime=self.token_lifetime,
            status_interval=self.status_interval,
        )
        self.services.sync = MessageSync(self.services)
        for cog in cogs(self.services, self.tree):
            await self.add_cog(cog)
        self.add_dynamic_items(ShowContextButton, ContextPageButton, ShowTreeButton)
        if not self.intents.message_content:
            log.warning(
                "running without the message-content intent: auto-ingest cannot see uploads and thread "
                "follow-ups need a mention of the bot (set DISCORD_MESSAGE_CONTENT=1 to enable it)"
            )
        if self.sync_on_start:
            await self.sync_or_explain()
        await self.finish_removals()
        log.info("ready to connect; backend %s", engine.backend_name)
        self._resuming = asyncio.get_running_loop().create_task(
            resume_uploads(self.services, unfinished, self.get_partial_messageable, self.interaction_webhook)
        )
        self._reconciling = asyncio.get_running_loop().create_task(self.catch_up_messages())

    async def finish_removals(self) -> None:
        """Before anyone is answered: the removals a crash or a kill cut short between the engine's removal
        and the redaction of this bot's records are finished (`BotState.finish_every_removal`)."""
        assert self.services is not None
        try:
            done = await self.services.state.finish_every_removal()
        except Exception:
            log.exception("finishing the removals the last run left unfinished failed; the next start tries again")
            return
        if done:
            log.info("finished %d removal(s) the last run left unfinished", done)

    def interaction_webhook(self, token: str) -> discord.Webhook:
        """The webhook that edits the responses of the interaction with `token` (while Discord honours it)."""
        return discord.Webhook.partial(self.application_id or 0, token, client=self)

    async def catch_up_messages(self) -> None:
        """What changed while the bot was down: deletions and edits (and, synced, new messages) first,
        then the history imports a previous run did not finish, then the questions deleted in threads."""
        services = self.services
        if services is None:
            return
        try:
            kept, dropped = await settle_pending(services, self.channel_to_read, self.user.id if self.user else 0)
            if kept or dropped:
                log.info("settled the exchanges the last run left pending: %d kept, %d dropped", kept, dropped)
        except Exception:
            log.exception("settling the threads' pending exchanges at start failed; the next start tries again")
        self._answering_left = asyncio.get_running_loop().create_task(self.answer_left_questions())
        if services.sync is None:
            return
        try:
            channels = await services.sync.reconcile(self.channel_to_read)
            log.info("reconciled the messages of %d channel(s)", channels)
            files = await posted.reconcile(services, self.channel_to_read)
            if files:
                log.info("removed %d posted file(s) whose message went while the bot was down", files)
            resumed = await resume_imports(services, self)
            if resumed:
                log.info("resumed %d history import(s)", resumed)
        except Exception:
            log.exception("reconciling messages at start failed")
        try:
            questions = await reconcile_questions(services, self.channel_to_read)
            if questions:
                log.info("forgot %d question(s) deleted in threads while the bot was down", questions)
        except Exception:
            log.exception("checking the threads' questions at start failed")

    async def answer_left_questions(self) -> None:
        """The thread messages the last run kept but did not answer (`answering.answer_left_questions`),
        answered once the uploads it left unfinished are built again: a question sent beside a file, or
        while a build ran, is answered from the tree the build makes, as it would have been."""
        services = self.services
        if services is None or self.user is None:
            return
        if self._resuming is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._resuming)
        try:
            answered = await answer_left_questions(
                services, self.channel_to_read, self.user, self.interaction_webhook
            )
            if answered:
                log.info("answered %d question(s) the last run left unanswered (an /ask: told to ask again)", answered)
        except Exception:
            log.exception("answering the questions the last run left unanswered failed; the next start tries again")

    async def channel_to_read(self, guild_id: int, channel_id: int) -> Any | None:
        """A channel a stored row names, when it is the guild's (`channel_of_guild`), else None."""
        return await channel_of_guild(self, guild_id, channel_id)

    async def start_build_cluster(self, engine: Engine) -> None:
        """Builds run on Dask workers: the scheduler named by RAPTOR_DASK_SCHEDULER, else an embedded
        LocalCluster of RAPTOR_BUILD_WORKERS workers (0: in this process). An engine given one keeps it."""
        if engine.cluster is not None or not (self.settings.dask_scheduler or self.settings.build_workers > 0):
            return
        from raptor_engine.workers import BuildCluster

        engine.cluster = self._own_cluster = await BuildCluster.start(self.settings)

    @staticmethod
    def check_store(engine: Engine) -> None:
        """`raptor doctor` at start-up: a crash may have left an index stale; rebuild it from SQLite."""
        report = engine.doctor(repair=True)
        for problem in report.problems:
            fixed = problem in report.repaired
            log.log(
                logging.INFO if fixed else logging.ERROR,
                "doctor: %s%s",
                problem,
                " (repaired)" if fixed else "",
            )
        if not report.healthy:
            log.error(
                "the database has problems an index rebuild cannot fix; run `raptor doctor` for details"
            )

    async def sync_or_explain(self) -> None:
        """`--sync` at start: a sync Discord refuses (no applications.commands scope, not in the server) is
        one log line, and the bot runs on with the commands Discord already has."""
        try:
            await self.sync_commands()
        except discord.HTTPException as error:
            where = f"server {self.settings.discord_dev_guild}" if self.settings.discord_dev_guild else "Discord"
            log.error(
                "Discord refused to sync the slash commands to %s (%s %s); check that the bot was invited "
                "there with the applications.commands scope (docs/BOT.md, step 2). Running with the "
                "commands Discord already has.",
                where,
                error.status,
                error.text or "no reason given",
            )

    async def sync_commands(self) -> list[app_commands.AppCommand]:
        """Push the command list to Discord: instantly to the development guild when one is set."""
        if self.settings.discord_dev_guild:
            guild = discord.Object(id=int(self.settings.discord_dev_guild))
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("synced %d commands to development guild %s", len(synced), guild.id)
        else:
            synced = await self.tree.sync()
            log.info("synced %d global commands (may take up to an hour to appear)", len(synced))
        return synced

    async def on_app_command_completion(self, interaction: discord.Interaction, command: object) -> None:
        name = getattr(command, "qualified_name", "?")
        log.info("/%s by %s in %s done", name, interaction.user.id, interaction.channel_id)

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        await self.identify_gate.wait(self, shard_id)

    async def on_ready(self) -> None:
        shards = f"shards {sorted(self.shards)} of {self.shard_count}"
        log.info("connected as %s to %d guild(s) on %s", self.user, len(self.guilds), shards)

    # ------------------------------------------------------------------ errors

    async def report_command_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        """Any command failure: one clear reply (private) and a log line; the bot keeps running."""
        original = getattr(error, "original", error)
        name = interaction.command.qualified_name if interaction.command else "?"
        if isinstance(original, RaptorError):
            log.info("/%s refused: %s", name, original)
            await tell(interaction, f"⚠️ {inert(str(original))}")
        elif isinstance(error, app_commands.NoPrivateMessage):
            await tell(interaction, "This command works in server channels only.")
        elif isinstance(error, app_commands.CheckFailure):
            await tell(interaction, "You can't use this command here.")
        else:
            log.error("/%s failed", name, exc_info=original)
            await tell(interaction, failure_text(original, "Something went wrong; the error was logged. Please try again."))

    # ------------------------------------------------------------------ events

    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot or self._shutdown_started:
            return
        if isinstance(message.channel, discord.DMChannel):
            await self._direct_message(message)
            return
        if message.guild is None:
            return
        try:
            await self._find_thread(message)
            await self._route_message(message)
        except Exception as error:
            log.exception("handling message %s in %s failed", message.id, message.channel.id)
            if self.in_own_thread(message) and storage_failure(error) is not None:
                await reply_quietly(message, failure_text(error, ""))

    async def _direct_message(self, message: discord.Message) -> None:
        """A direct message gets one sentence saying where the bot answers (knowledge bases belong to server
        channels, and the commands are server-only), once per member in `DM_POINTER_SECONDS`: silence
        read as a broken bot, and a reply to every message would be a conversation with no answers in it."""
        if self._dm_pointed.retry_after(message.author.id) == 0:
            await reply_quietly(message, DM_POINTER)

    async def _find_thread(self, message: discord.Message) -> None:
        """A message in a channel discord.py does not hold: a thread archived since (dropped from the cache)
        that this very message unarchives, its THREAD_UPDATE still on the way. Its channel is read from
        Discord, so a follow-up posted there is answered instead of dropped in silence."""
        if not isinstance(message.channel, discord.PartialMessageable):
            return
        try:
            channel = await self.fetch_channel(message.channel.id)
        except discord.HTTPException as error:
            log.info("could not read the channel %s of message %s: %s", message.channel.id, message.id, error)
            return
        if isinstance(channel, discord.Thread):
            message.channel = channel

    def in_own_thread(self, message: discord.Message) -> bool:
        """Whether a message sits in a thread this bot opened (where members expect it to answer)."""
        channel = message.channel
        return isinstance(channel, discord.Thread) and self.user is not None and channel.owner_id == self.user.id

    async def _route_message(self, message: discord.Message) -> None:
        services = self.services
        if services is None:  # a message before set-up finished: nothing can handle it yet
            return
        channel = message.channel
        kb = kb_for_channel(message.guild.id if message.guild else None, channel)
        follow_up = None
        tally = None
        if self.in_own_thread(message):
            # the thread's turn is taken before anything is awaited, so follow-ups are answered in the order
            # they were sent (the lookup below would otherwise let a later one overtake an earlier one); the
            # message is kept in SQLite meanwhile, so a bot killed before answering it answers it at its start
            async with kept_until_handled(services, message), conversation_turn(channel.id):
                follow_up = await services.state.thread(channel.guild.id, channel.id)
                if follow_up is not None:
                    await self._thread_message(services, message, kb, follow_up)
        if follow_up is None:  # (a file posted in an answer thread was taken in the thread's turn)
            tally = await self._auto_ingest(message, kb)
        if follow_up is None and kb is not None and (thread_id := await self._answer_replied_to(message)):
            await reply_quietly(message, THREAD_POINTER.format(thread=thread_id))
        elif follow_up is None and kb is not None and self.user is not None and self.user in message.mentions:
            names = [a.filename for a in message.attachments]
            hint = mention_hint(message.content, names, tally, isinstance(channel, discord.TextChannel))
            if hint:
                await reply_quietly(message, hint)
        if services.sync is not None and follow_up is None:  # a follow-up is a conversation, not knowledge
            await services.sync.message_created(message)

    async def _thread_message(
        self, services: Services, message: discord.Message, kb: str | None, record: ThreadRecord
    ) -> None:
        """A message in an answer thread, in the thread's turn. Its files first: a question asked beside them
        is answered from them; files auto-ingest does not take (off here) are said to be unread; and words
        beside files that ask nothing ("here's the new rota") are their caption, not a question. A stopping bot
        waits for the answer after the files' build as for the build (`BuildJobs.track`)."""
        async with services.jobs.track():
            tally = await self._auto_ingest(message, kb)
            hint = thread_files_hint([a.filename for a in message.attachments], tally)
            if hint:
                await reply_quietly(message, hint)
            if not message.attachments or asks(follow_up_text(message, self.user.id if self.user else 0)):
                await handle_follow_up(services, self.user, message, record, in_turn=True)

    async def _auto_ingest(self, message: discord.Message, kb: str | None) -> Tally | None:
        """What auto-ingest did with the message's files; None when it took none to look at (no files, or
        auto-ingest is off in `kb`)."""
        services = self.services
        if services is None or kb is None or not message.attachments:
            return None
        if not await services.autoingest_enabled(kb):
            return None
        return await auto_ingest(services, message, kb)

    async def _answer_replied_to(self, message: discord.Message) -> int | None:
        """The thread of the bot's answer that `message` replies to (Discord's reply, outside that thread),
        when the reply asks something: a follow-up is answered in the thread, where the conversation is.
        A thread started from a message has that message's id."""
        reference = message.reference
        if (
            self.services is None
            or message.guild is None
            or reference is None
            or reference.type != discord.MessageReferenceType.reply
            or reference.message_id is None
            or asks_nothing(follow_up_text(message, self.user.id if self.user else 0))
        ):
            return None
        record = await self.services.state.thread(message.guild.id, reference.message_id)
        return record.thread_id if record is not None else None

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        if self.services is None:
            return
        edited = posted.message_edited(self.services, payload.guild_id, payload.message_id, payload.data)
        await self._guarded(edited, f"files of the edit of {payload.message_id}")
        await self._guarded(self._follow_up_edited(payload), f"edited follow-up {payload.message_id}")
        if self.services.sync is not None:
            await self._guarded(self.services.sync.message_edited(payload), f"edit of {payload.message_id}")

    async def _follow_up_edited(self, payload: discord.RawMessageUpdateEvent) -> None:
        """A member's message edited in a thread this bot opened: a question is answered again as edited."""
        message = payload.message
        if self.services is None or self.user is None or message.author.bot or not self.in_own_thread(message):
            return
        record = await self.services.state.thread(message.channel.guild.id, message.channel.id)
        if record is not None:
            before = payload.cached_message.content if payload.cached_message is not None else None
            await handle_edited_follow_up(self.services, self.user, message, record, before)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self.messages_deleted(payload.guild_id, payload.channel_id, {payload.message_id})

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        await self.messages_deleted(payload.guild_id, payload.channel_id, set(payload.message_ids))

    async def messages_deleted(self, guild_id: int | None, channel_id: int, message_ids: set[int]) -> None:
        """Deleted messages leave every knowledge base that holds them, with the files they brought."""
        if self.services is None:
            return
        what = f"deletion of {len(message_ids)} message(s) in {channel_id}"
        if self.services.sync is not None:  # first: it remembers the ids, for a file still being added
            await self._guarded(self.services.sync.messages_deleted(guild_id, channel_id, message_ids), what)
        await self._guarded(posted.messages_deleted(self.services, guild_id, message_ids), f"files of the {what}")
        await self._guarded(self._questions_deleted(guild_id, channel_id, message_ids), f"questions of the {what}")

    async def _questions_deleted(self, guild_id: int | None, channel_id: int, message_ids: set[int]) -> None:
        """Questions deleted in a thread this bot opened leave its memory, with the bot's answers to them."""
        thread = self.get_channel(channel_id)
        if self.services is None or guild_id is None or not isinstance(thread, discord.Thread):
            return
        if self.user is None or thread.owner_id != self.user.id:
            return
        record = await self.services.state.thread(guild_id, channel_id)
        if record is not None:
            await handle_deleted_questions(self.services, thread, record, message_ids)

    async def _guarded(self, work: Any, what: str) -> None:
        """A message event's handling: a failure is logged, never raised into discord.py's dispatch."""
        try:
            await work
        except Exception:
            log.exception("handling the %s failed", what)

    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        await self.drop_kb(kb_name(channel.guild.id, channel.id), f"channel {channel.id} deleted")
        if self.services is not None and self.services.sync is not None:
            await self._guarded(
                self.services.sync.channel_deleted(channel.guild.id, channel.id), "channel deletion"
            )

    async def on_raw_thread_delete(self, payload: discord.RawThreadDeleteEvent) -> None:
        if self.services is None:
            return
        try:
            await self.services.state.forget_thread(payload.guild_id, payload.thread_id)
        except Exception:
            log.exception("forgetting deleted thread %s failed", payload.thread_id)
        await self._guarded(posted.channel_deleted(self.services, payload.guild_id, payload.thread_id), "thread files")
        if self.services.sync is not None:
            await self._guarded(
                self.services.sync.channel_deleted(payload.guild_id, payload.thread_id), "thread deletion"
            )

    async def on_guild_remove(self, guild: discord.Guild) -> None:
        services = self.services
        if services is None:
            return
        space = services.engine.space_of(kb_name(guild.id, 0))  # the guild's own store, if it has one
        try:
            names = await services.call(services.engine.knowledge_bases, space)
        except Exception:
            log.exception("listing knowledge bases after leaving guild %s failed", guild.id)
            return
        prefix = guild_prefix(guild.id)
        for name in names:
            if name.startswith(prefix):
                await self.drop_kb(name, f"left guild {guild.id}")
        try:
            await services.state.delete_guild(guild.id)
        except Exception:
            log.exception("forgetting guild %s settings failed", guild.id)
        if space is not None:
            try:
                if await services.call(services.engine.delete_space, space):
                    log.info("deleted the store of guild %s (space %s)", guild.id, space)
            except Exception:
                log.exception("deleting the store of guild %s failed", guild.id)

    async def drop_kb(self, kb: str, why: str) -> None:
        """Delete a channel's knowledge base and what the bot kept about it (the bot's copies first)."""
        services = self.services
        if services is None:
            return
        try:
            await services.state.delete_kb(kb)
        except Exception:
            log.exception("deleting the bot's records for %s failed", kb)
        async with services.jobs.withdrawn(kb):  # after a running build of it, before any other
            try:
                deleted = await services.call(services.engine.delete_kb, kb)
                if deleted:
                    log.info("deleted knowledge base %s (%s)", kb, why)
                    await services.state.finish_removals(kb)  # the removal's record (nothing left to redact)
            except NotFoundError:
                log.debug("no knowledge base %s to delete (%s)", kb, why)
            except Exception:
                log.exception("deleting knowledge base %s failed (%s)", kb, why)
        services.forget_autoingest(kb)
        if services.sync is not None:
            services.sync.forget_kb(kb)

    # ------------------------------------------------------------------ shutdown

    async def shutdown(self) -> None:
        """Graceful stop: refuse new builds, let running ones finish (up to the grace period), close."""
        if self._shutdown_started:
            log.warning("second stop request: closing now (an unfinished build stores nothing)")
            await self.close()
            return
        self._shutdown_started = True
        if self.services is not None:
            self.services.engine.stop_answers(ANSWER_STOPPED)  # each streamed answer ends with why
            queue = self.services.jobs.state()
            if queue.running or queue.waiting:
                log.info("waiting for %d running build(s) to finish before stopping", len(queue.running))
            finished = await self.services.jobs.drain(self.shutdown_grace)
            if self.services.sync is not None:
                finished = await self.services.sync.settled(self.shutdown_grace) and finished
            if not finished:
                log.warning(
                    "builds still running after %.0f s; stopping anyway (they store nothing)",
                    self.shutdown_grace,
                )
        await self.close()

    async def close(self) -> None:
        self._shutdown_started = True
        if self._resuming is not None and not self._resuming.done():
            self._resuming.cancel()  # its uploads stay recorded as unfinished: the next start resumes them
        if self._reconciling is not None and not self._reconciling.done():
            self._reconciling.cancel()  # imports stay recorded; the next start reconciles again
        if self._answering_left is not None and not self._answering_left.done():
            self._answering_left.cancel()  # the questions stay kept; the next start answers them
        if self.services is not None and self.services.sync is not None:
            self.services.sync.close()
        await super().close()
        if self.services is not None:
            if not self.services.cdn.closed:
                await self.services.cdn.close()
            self.services.state.close()
            if self.services.jobs.uploads is not None:
                self.services.jobs.uploads.close()
        if self._own_cluster is not None:
            await self._own_cluster.close()
            self._own_cluster = None
        if self.engine is not None:
            try:
                await asyncio.to_thread(self.engine.close)
            except Exception:
                log.exception("closing the engine failed")
            self.engine = None
        log.info("stopped")
