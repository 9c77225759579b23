"""Who may change a channel's knowledge base, and how often one person may ask.

Checked when the command runs: Discord's default_permissions is only a hint that server admins can
override, and it is ignored on subcommands, so it cannot be the gate.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import discord

MANAGE_REFUSAL = "You need the Manage Messages permission in this channel{role} to change its knowledge base."


def has_manager_role(member: object, configured: str, guild_role_id: int | None) -> bool:
    """True when the member holds the role from RAPTOR_MANAGER_ROLE (id or name) or the guild's chosen role."""
    roles = getattr(member, "roles", None) or []
    wanted = configured.strip().lower()
    for role in roles:
        if guild_role_id is not None and role.id == guild_role_id:
            return True
        if wanted and (str(role.id) == wanted or role.name.lower() == wanted):
            return True
    return False


def can_manage(
    permissions: discord.Permissions, member: object, configured_role: str, guild_role_id: int | None
) -> bool:
    """Manage Messages in the channel (Administrator implies it) or a configured manager role."""
    if permissions.manage_messages or permissions.administrator:
        return True
    return has_manager_role(member, configured_role, guild_role_id)


def refusal_text(configured_role: str, guild_role: discord.Role | None) -> str:
    names = [
        f"'{r}'"
        for r in ([guild_role.name] if guild_role else []) + ([configured_role] if configured_role else [])
    ]
    return MANAGE_REFUSAL.format(role=f" or the {' / '.join(names)} role" if names else "")


class Cooldown:
    """A per-user cooldown on questions; `retry_after` says how long until the next one is allowed."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self._last: dict[int, float] = {}

    def retry_after(self, user_id: int) -> float:
        """0 when the user may ask now (and records the question); else seconds left to wait."""
        if self.seconds <= 0:
            return 0.0
        now = self.clock()
        last = self._last.get(user_id)
        if last is not None and now - last < self.seconds:
            return self.seconds - (now - last)
        self._last[user_id] = now
        if len(self._last) > 10_000:  # forget old entries so the dict cannot grow without bound
            horizon = now - self.seconds
            self._last = {uid: t for uid, t in self._last.items() if t > horizon}
        return 0.0


def cooldown_text(retry_after: float) -> str:
    return f"You're asking too quickly; try again in {max(1, round(retry_after))} s."
