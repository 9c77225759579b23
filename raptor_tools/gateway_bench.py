"""`python -m raptor_tools.gateway_bench`: what a gateway process pays per guild, for docs/SCALING.md.

The bot keeps no per-guild state in memory itself; discord.py does: every guild the process's shards
own arrives as a GUILD_CREATE and stays cached (channels, roles, threads; no members or presences, the
bot does not ask for those intents). This feeds synthetic guilds of a given size through discord.py's
own parser (the same private `_connection` entry point the bot tests use) and prints the cache's bytes
per guild and the parse time per guild, plus how long the shards of one identify bucket take to start.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
import tracemalloc

import discord

from bot.client import make_intents
from bot.gateway import IDENTIFY_INTERVAL_SECONDS

PERMISSIONS = str(discord.Permissions(send_messages=True).value)


def guild_create(guild_id: int, channels: int, roles: int) -> dict:
    """A GUILD_CREATE payload as Discord sends it to a bot without the members intent."""
    base = guild_id * 1000
    return {
        "id": str(guild_id),
        "name": f"guild {guild_id}",
        "unavailable": False,
        "member_count": 500,
        "roles": [
            {
                "id": str(guild_id if r == 0 else base + r),
                "name": "@everyone" if r == 0 else f"role {r}",
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
                "position": r,
                "permissions": PERMISSIONS,
            }
            for r in range(roles)
        ],
        "emojis": [],
        "members": [],
        "threads": [],
        "features": [],
        "owner_id": "1",
        "channels": [
            {
                "id": str(base + 500 + c),
                "type": 0,
                "name": f"channel-{c}",
                "position": c,
                "permission_overwrites": [],
            }
            for c in range(channels)
        ],
    }


def parse_all(payloads: list[dict], traced: bool) -> tuple[float, float]:
    """Feed the payloads to a fresh client's parser: (bytes it kept, seconds it took). Tracing memory
    slows allocation several-fold, so the time comes from an untraced pass."""
    client = discord.AutoShardedClient(intents=make_intents(False), shard_count=1)
    state = client._connection
    if traced:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    for payload in payloads:
        state.parse_guild_create(payload)
    elapsed = time.perf_counter() - started
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(client.guilds) == len(payloads)
    return kept, elapsed


def message_create(guild: dict, n: int) -> dict:
    """A member's MESSAGE_CREATE as a bot without the message-content intent gets it (text hidden)."""
    return {
        "id": str(10**18 + n),
        "channel_id": guild["channels"][n % len(guild["channels"])]["id"],
        "guild_id": guild["id"],
        "author": {"id": str(5000 + n % 50), "username": "member", "discriminator": "0", "avatar": None},
        "member": {"roles": [], "joined_at": "2026-01-01T00:00:00+00:00", "deaf": False, "mute": False},
        "content": "",
        "timestamp": "2026-01-01T00:00:00+00:00",
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
    }


def parse_messages(guild: dict, count: int) -> float:
    """Seconds for discord.py to parse `count` MESSAGE_CREATEs into one guild's channels."""
    client = discord.AutoShardedClient(intents=make_intents(False), shard_count=1)
    state = client._connection
    state.parse_guild_create(guild)
    payloads = [message_create(guild, n) for n in range(count)]
    started = time.perf_counter()
    for payload in payloads:
        state.parse_message_create(payload)
    return time.perf_counter() - started


async def measure(guilds: int, channels: int, roles: int, messages: int) -> tuple[float, float, float]:
    """(bytes of discord.py cache per guild, microseconds to parse one GUILD_CREATE, one MESSAGE_CREATE)."""
    payloads = [guild_create(10_000 + g, channels, roles) for g in range(guilds)]
    _, elapsed = parse_all(payloads, traced=False)
    kept, _ = parse_all(payloads, traced=True)
    per_message = parse_messages(payloads[0], messages) / messages * 1e6
    return kept / guilds, elapsed / guilds * 1e6, per_message


def identify_seconds(shards: int, max_concurrency: int) -> float:
    """Seconds until the last shard may IDENTIFY: one per bucket per interval, buckets side by side."""
    return (math.ceil(shards / max_concurrency) - 1) * IDENTIFY_INTERVAL_SECONDS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m raptor_tools.gateway_bench", description=__doc__)
    parser.add_argument("--guilds", type=int, default=10_000)
    parser.add_argument("--channels", type=int, default=30, help="text channels per guild")
    parser.add_argument("--roles", type=int, default=15, help="roles per guild")
    parser.add_argument("--shards", type=int, default=10, help="shards, for the start-up time")
    parser.add_argument("--messages", type=int, default=20_000, help="MESSAGE_CREATEs to time")
    parser.add_argument("--max-concurrency", type=int, default=1, help="Discord's identify buckets")
    args = parser.parse_args(argv)
    per_guild, parse_us, message_us = asyncio.run(
        measure(args.guilds, args.channels, args.roles, args.messages)
    )
    print(f"guilds {args.guilds:,} of {args.channels} channels and {args.roles} roles")
    print(f"discord.py cache per guild: {per_guild / 1024:.1f} KiB; all guilds {per_guild * args.guilds / 2**20:.1f} MiB")
    print(f"GUILD_CREATE parse per guild: {parse_us:.0f} us; all guilds {parse_us * args.guilds / 1e6:.2f} s")
    print(f"MESSAGE_CREATE parse: {message_us:.0f} us; 100 messages/s cost {message_us / 100:.1f}% of a core")
    print(
        f"{args.shards} shards, max_concurrency {args.max_concurrency}: the last shard identifies "
        f"{identify_seconds(args.shards, args.max_concurrency):.1f} s after the first"
    )


if __name__ == "__main__":
    main()
