"""`python -m bot`'s run(): connects through the fake gateway, syncs when asked, stops on SIGTERM."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal

from bot.__main__ import main, run
from raptor_engine.engine import Engine
from tests.bot.conftest import GUILD

MESSAGE_CONTENT = 1 << 15


async def test_sigterm_stops_the_bot_gracefully_and_closes_the_engine(
    fake_api, bot_settings, embedder, monkeypatch
):
    bot_settings.discord_dev_guild = str(GUILD)
    engine = Engine(bot_settings, embedder=embedder)
    closed: list[bool] = []
    close = engine.close
    monkeypatch.setattr(engine, "close", lambda: (closed.append(True), close())[1])
    running = asyncio.create_task(run(bot_settings, True, False, engine=engine, warm=False))
    await fake_api.wait_for(lambda: fake_api.identify is not None, what="the bot to identify")
    assert {c["name"] for c in fake_api.synced[f"guild-{GUILD}"]} == {"ask", "kb", "Add to knowledge base"}
    assert not fake_api.identify["intents"] & MESSAGE_CONTENT  # the privileged intent is opt-in
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(running, 60) == 0
    assert closed == [True]
    await fake_api.wait_for(lambda: fake_api.gateway_closed is not None, what="the gateway to close")
    assert fake_api.gateway_closed in (1000, 4000)  # the client closed the connection itself


async def connect_then_interrupt(fake_api, bot_settings, embedder, sync: bool) -> int:
    """run() until the bot has identified to the gateway, then Ctrl-C; its exit code."""
    engine = Engine(bot_settings, embedder=embedder)
    running = asyncio.create_task(run(bot_settings, sync, False, engine=engine, warm=False))
    await fake_api.wait_for(lambda: fake_api.identify is not None, what="the bot to identify")
    os.kill(os.getpid(), signal.SIGINT)
    return await asyncio.wait_for(running, 60)


async def test_without_sync_flag_nothing_is_synced(fake_api, bot_settings, embedder):
    assert await connect_then_interrupt(fake_api, bot_settings, embedder, sync=False) == 0
    assert fake_api.synced == {}


async def test_message_content_not_enabled_in_the_portal_is_a_clear_exit(
    fake_api, bot_settings, embedder, caplog
):
    fake_api.refuse_privileged = True
    engine = Engine(bot_settings, embedder=embedder)
    code = await asyncio.wait_for(run(bot_settings, False, True, engine=engine, warm=False), 60)
    assert code == 2
    assert fake_api.identify["intents"] & MESSAGE_CONTENT
    assert "Message Content intent is off in the developer portal" in caplog.text


def test_missing_token_is_a_clear_exit(monkeypatch, tmp_path, caplog):
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv("DISCORD_TOKEN", "")
    assert main([]) == 2
    assert "DISCORD_TOKEN is not set" in caplog.text


async def test_discord_out_of_reach_is_a_clear_exit(bot_settings, embedder, monkeypatch, caplog):
    """No traceback when the network is down: one line that says what to check, and exit code 3."""
    import socket

    import discord

    with socket.socket() as spare:  # a port on this machine that nothing listens on
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    monkeypatch.setattr(discord.http.Route, "BASE", f"http://127.0.0.1:{port}/api/v10")
    engine = Engine(bot_settings, embedder=embedder)
    code = await asyncio.wait_for(run(bot_settings, False, False, engine=engine, warm=False), 60)
    assert code == 3
    assert "Could not reach Discord" in caplog.text and "Traceback" not in caplog.text


async def test_a_gateway_refusal_is_a_clear_exit(fake_api, bot_settings, embedder, caplog):
    """Discord closes the connection for good (4010: another process already runs this shard with the
    token, or the shard settings do not fit): one line saying what to check, exit code 2, no traceback."""
    fake_api.shards[0] = (None, itertools.count())  # shard 0 is taken: its IDENTIFY is closed with 4010
    engine = Engine(bot_settings, embedder=embedder)
    code = await asyncio.wait_for(run(bot_settings, False, False, engine=engine, warm=False), 60)
    assert code == 2
    assert "Discord closed the gateway connection (4010, invalid shard)" in caplog.text
    assert "Traceback" not in caplog.text


async def test_a_refused_command_sync_is_one_line_and_the_bot_runs_on(fake_api, bot_settings, embedder, caplog):
    """`--sync` where Discord refuses the command list (the bot was invited without the
    applications.commands scope, or is not in DISCORD_DEV_GUILD): one line saying what to check, and the
    bot still connects with the commands Discord already has; no traceback."""
    bot_settings.discord_dev_guild = str(GUILD)
    fake_api.forbid("PUT", r"commands$")
    assert await connect_then_interrupt(fake_api, bot_settings, embedder, sync=True) == 0
    assert fake_api.synced == {}
    assert f"Discord refused to sync the slash commands to server {GUILD} (403" in caplog.text
    assert "Traceback" not in caplog.text


def test_a_second_bot_on_the_same_data_directory_stops_with_one_line(monkeypatch, tmp_path, caplog):
    """Two bots on one data directory would each resume the other's running uploads (building them twice):
    while one holds the directory, another stops at start with one line naming the holder, exit code 2."""
    import fcntl

    data = tmp_path / "data"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DISCORD_TOKEN", "fake-token")
    monkeypatch.setenv("RAPTOR_DATA_DIR", str(data))
    data.mkdir()
    with (data / "bot.lock").open("a+") as held:  # the first bot, as main() takes it
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242")
        held.flush()
        assert main([]) == 2
    assert f"Another bot process (pid 4242) is running on the data directory {data}" in caplog.text


def test_the_data_directory_lock_is_free_again_once_a_bot_ends(tmp_path):
    from bot.__main__ import DataDirInUse, data_dir_lock

    with data_dir_lock(tmp_path):
        try:
            with data_dir_lock(tmp_path):
                raise AssertionError("two holders at once")
        except DataDirInUse as holder:
            assert str(holder) == str(os.getpid())
    with data_dir_lock(tmp_path):  # released when the first ended
        pass
