"""What the bot's commands and flows need from the running bot, and nothing else of the client.

Built once in `RaptorBot.setup_hook` and handed to each Cog, the answer/add flows and the persistent
buttons (through `services_of(interaction.client)`), so no handler reaches into the client and no module
imports it: the client imports the Cogs, never the other way round.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import discord

from raptor_engine.config import Settings
from raptor_engine.engine import Engine
from raptor_engine.errors import NotFoundError
from raptor_engine.query.ratelimit import FileLimiter, QuestionLimiter
from raptor_engine.storage.records import DocumentInfo

from .jobs import MIN_EDIT_INTERVAL_SECONDS, TOKEN_LIFETIME_SECONDS, BuildJobs
from .permissions import Cooldown
from .state import BotState


@dataclass
class Services:
    """The engine, the bot's own tables, the build queue, the attachment downloader and the limits."""

    settings: Settings
    engine: Engine
    state: BotState
    jobs: BuildJobs
    cdn: aiohttp.ClientSession
    cooldown: Cooldown
    question_limit: QuestionLimiter
    message_content: bool  # whether Discord shows the bot messages' text and files (the intent)
    token_lifetime: float = TOKEN_LIFETIME_SECONDS
    status_interval: float = MIN_EDIT_INTERVAL_SECONDS
    # bot.sync.MessageSync (message deletions, edits, sync; set in setup_hook): typed Any, as that module
    # imports this one
    sync: Any = None
    # this run of the bot, written on the history imports it starts: the resume at start skips its own
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # files each member may have added per hour (RAPTOR_FILES_PER_HOUR; no limit unless the bot sets one)
    file_limit: FileLimiter = field(default_factory=lambda: FileLimiter(0))
    _autoingest: dict[str, bool] = field(default_factory=dict)

    def upload_refusal(self, kb: str, user_id: int, files: int) -> str | None:
        """Why `files` files of this member cannot be queued in `kb` now (the channel's queue, then the
        member's files per hour, which counts them once the queue takes them), or None."""
        refusal = self.jobs.refusal(kb, files)
        if refusal:
            return refusal
        wait = self.file_limit.retry_after(user_id, files)
        return self.file_limit.message(wait) if wait else None

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call an engine method off the event loop whether it is async or plain."""
        if inspect.iscoroutinefunction(fn):
            return await fn(*args)
        return await asyncio.to_thread(fn, *args)

    async def documents(self, kb: str) -> list[DocumentInfo]:
        """The knowledge base's documents; none when it does not exist yet."""
        try:
            return list(await self.call(self.engine.documents, kb))
        except NotFoundError:
            return []

    async def autoingest_enabled(self, kb: str) -> bool:
        """Asked on every message with files, so the setting is cached until it changes."""
        if kb not in self._autoingest:
            self._autoingest[kb] = await self.state.autoingest_enabled(kb)
        return self._autoingest[kb]

    def forget_autoingest(self, kb: str) -> None:
        self._autoingest.pop(kb, None)


def services_of(client: discord.Client) -> Services:
    """The services of the client behind an interaction (persistent buttons get no Cog to hold them)."""
    services = getattr(client, "services", None)
    if not isinstance(services, Services):
        raise RuntimeError("the bot's services are not set up yet")
    return services
