"""Who asked which exchange of a thread, while the bot runs: members asking in one thread in turn.

Two members asking in one thread take turns: Bob asks about the rotavator, Alice about the treasurer, then
Bob writes "and how do I start it?". Read against the thread's latest exchange (Alice's), Bob's "it" was the
treasurer. A member's follow-up that is no Discord reply is read against their own latest exchange instead
(`own_exchange`), as a Discord reply to it would be, when only other members' exchanges came after it and
it is recent (`INTERLEAVED_SECONDS`). A member who has not asked in the thread follows up on its latest
exchange, as before.

Kept in memory only (the thread's stored turns name no asker): after a restart every follow-up reads the
thread's latest exchange until its member asks again.
"""

from __future__ import annotations

from collections import OrderedDict

import discord

INTERLEAVED_SECONDS = 900  # a member's own exchange older than this is no longer the one they go on from
MAX_THREADS = 2000  # threads remembered; the least recently asked in are forgotten first


class Askers:
    """For each thread, each member's latest answered exchange, by a Discord message it holds (the member's
    question, or for an /ask the answer's first message)."""

    def __init__(self, max_threads: int = MAX_THREADS):
        self._threads: OrderedDict[int, dict[int, int]] = OrderedDict()
        self._max = max_threads

    def asked(self, thread_id: int, member_id: int, message_id: int) -> None:
        """`member_id`'s exchange holding `message_id` was answered in the thread."""
        members = self._threads.pop(thread_id, {})
        members[member_id] = message_id
        self._threads[thread_id] = members
        while len(self._threads) > self._max:
            self._threads.popitem(last=False)

    def own_exchange(self, thread_id: int, member_id: int, now: discord.Message) -> int | None:
        """The message of `member_id`'s latest exchange in the thread when it was answered at most
        INTERLEAVED_SECONDS before `now` (the member's new message); None otherwise."""
        message_id = self._threads.get(thread_id, {}).get(member_id)
        if message_id is None:
            return None
        age = (now.created_at - discord.utils.snowflake_time(message_id)).total_seconds()
        return message_id if age <= INTERLEAVED_SECONDS else None
