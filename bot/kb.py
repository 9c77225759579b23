"""Which knowledge base a Discord channel reads and writes: one per guild text or forum channel.

Threads and forum posts use their parent channel's knowledge base, so a conversation in a thread sees
the same documents as the channel it hangs off. The name carries the guild id, so leaving a guild can
find and drop every knowledge base that belonged to it.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import discord

log = logging.getLogger(__name__)

_KB_NAME = re.compile(r"^guild-(\d+)-channel-(\d+)$")


def kb_name(guild_id: int, channel_id: int) -> str:
    return f"guild-{guild_id}-channel-{channel_id}"


def guild_prefix(guild_id: int) -> str:
    return f"guild-{guild_id}-"


def parse_kb_name(name: str) -> tuple[int, int] | None:
    """(guild id, channel id) for a name this module made; None for anything else."""
    match = _KB_NAME.match(name)
    return (int(match.group(1)), int(match.group(2))) if match else None


def home_channel_id(channel: object) -> int | None:
    """The id of the channel whose knowledge base `channel` uses: a thread's parent, else itself."""
    if isinstance(channel, discord.Thread):
        return channel.parent_id
    channel_id = getattr(channel, "id", None)
    return int(channel_id) if channel_id is not None else None


def kb_for_channel(guild_id: int | None, channel: object) -> str | None:
    """The knowledge base for a channel in a guild; None in DMs, where there is none."""
    if guild_id is None or channel is None:
        return None
    if isinstance(channel, discord.DMChannel | discord.GroupChannel):
        return None
    home = home_channel_id(channel)
    return kb_name(guild_id, home) if home is not None else None


def guild_id_of(channel: object) -> int | None:
    """The guild a channel or thread object is in, as Discord gave it (None: a DM, or unknown)."""
    guild_id = getattr(channel, "guild_id", None)
    if guild_id is None:
        guild_id = getattr(getattr(channel, "guild", None), "id", None)
    return int(guild_id) if guild_id is not None else None


async def channel_of_guild(client: discord.Client, guild_id: int, channel_id: int) -> Any | None:
    """Channel `channel_id` to read or act in for guild `guild_id`'s stored rows (a thread, a synced
    channel, a posted file's channel), or None when Discord says it is not that guild's: a store may come
    from elsewhere (`raptor guilds import`), and its ids are any channel the bot can see. One that Discord
    cannot show now (deleted, no access) is given as a partial one, whose reads fail as they always did."""
    channel = client.get_channel(channel_id)
    if channel is None:
        try:
            channel = await client.fetch_channel(channel_id)
        except discord.HTTPException:
            return client.get_partial_messageable(channel_id, guild_id=guild_id)
    if guild_id_of(channel) != guild_id:
        log.warning("channel %s is not in guild %s, whose stored rows name it; left alone", channel_id, guild_id)
        return None
    return channel
