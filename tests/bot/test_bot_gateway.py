"""The sharded gateway in one process: shard settings, Discord's recommendation, the identify rate."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from bot.__main__ import main, run
from bot.gateway import ShardPlan, claim_identify_slot, shard_plan
from raptor_engine.config import Settings
from raptor_engine.engine import Engine
from tests.bot.conftest import GUILD, guild_payload

# A guild on shard 1 of 2: discord.py and Discord route a guild to (guild_id >> 22) % shard_count.
OTHER_GUILD = (1 << 22) + 77
OTHER_CHANNELS = (410, 411, 412)


@pytest.mark.parametrize(
    ("count", "shards", "plan", "logged"),
    [
        (0, "", ShardPlan(None, None), "Discord's recommended shard count, all shards in this process"),
        (4, "", ShardPlan(4, None), "shards 0-3 of 4"),
        (4, "1-2", ShardPlan(4, [1, 2]), "shards 1-2 of 4"),
        (4, "3", ShardPlan(4, [3]), "shard 3 of 4"),
    ],
)
def test_shard_settings_become_discord_py_shard_ids(count, shards, plan, logged):
    assert shard_plan(Settings(shard_count=count, shards=shards)) == plan
    assert plan.describe() == logged


@pytest.mark.parametrize(
    ("count", "shards", "message"),
    [
        (0, "0-1", "RAPTOR_SHARDS (--shards) needs RAPTOR_SHARD_COUNT (--shard-count) as well."),
        (2, "1-2", "RAPTOR_SHARDS (--shards) 1-2 is not a range within shards 0-1."),
        (2, "1-0", "RAPTOR_SHARDS (--shards) 1-0 is not a range within shards 0-1."),
        (2, "one", "RAPTOR_SHARDS (--shards) must be a shard id or a range like 0-3, not 'one'."),
        (-1, "", "RAPTOR_SHARD_COUNT (--shard-count) must be 0 or more, not -1."),
    ],
)
def test_wrong_shard_settings_are_one_sentence(count, shards, message):
    with pytest.raises(ValueError) as raised:
        shard_plan(Settings(shard_count=count, shards=shards))
    assert str(raised.value) == message


def test_python_m_bot_refuses_a_shard_range_outside_the_count(monkeypatch, tmp_path, caplog):
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv("DISCORD_TOKEN", "fake-token")
    monkeypatch.setenv("RAPTOR_SHARD_COUNT", "2")  # the flag below overrides the environment
    assert main(["--shard-count", "3", "--shards", "2-3"]) == 2
    assert "RAPTOR_SHARDS (--shards) 2-3 is not a range within shards 0-2." in caplog.text


def test_identify_slot_waits_for_the_last_identify_recorded_in_the_lock_file(tmp_path):
    lock = tmp_path / "identify" / "bucket-0.lock"
    assert claim_identify_slot(lock, 0.3) == 0.0  # nobody identified yet
    assert 0.0 < claim_identify_slot(lock, 0.3) <= 0.3  # the slot just taken must age first
    lock.write_text("garbage")  # a damaged file is a slot taken long ago, not a crash
    assert claim_identify_slot(lock, 0.3) == 0.0
    lock.write_text(str(10**12))  # a time in the future (a clock set back) waits one interval at most
    assert claim_identify_slot(lock, 0.3) == 0.3


async def start_and_stop(fake_api, settings, embedder, shards: int) -> list[str]:
    """Run the bot until `shards` shards have identified and it has seen every guild; the log lines."""
    engine = Engine(settings, embedder=embedder)
    running = asyncio.create_task(run(settings, False, False, engine=engine, warm=False))
    await fake_api.wait_for(lambda: len(fake_api.shards) == shards, what=f"{shards} shards to identify")
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(running, 60) == 0
    return [identify_shard for _, identify_shard in fake_api.identifies]


async def test_auto_sharding_runs_the_shards_discord_recommends(fake_api, bot_settings, embedder, caplog):
    """`python -m bot` with no shard settings: GET /gateway/bot says 2 shards, max_concurrency 2 (two
    buckets), so both identify at once and each gets the guilds it owns."""
    fake_api.recommended_shards = 2
    fake_api.max_concurrency = 2
    fake_api.guilds[OTHER_GUILD] = guild_payload(OTHER_GUILD, OTHER_CHANNELS)
    caplog.set_level("INFO", logger="bot")
    identified = await start_and_stop(fake_api, bot_settings, embedder, 2)
    assert sorted(identified) == [0, 1]
    assert not fake_api.identify_too_fast
    assert "max_concurrency 2" in caplog.text
    assert "shard 1 identifying (bucket 1 of 2; waited 0.0 s" in caplog.text


async def test_one_bucket_identifies_one_shard_per_5_seconds(fake_api, bot_settings, embedder, caplog):
    """Two shards of one bucket (max_concurrency 1): the second IDENTIFY waits out Discord's 5 s."""
    bot_settings.shard_count = 2
    caplog.set_level("INFO", logger="bot")
    identified = await start_and_stop(fake_api, bot_settings, embedder, 2)
    assert identified == [0, 1]
    assert not fake_api.identify_too_fast, fake_api.identify_too_fast
    assert "shard 1 identifying (bucket 0 of 1; waited" in caplog.text


async def test_a_process_runs_only_its_range_and_sees_only_its_guilds(fake_api, bot_settings, embedder):
    bot_settings.shard_count, bot_settings.shards = 2, "1"
    fake_api.guilds[OTHER_GUILD] = guild_payload(OTHER_GUILD, OTHER_CHANNELS)
    engine = Engine(bot_settings, embedder=embedder)
    from bot.client import RaptorBot

    bot = RaptorBot(bot_settings, engine=engine, warm=False)
    running = asyncio.create_task(bot.start("fake-token"))
    try:
        await fake_api.wait_for(lambda: bot.get_guild(OTHER_GUILD) is not None, what="shard 1's guild")
        assert fake_api.identify["shard"] == [1, 2]
        assert sorted(fake_api.shards) == [1]
        assert bot.get_guild(GUILD) is None  # guild 300 lives on shard 0, another process's
        assert bot.get_guild(OTHER_GUILD).shard_id == 1
    finally:
        await bot.close()
        await asyncio.wait_for(running, 60)
