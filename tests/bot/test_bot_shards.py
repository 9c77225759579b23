"""Two real `python -m bot` processes, shards [0] and [1] of 2, against the fake Discord.

The fake serves GET /gateway/bot and one gateway connection per shard, and delivers each guild's events
on the connection of the shard that owns it ((guild_id >> 22) % 2), as Discord does. Each process has its
own data directory, and both build through one shared Dask scheduler (`dask scheduler` and a
`raptor worker`, separate processes); each guild uploads a document and asks a question, and must be
answered by its own process from its own document only. Both processes start at once in one identify bucket, so one of them
must wait out Discord's 5 s between IDENTIFYs (the lock file in the shared cache dir).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from distributed import Client

from bot.kb import kb_name
from raptor_engine.engine import Engine
from raptor_engine.query.support import NOT_ANSWERED_SOURCES
from raptor_engine.workers import PROGRESS_TOPIC
from tests.bot.bot_samples import LIGHTHOUSE, SOURDOUGH
from tests.bot.conftest import ALICE, guild_payload, snowflake, text_of
from tests.dask_processes import dask_processes
from tests.unhurried import UNHURRIED_ENV, unhurried_settings

ROOT = Path(__file__).resolve().parents[2]
# (guild id, its channels): guild >> 22 is 8 (shard 0 of 2) and 9 (shard 1 of 2)
GUILDS = {0: ((8 << 22) + 5, (510, 511, 512)), 1: ((9 << 22) + 5, (520, 521, 522))}
START_SECONDS = 300.0  # loading the model and UMAP's compiled code on a busy machine


def bot_env(fake_api, data_dir: Path, scheduler: str) -> dict[str, str]:
    """The environment of one bot process: the fake Discord, its own data directory, no cooldown; none
    of the developer's own settings (an LLM key would reach the network)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAPTOR_", "OPENAI_", "DISCORD_"))}
    env.update(
        DISCORD_TOKEN="fake-token",
        RAPTOR_DISCORD_API_BASE=fake_api.base,
        RAPTOR_DISCORD_GATEWAY_URL=fake_api.base.replace("http://", "ws://") + "/gateway/",
        RAPTOR_DATA_DIR=str(data_dir),
        RAPTOR_ASK_COOLDOWN_SECONDS="0",
        RAPTOR_SHARD_COUNT="2",
        RAPTOR_DASK_SCHEDULER=scheduler,
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(ROOT),
    )
    env.update(UNHURRIED_ENV)  # no deadline the test does not set itself (tests/unhurried.py)
    return env


def start_bot(fake_api, shard: int, tmp_path: Path, scheduler: str) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / f"bot-{shard}.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "--shards", str(shard)],
        cwd=tmp_path,  # no .env of the checkout is read
        env=bot_env(fake_api, tmp_path / f"data-{shard}", scheduler),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    return process, log


async def slash(fake_api, shard: int, name: str, options: list[dict], resolved: dict | None = None) -> str:
    """A slash command in the shard's guild's first channel, sent over the gateway; its token."""
    guild, channels = GUILDS[shard]
    data: dict = {"id": str(snowflake()), "name": name, "type": 1, "options": options}
    if resolved:
        data["resolved"] = resolved
    channel = {"id": str(channels[0]), "type": 0, "guild_id": str(guild), "name": "docs-a"}
    token, payload = fake_api.interaction(2, data, channel, ALICE, guild=guild)
    await fake_api.dispatch(guild, "INTERACTION_CREATE", payload)
    return token


async def add_document(fake_api, shard: int, name: str, text: str) -> None:
    attachment = fake_api.add_file(name, text.encode())
    options = [
        {"name": "add", "type": 1, "options": [{"name": "file", "type": 11, "value": attachment["id"]}]}
    ]
    token = await slash(fake_api, shard, "kb", options, {"attachments": {attachment["id"]: attachment}})
    replies = await fake_api.replies_done(
        token, lambda r: "added:" in text_of(r[0]), what=f"shard {shard}'s build"
    )
    assert f"✅ **{name}** added:" in replies[0]["content"]


async def ask(fake_api, shard: int, question: str) -> str:
    """A private /ask; the text of the answer and its Sources (the closest passages, for a question
    the documents do not answer)."""
    options = [
        {"name": "question", "type": 3, "value": question},
        {"name": "private", "type": 5, "value": True},
    ]
    token = await slash(fake_api, shard, "ask", options)
    replies = await fake_api.replies_done(
        token, lambda r: any(title in "".join(map(text_of, r)) for title in ("Sources", NOT_ANSWERED_SOURCES))
    )
    return "\n".join(text_of(m) for m in replies)


def knowledge_bases(data_dir: Path, embedder) -> list[str]:
    engine = Engine(unhurried_settings(data_dir=data_dir), embedder=embedder)
    try:
        return engine.knowledge_bases()
    finally:
        engine.close()


async def built_on(scheduler: str) -> set[str]:
    """The documents whose builds reported progress through the scheduler (the workers' Dask events)."""
    async with Client(scheduler, asynchronous=True) as client:
        events = await client.get_events(PROGRESS_TOPIC)
    return {msg.get("message", "") for _, msg in events if msg.get("stage") == "load"}


@pytest.fixture
def scheduler(tmp_path):
    """One Dask scheduler and one build worker, shared by both bot processes."""
    dask_dir = tmp_path / "dask"
    dask_dir.mkdir()
    with dask_processes(dask_dir, workers=1) as address:
        yield address


async def test_two_processes_each_serve_only_the_guilds_of_their_shard(fake_api, tmp_path, embedder, scheduler):
    for guild, channels in GUILDS.values():
        fake_api.guilds[guild] = guild_payload(guild, channels)
    bots = [start_bot(fake_api, shard, tmp_path, scheduler) for shard in (0, 1)]
    try:
        for process, log in bots:
            await fake_api.wait_for(
                lambda p=process, lg=log: p.poll() is not None or "connected as" in lg.read_text(),
                timeout=START_SECONDS,
                what="both bots to connect",
            )
            assert process.poll() is None, log.read_text()
        assert sorted(fake_api.shards) == [0, 1] and fake_api.shard_count == 2
        assert not fake_api.identify_too_fast, fake_api.identify_too_fast  # one bucket: 5 s apart

        await add_document(fake_api, 0, "kestrel.md", LIGHTHOUSE)
        await add_document(fake_api, 1, "bread.md", SOURDOUGH)
        lighthouse = await ask(fake_api, 0, "How is the lens of the lighthouse cleaned?")
        bread = await ask(fake_api, 1, "How often is the starter fed?")
        assert "kestrel.md" in lighthouse and "bread.md" not in lighthouse
        assert "bread.md" in bread and "kestrel.md" not in bread
        across = await ask(fake_api, 1, "How is the lens of the lighthouse cleaned?")
        assert "kestrel.md" not in across  # guild 1's process knows nothing of guild 0's documents
        assert {"kestrel.md", "bread.md"} <= await built_on(scheduler)  # both built on the shared cluster
    finally:
        for process, _ in bots:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        # waited for on the event loop: the fake Discord serving their goodbyes runs on it
        await fake_api.wait_for(lambda: all(p.poll() is not None for p, _ in bots), 120, "both bots to stop")
        codes = [process.returncode for process, _ in bots]
    logs = [log.read_text() for _, log in bots]
    assert codes == [0, 0], logs
    for shard, text in enumerate(logs):
        guild, channels = GUILDS[shard]
        other = GUILDS[1 - shard][1][0]
        assert f"gateway: shard {shard} of 2" in text
        assert f"in {channels[0]} done" in text and f"in {other} done" not in text
        assert "identifying (bucket 0 of 1" in text
        assert f"builds run on {scheduler}" in text
        kbs = knowledge_bases(tmp_path / f"data-{shard}", embedder)
        assert kbs == [kb_name(guild, channels[0])]
