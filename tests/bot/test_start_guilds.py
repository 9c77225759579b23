"""At start the bot acts on channel ids read from its stores (threads' questions and answers, pending
exchanges, history imports, synced channels, posted files). A store may come from elsewhere (`raptor
guilds import`), so each id is any channel the bot can see: Discord says whose guild a channel is, and the
start reads, deletes and posts only in channels of the guild whose store names them (`channel_of_guild`)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import discord

from bot.answering import reconcile_questions, settle_pending
from bot.kb import channel_of_guild
from bot.messages import resume_imports
from bot.state import MessageImport, ThreadRecord
from raptor_engine.types import Turn
from tests.bot.conftest import CHAN_A, CHAN_B, GUILD
from tests.bot.test_bot_flows import KB_A
from tests.bot.test_bot_state import open_state

ELSEWHERE = 999  # a guild the bot is also in, whose store is not the one read


class Channel:
    """A channel or thread as discord.py gives it: its guild, and what was done in it."""

    def __init__(self, channel_id: int, guild_id: int):
        self.id, self.guild = channel_id, SimpleNamespace(id=guild_id)
        self.fetched: list[int] = []
        self.read = 0

    async def fetch_message(self, message_id: int):
        self.fetched.append(message_id)
        response = SimpleNamespace(status=404, reason="Not Found")
        raise discord.NotFound(response, {"code": 10008, "message": "Unknown Message"})

    async def history(self, **_: object):
        self.read += 1
        for _ in ():
            yield


class Client:
    """The parts of discord.Client the start uses: cached channels, fetched ones, partial ones."""

    def __init__(self, cached: dict[int, Channel], fetched: dict[int, Channel] | None = None):
        self.cached, self.fetched = cached, fetched or {}
        self.partial: list[int] = []

    def get_channel(self, channel_id: int) -> Channel | None:
        return self.cached.get(channel_id)

    async def fetch_channel(self, channel_id: int) -> Channel:
        if channel_id not in self.fetched:
            raise discord.NotFound(SimpleNamespace(status=404, reason="Not Found"), {"code": 10003})
        return self.fetched[channel_id]

    def get_partial_messageable(self, channel_id: int, guild_id: int | None = None) -> Channel:
        self.partial.append(channel_id)
        return Channel(channel_id, guild_id or 0)


async def test_a_channel_is_given_only_for_its_own_guild():
    ours, theirs, archived = Channel(1, GUILD), Channel(2, ELSEWHERE), Channel(3, ELSEWHERE)
    client = Client({1: ours, 2: theirs}, {3: archived})
    assert await channel_of_guild(client, GUILD, 1) is ours
    assert await channel_of_guild(client, GUILD, 2) is None  # cached, of another guild
    assert await channel_of_guild(client, GUILD, 3) is None  # fetched (an archived thread), of another guild
    gone = await channel_of_guild(client, GUILD, 4)  # Discord cannot show it: read as before, and fails as before
    assert gone is not None and client.partial == [4]


async def test_the_start_deletes_nothing_in_a_thread_of_another_guild(tmp_path):
    """A thread row in guild 300's store whose thread id is guild 999's thread, its question ids made up:
    the start would find them "deleted" and delete the answers it names there (any message, with Manage
    Messages). Nothing is fetched there and the row's memory is left as it is."""
    spaces, state = open_state(tmp_path)
    await state.add_thread(ThreadRecord(7, KB_A, GUILD, CHAN_A), opened_by="mallory")
    await state.add_turns(GUILD, 7, [Turn("user", "q"), Turn("assistant", "a")], posted=[[701], [702]])
    thread = Channel(7, ELSEWHERE)
    client = Client({7: thread})
    services = SimpleNamespace(state=state, jobs=SimpleNamespace(track=contextlib.nullcontext))
    assert await reconcile_questions(services, lambda g, c: channel_of_guild(client, g, c)) == 0
    assert thread.fetched == []
    assert [t.content for t in await state.history(GUILD, 7)] == ["q", "a"]
    spaces.close()


async def test_a_pending_exchange_in_a_thread_of_another_guild_is_dropped_unread(tmp_path):
    spaces, state = open_state(tmp_path)
    await state.add_thread(ThreadRecord(7, KB_A, GUILD, CHAN_A), opened_by="mallory")
    turns = await state.add_turns(GUILD, 7, [Turn("user", "q"), Turn("assistant", "a")], posted=[[701], []], pending=True)
    thread = Channel(7, ELSEWHERE)
    client = Client({7: thread})
    services = SimpleNamespace(state=state)
    kept, dropped = await settle_pending(services, lambda g, c: channel_of_guild(client, g, c), bot_id=1)
    assert (kept, dropped) == (0, 1) and thread.read == 0
    assert not await state.still_pending(GUILD, turns)
    spaces.close()


async def test_a_history_import_of_another_guilds_channel_is_not_resumed(tmp_path):
    """A running import in guild 300's store whose source is guild 999's channel would copy that channel's
    history into guild 300's knowledge base; one whose status channel is guild 999's would post there."""
    spaces, state = open_state(tmp_path)
    source, status = Channel(CHAN_B, ELSEWHERE), Channel(CHAN_A, GUILD)
    ours, theirs_status = Channel(CHAN_B + 1, GUILD), Channel(CHAN_A + 1, ELSEWHERE)
    client = Client({c.id: c for c in (source, status, ours, theirs_status)})
    for source_id, status_id in ((source.id, status.id), (ours.id, theirs_status.id)):
        record = MessageImport(0, KB_A, GUILD, source_id, status_id, 1, "mallory", 5, None, "running", "earlier")
        await state.start_import(record)
    engine = SimpleNamespace(knowledge_bases=lambda: [KB_A], spaces=SimpleNamespace(names=lambda: []))

    async def call(function, *args):
        return function(*args)

    services = SimpleNamespace(state=state, engine=engine, call=call, run_id="now", token_lifetime=900)
    assert await resume_imports(services, client) == 0
    assert source.read == ours.read == 0 and client.partial == []
    assert await state.unfinished_imports(GUILD) == []  # failed: not tried again at each start
    spaces.close()
