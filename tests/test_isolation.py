"""Isolation: retrieval only ever returns nodes of the knowledge base asked.

Several tiny knowledge bases are built once (one document is byte-for-byte in all of them, so
deduplication and shared text cannot leak across), then 1,000+ seeded random retrievals (both
modes, random budgets, layer filters, document filters naming other knowledge bases' documents)
check every returned node's knowledge base in SQLite. The bot's channel -> knowledge base mapping
(threads and forum posts use their parent channel's) is exercised the same way, with real
discord.py channel and thread classes, and its own properties are checked with hypothesis.
"""

from __future__ import annotations

import asyncio
import random

import discord
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.kb import kb_for_channel, kb_name, parse_kb_name
from raptor_engine import Engine
from raptor_tools.robustness import (
    ISOLATION_TOPICS,
    MemoEmbedder,
    build_isolation_kbs,
    isolation_documents,
    run_isolation,
)
from tests.unhurried import unhurried_settings

TRIALS = 1000
GUILDS = {"alpha": 111, "beta": 111, "gamma": 222, "delta": 222}  # two guilds, two channels each
CHANNELS = {"alpha": 1001, "beta": 1002, "gamma": 1001, "delta": 1003}  # gamma reuses alpha's channel id


def text_channel(channel_id: int) -> discord.TextChannel:
    channel = discord.TextChannel.__new__(discord.TextChannel)
    channel.id = channel_id
    return channel


def forum(channel_id: int) -> discord.ForumChannel:
    channel = discord.ForumChannel.__new__(discord.ForumChannel)
    channel.id = channel_id
    return channel


def thread(thread_id: int, parent_id: int) -> discord.Thread:
    made = discord.Thread.__new__(discord.Thread)
    made.id = thread_id
    made.parent_id = parent_id
    return made


def bot_kb(label: str) -> str:
    return kb_name(GUILDS[label], CHANNELS[label])


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder):
    """Knowledge bases named directly (engine) and by the bot's mapping, in one data directory."""
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("isolation")), embedder=MemoEmbedder(embedder))
    asyncio.run(build_isolation_kbs(engine))
    asyncio.run(build_isolation_kbs(engine, kb_of=bot_kb))
    yield engine
    engine.close()


def test_every_knowledge_base_holds_its_own_copy_of_the_shared_document(built):
    kbs = list(ISOLATION_TOPICS) + [bot_kb(label) for label in ISOLATION_TOPICS]
    assert sorted(built.knowledge_bases()) == sorted(kbs)
    for kb in kbs:
        assert "shared.txt" in [d.name for d in built.documents(kb)]
    node_owners = {}
    for kb in kbs:
        with built.in_space(kb):
            nodes = built.store.nodes_of_kb(built.store.require_kb(kb))
        assert nodes
        for node in nodes:
            assert node_owners.setdefault((built.spaces.space_of(kb), node.id), kb) == kb


def test_engine_retrieval_never_crosses_knowledge_bases(built):
    figures = run_isolation(built, TRIALS, seed=11)
    assert figures.trials == TRIALS
    assert figures.nodes_checked > TRIALS  # most trials return several nodes
    assert figures.violations == []
    assert set(figures.by_mode) == {"collapsed", "traversal"}


def test_retrieval_through_the_bots_channel_and_thread_mapping_never_crosses(built):
    rng = random.Random(29)
    seen = {"channel": 0, "thread": 0, "forum post": 0}

    def via_discord(label: str) -> str:
        guild, channel = GUILDS[label], CHANNELS[label]
        where = rng.choice(list(seen))
        seen[where] += 1
        if where == "channel":
            target = text_channel(channel)
        else:  # a thread or a forum post: a Thread whose parent is the channel
            target = thread(rng.randrange(10**17, 10**18), channel)
        kb = kb_for_channel(guild, target)
        assert kb == bot_kb(label)
        return kb

    figures = run_isolation(built, TRIALS, seed=17, kb_of=via_discord)
    assert figures.trials == TRIALS and figures.violations == []
    assert min(seen.values()) > TRIALS // 5


def test_the_check_detects_a_node_from_another_knowledge_base(built, monkeypatch):
    """The isolation check can fail: make the store report the wrong owner for every node."""
    real = built.store.nodes_by_ids

    def lying(ids):
        nodes = real(ids)
        for node in nodes.values():
            node.kb_id = -1
        return nodes

    monkeypatch.setattr(built.store, "nodes_by_ids", lying)
    figures = run_isolation(built, 5, seed=3)
    assert figures.violations


ids = st.integers(min_value=1, max_value=2**63 - 1)


@settings(derandomize=True)
@given(guild=ids, other_guild=ids, channel=ids, other_channel=ids, thread_id=ids)
def test_mapping_properties(guild, other_guild, channel, other_channel, thread_id):
    home = kb_for_channel(guild, text_channel(channel))
    assert kb_for_channel(guild, thread(thread_id, channel)) == home  # threads use the parent's
    assert kb_for_channel(guild, forum(channel)) == home
    assert parse_kb_name(home) == (guild, channel)
    if other_channel != channel:
        assert kb_for_channel(guild, text_channel(other_channel)) != home
        assert kb_for_channel(guild, thread(thread_id, other_channel)) != home
    if other_guild != guild:
        assert kb_for_channel(other_guild, text_channel(channel)) != home
    assert kb_for_channel(None, text_channel(channel)) is None  # DMs have no knowledge base


def test_direct_messages_have_no_knowledge_base():
    dm = discord.DMChannel.__new__(discord.DMChannel)
    dm.id = 5
    assert kb_for_channel(111, dm) is None


def test_isolation_documents_share_one_file():
    shared = [dict(docs)["shared.txt"] for docs in isolation_documents().values()]
    assert len(set(shared)) == 1
