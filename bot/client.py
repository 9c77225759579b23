"""The Discord client: intents, setup, events, errors and shutdown. No RAPTOR logic lives here.

The message-content intent is optional (DISCORD_MESSAGE_CONTENT=1). Without it Discord hides the text
and files of messages that do not mention the bot, so auto-ingest cannot see uploads and thread
follow-ups need a mention or /ask; everything else works the same.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import discord
from discord import app_commands

from raptor_engine.config import Settings
from raptor_engine.errors import NotFoundError, RaptorError
from raptor_engine.ratelimit import QuestionLimiter

from . import commands
from .answering import handle_follow_up
from .jobs import MIN_EDIT_INTERVAL_SECONDS, TOKEN_LIFETIME_SECONDS, BuildJobs
from .kb import guild_prefix, kb_for_channel, kb_name
from .permissions import Cooldown
from .pictures import ShowTreeButton
from .render import human_size, inert, truncate
from .replies import tell
from .state import BotState
from .views import ContextPageButton, ShowContextButton

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 300.0


def make_intents(message_content: bool) -> discord.Intents:
    intents = discord.Intents.default()  # guilds and guild messages; no privileged intents
    intents.message_content = message_content
    intents.members = False
    intents.presences = False
    return intents


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


class RaptorBot(discord.Client):
    """A discord.Client with an app-command tree over one raptor_engine.Engine."""

    def __init__(
        self,
        settings: Settings,
        *,
        engine: Any = None,
        message_content: bool = False,
        sync: bool = False,
        warm: bool = True,
        status_interval: float = MIN_EDIT_INTERVAL_SECONDS,
        token_lifetime: float = TOKEN_LIFETIME_SECONDS,
        shutdown_grace: float = SHUTDOWN_GRACE_SECONDS,
    ):
        super().__init__(
            intents=make_intents(message_content), allowed_mentions=discord.AllowedMentions.none()
        )
        self.settings = settings
        self.engine = engine
        self.sync_on_start = sync
        self.warm_on_start = warm
        self.status_interval = status_interval
        self.token_lifetime = token_lifetime
        self.shutdown_grace = shutdown_grace
        self.tree = app_commands.CommandTree(self)
        self.tree.on_error = self.report_command_error  # type: ignore[method-assign]
        self.cooldown = Cooldown(settings.ask_cooldown_seconds)
        self.question_limit = QuestionLimiter(settings.questions_per_minute)
        self._autoingest: dict[str, bool] = {}
        self._shutdown_started = False
        self.state: BotState
        self.jobs: BuildJobs
        self.cdn: aiohttp.ClientSession

    # ------------------------------------------------------------------ start-up

    async def setup_hook(self) -> None:
        if self.engine is None:
            from raptor_engine.engine import Engine

            self.engine = await asyncio.to_thread(Engine, self.settings)
        if self.warm_on_start:
            log.info("warming the engine (embedding model, clustering code)…")
            await asyncio.to_thread(self.engine.warm)
        await asyncio.to_thread(self.check_store)
        self.state = await asyncio.to_thread(BotState, self.settings.db_path)
        self.jobs = BuildJobs(self.engine, self.settings.max_concurrent_builds)
        self.cdn = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300))
        commands.register(self)
        self.add_dynamic_items(ShowContextButton, ContextPageButton, ShowTreeButton)
        if not self.intents.message_content:
            log.warning(
                "running without the message-content intent: auto-ingest cannot see uploads and thread "
                "follow-ups need a mention of the bot (set DISCORD_MESSAGE_CONTENT=1 to enable it)"
            )
        if self.sync_on_start:
            await self.sync_commands()
        log.info("ready to connect; backend %s", getattr(self.engine, "backend_name", "?"))

    def check_store(self) -> None:
        """`raptor doctor` at start-up: a crash may have left an index stale; rebuild it from SQLite."""
        report = self.engine.doctor(repair=True)
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

    async def on_ready(self) -> None:
        log.info("connected as %s to %d guild(s)", self.user, len(self.guilds))

    # ------------------------------------------------------------------ engine helpers

    async def engine_call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call an engine method off the event loop whether it is async or plain."""
        if inspect.iscoroutinefunction(fn):
            return await fn(*args)
        return await asyncio.to_thread(fn, *args)

    async def documents(self, kb: str) -> list[Any]:
        try:
            return list(await self.engine_call(self.engine.documents, kb))
        except NotFoundError:
            return []

    async def run_change(
        self, interaction: discord.Interaction, done_text: str, fn: Callable[..., Any], *args: Any
    ) -> None:
        """A confirmed removal or clear; reports the outcome on the confirm message."""
        try:
            await self.engine_call(fn, *args)
        except RaptorError as error:
            log.info("change %s%s refused: %s", getattr(fn, "__name__", fn), args, error)
            await self._edit_or_tell(interaction, f"⚠️ {inert(str(error))}")
            return
        except Exception:
            log.exception("change %s%s failed", getattr(fn, "__name__", fn), args)
            await self._edit_or_tell(
                interaction, "⚠️ That failed; the error was logged and nothing was changed."
            )
            return
        log.info("change %s%s done by %s", getattr(fn, "__name__", fn), args, interaction.user.id)
        await self._edit_or_tell(interaction, done_text)

    async def _edit_or_tell(self, interaction: discord.Interaction, text: str) -> None:
        try:
            await interaction.edit_original_response(content=text, view=None)
        except discord.HTTPException:
            await tell(interaction, text)

    async def status_lines(self, kb: str) -> list[str]:
        docs = await self.documents(kb)
        queue = self.jobs.state()
        running_here = queue.running.get(kb)
        lines = [
            f"**Backend**: {getattr(self.engine, 'backend_name', '?')}",
            f"**This channel**: {len(docs)} document(s), {human_size(sum(getattr(d, 'size', 0) for d in docs))}, "
            f"{sum(getattr(d, 'chunks', 0) for d in docs)} chunks, {sum(getattr(d, 'tokens', 0) for d in docs):,} tokens",
            f"**Building here**: {inert(truncate(running_here, 120)) if running_here else 'nothing'}"
            f" · {queue.waiting.get(kb, 0)} waiting",
            f"**All channels**: {len(queue.running)} of {queue.limit} build slots in use, "
            f"{sum(queue.waiting.values())} file(s) waiting",
            f"**Auto-ingest here**: {'on' if await self.autoingest_enabled(kb) else 'off'}"
            + ("" if self.intents.message_content else " (message-content intent off: uploads are not seen)"),
        ]
        database, indices = await asyncio.to_thread(
            storage_sizes, self.settings.db_path, self.settings.index_dir
        )
        lines.append(
            f"**Storage (all channels)**: database {human_size(database)} (with its write-ahead log), "
            f"search indices {human_size(indices)}"
        )
        return lines

    async def autoingest_enabled(self, kb: str) -> bool:
        if kb not in self._autoingest:
            self._autoingest[kb] = await self.state.autoingest_enabled(kb)
        return self._autoingest[kb]

    def forget_autoingest_cache(self, kb: str) -> None:
        self._autoingest.pop(kb, None)

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
            await tell(interaction, "⚠️ Something went wrong; the error was logged. Please try again.")

    # ------------------------------------------------------------------ events

    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot or message.guild is None or self._shutdown_started:
            return
        try:
            await self._route_message(message)
        except Exception:
            log.exception("handling message %s in %s failed", message.id, message.channel.id)

    async def _route_message(self, message: discord.Message) -> None:
        channel = message.channel
        if isinstance(channel, discord.Thread) and self.user is not None and channel.owner_id == self.user.id:
            record = await self.state.thread(channel.id)
            if record is not None:
                await handle_follow_up(self, message, record)
                return
        if message.attachments:
            kb = kb_for_channel(message.guild.id if message.guild else None, channel)
            if kb is not None and await self.autoingest_enabled(kb):
                await commands.auto_ingest(self, message, kb)

    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        await self.drop_kb(kb_name(channel.guild.id, channel.id), f"channel {channel.id} deleted")

    async def on_raw_thread_delete(self, payload: discord.RawThreadDeleteEvent) -> None:
        try:
            await self.state.forget_thread(payload.thread_id)
        except Exception:
            log.exception("forgetting deleted thread %s failed", payload.thread_id)

    async def on_guild_remove(self, guild: discord.Guild) -> None:
        try:
            names = await self.engine_call(self.engine.knowledge_bases)
        except Exception:
            log.exception("listing knowledge bases after leaving guild %s failed", guild.id)
            return
        prefix = guild_prefix(guild.id)
        for name in names:
            if name.startswith(prefix):
                await self.drop_kb(name, f"left guild {guild.id}")
        try:
            await self.state.delete_guild(guild.id)
        except Exception:
            log.exception("forgetting guild %s settings failed", guild.id)

    async def drop_kb(self, kb: str, why: str) -> None:
        """Delete a channel's knowledge base and what the bot kept about it (the bot's copies first)."""
        try:
            await self.state.delete_kb(kb)
        except Exception:
            log.exception("deleting the bot's records for %s failed", kb)
        try:
            deleted = await self.engine_call(self.engine.delete_kb, kb)
            if deleted:
                log.info("deleted knowledge base %s (%s)", kb, why)
        except NotFoundError:
            log.debug("no knowledge base %s to delete (%s)", kb, why)
        except Exception:
            log.exception("deleting knowledge base %s failed (%s)", kb, why)
        self.forget_autoingest_cache(kb)

    # ------------------------------------------------------------------ shutdown

    async def shutdown(self) -> None:
        """Graceful stop: refuse new builds, let running ones finish (up to the grace period), close."""
        if self._shutdown_started:
            log.warning("second stop request: closing now (an unfinished build stores nothing)")
            await self.close()
            return
        self._shutdown_started = True
        if hasattr(self, "jobs"):
            queue = self.jobs.state()
            if queue.running or queue.waiting:
                log.info("waiting for %d running build(s) to finish before stopping", len(queue.running))
            finished = await self.jobs.drain(self.shutdown_grace)
            if not finished:
                log.warning(
                    "builds still running after %.0f s; stopping anyway (they store nothing)",
                    self.shutdown_grace,
                )
        await self.close()

    async def close(self) -> None:
        self._shutdown_started = True
        await super().close()
        if hasattr(self, "cdn") and not self.cdn.closed:
            await self.cdn.close()
        if hasattr(self, "state"):
            self.state.close()
        if self.engine is not None and hasattr(self.engine, "close"):
            try:
                await self.engine_call(self.engine.close)
            except Exception:
                log.exception("closing the engine failed")
            self.engine = None
        log.info("stopped")
