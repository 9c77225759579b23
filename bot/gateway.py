"""Sharding the gateway: which shards this process runs, and when each may IDENTIFY.

discord.py does the sharding itself (`AutoShardedBot`: one websocket per shard, a guild's events on
shard `(guild_id >> 22) % shard_count`); this module only turns the settings into its `shard_count` and
`shard_ids`, and paces the IDENTIFYs. Discord lets a bot start one session per 5 s per *bucket*
(`shard_id % max_concurrency`, max_concurrency from GET /gateway/bot). discord.py's own hook sleeps 5 s
before every shard but the first and knows nothing of other processes; `IdentifyGate` waits per bucket
instead, and a lock file per bucket makes processes on one machine wait for each other too.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import discord
import yarl

from raptor_engine.config import Settings

try:  # POSIX: processes on one machine share the identify rate through a lock file per bucket
    import fcntl
except ImportError:  # pragma: no cover - Windows: each process paces only its own shards
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

# Discord's 5 s per bucket, plus a margin: the slot is taken just before IDENTIFY is sent.
IDENTIFY_INTERVAL_SECONDS = 5.5


@dataclass(frozen=True)
class ShardPlan:
    """discord.py's `shard_count` and `shard_ids`: None, None asks Discord for its recommendation."""

    count: int | None
    ids: list[int] | None

    def describe(self) -> str:
        if self.count is None:
            return "Discord's recommended shard count, all shards in this process"
        ids = self.ids if self.ids is not None else list(range(self.count))
        if len(ids) == 1:
            return f"shard {ids[0]} of {self.count}"
        return f"shards {ids[0]}-{ids[-1]} of {self.count}"


def shard_plan(settings: Settings) -> ShardPlan:
    """The shards this process runs, or one sentence naming the setting that is wrong."""
    count, spec = settings.shard_count, settings.shards.strip()
    if count < 0:
        raise ValueError(f"RAPTOR_SHARD_COUNT (--shard-count) must be 0 or more, not {count}.")
    if count == 0:
        if spec:
            raise ValueError("RAPTOR_SHARDS (--shards) needs RAPTOR_SHARD_COUNT (--shard-count) as well.")
        return ShardPlan(None, None)
    if not spec:
        return ShardPlan(count, None)
    first, _, last = spec.partition("-")
    try:
        low, high = int(first), int(last or first)
    except ValueError:
        raise ValueError(
            f"RAPTOR_SHARDS (--shards) must be a shard id or a range like 0-3, not {spec!r}."
        ) from None
    if not 0 <= low <= high < count:
        raise ValueError(f"RAPTOR_SHARDS (--shards) {spec} is not a range within shards 0-{count - 1}.")
    return ShardPlan(count, list(range(low, high + 1)))


def point_at_endpoints(settings: Settings) -> None:
    """Send REST calls and gateway connections elsewhere (a proxy shared by the processes) when set."""
    if settings.discord_api_base:
        discord.http.Route.BASE = settings.discord_api_base.rstrip("/") + "/api/v10"
        log.info("Discord REST API at %s", discord.http.Route.BASE)
    if settings.discord_gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.discord_gateway_url)
        log.info("Discord gateway at %s", settings.discord_gateway_url)


def last_identify(recorded: str) -> float:
    """The time a lock file records; 0 (long ago) for an empty or damaged one."""
    try:
        return float(recorded.strip() or 0.0)
    except ValueError:
        return 0.0


def claim_identify_slot(path: Path, interval: float) -> float:
    """Wait (blocking: run in a thread) until the bucket's last IDENTIFY on this machine is `interval`
    seconds old, and record this one; the seconds waited. The lock file holds the last time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            wait = min(interval, max(0.0, last_identify(handle.read()) + interval - time.time()))
            time.sleep(wait)
            handle.seek(0)
            handle.truncate()
            handle.write(f"{time.time():.3f}")
            handle.flush()
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)
    return wait


class IdentifyGate:
    """Paces IDENTIFYs to Discord's rate: one per `interval` seconds per max_concurrency bucket."""

    def __init__(self, lock_dir: Path, interval: float = IDENTIFY_INTERVAL_SECONDS):
        self.lock_dir = lock_dir
        self.interval = interval
        self.max_concurrency: int | None = None
        self._buckets: dict[int, asyncio.Lock] = {}

    async def wait(self, client: Any, shard_id: int | None) -> None:
        """Called by discord.py before each IDENTIFY (first start, and re-identify after a lost session)."""
        if self.max_concurrency is None:
            self.max_concurrency = await self._fetch_max_concurrency(client)
        shard = shard_id or 0
        bucket = shard % self.max_concurrency
        path = self.lock_dir / f"{self._key(client)}-bucket-{bucket}.lock"
        lock = self._buckets.setdefault(bucket, asyncio.Lock())
        async with lock:  # shards of one bucket queue here, not as threads blocked on the file lock
            waited = await asyncio.to_thread(claim_identify_slot, path, self.interval)
        log.info(
            "shard %d identifying (bucket %d of %d; waited %.1f s for Discord's one identify per 5 s per bucket)",
            shard,
            bucket,
            self.max_concurrency,
            waited,
        )

    @staticmethod
    async def _fetch_max_concurrency(client: Any) -> int:
        """max_concurrency from GET /gateway/bot (1, the strictest, when Discord does not say)."""
        try:
            limits = await client.fetch_session_start_limits()
        except (discord.HTTPException, discord.GatewayNotFound) as error:
            log.warning(
                "could not read Discord's session start limits (%s); pacing as max_concurrency 1", error
            )
            return 1
        log.info(
            "Discord session starts: %d of %d left (reset in %.0f s), max_concurrency %d",
            limits.remaining,
            limits.total,
            limits.reset_after / 1000,
            limits.max_concurrency,
        )
        if limits.remaining == 0:
            log.error("no session starts left today; Discord refuses IDENTIFY until the reset")
        return max(1, limits.max_concurrency)

    @staticmethod
    def _key(client: Any) -> str:
        """One rate limit per Discord API and application: the lock files of other bots never match."""
        ident = f"{discord.http.Route.BASE} {client.application_id}"
        return hashlib.sha1(ident.encode()).hexdigest()[:16]
