"""A driver of the real bot process: `python -m bot` started against the tests' fake Discord API
(tests/bot/conftest.py's FakeDiscord), and members' actions delivered over its gateway as Discord would.

`RealBot` is a `Harness` whose events go over the websocket instead of into an in-process client, so a
scenario reads as the in-process tests do (`kb_add`, `ask`, `say`, `user_message`, `edit`, `delete`,
`click`, ...) while the bot runs as people run it: its own process, its `.env`-less environment, its
embedded build cluster, its data directory, stopped with SIGTERM or killed and started again on the
same data. What the bot sent is read from the fake API (`fake.original`, `fake.channel_messages`, ...).

    bot = RealBot(fake_api, tmp_path)
    await bot.start()
    token = bot.kb_add(fake_api.add_file("notes.md", b"..."))
    ...
    await bot.restart()
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.bot.conftest import (
    ALICE,
    BOT_ID,
    FORUM,
    GUILD,
    FakeDiscord,
    Harness,
    thread_payload,
)
from tests.bot.test_bot_shards import START_SECONDS, bot_env


def start_bot(fake_api: FakeDiscord, data_dir: Path, log: Path, extra: dict[str, str] | None = None) -> subprocess.Popen:
    """`python -m bot` with its default embedded LocalCluster (one process worker), `extra` its
    further settings."""
    env = bot_env(fake_api, data_dir, "")
    for key in ("RAPTOR_SHARD_COUNT", "RAPTOR_DASK_SCHEDULER"):
        del env[key]
    env.update(extra or {})
    return subprocess.Popen(
        [sys.executable, "-m", "bot"], cwd=log.parent, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )


async def connected(fake_api: FakeDiscord, process: subprocess.Popen, log: Path) -> None:
    """Wait until the process says it is connected (or fail with its log's tail when it exits)."""
    await fake_api.wait_for(
        lambda: process.poll() is not None or "connected as" in log.read_text(), START_SECONDS, "the bot to connect"
    )
    assert process.poll() is None, log.read_text()[-3000:]


class Gateway:
    """Stands where a Harness has discord.py's connection state: each `parse_<event>(payload)` is sent, in
    order, as the gateway event <EVENT> to the bot process."""

    def __init__(self, fake: FakeDiscord):
        self.fake = fake
        self.queue: asyncio.Queue[tuple[str, dict]] = asyncio.Queue()
        self.pump = asyncio.create_task(self._send())

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("parse_"):
            raise AttributeError(name)
        event = name.removeprefix("parse_").upper()
        return lambda payload: self.queue.put_nowait((event, payload))

    async def _send(self) -> None:
        """Send each event once a connection is up; one the closing connection dropped is sent again on
        the next (the bot was restarting)."""
        while True:
            event, payload = await self.queue.get()
            while True:
                await self.fake.wait_for(lambda: self.fake.shards, START_SECONDS, "a gateway connection")
                try:
                    await self.fake.dispatch(int(payload.get("guild_id") or GUILD), event, payload)
                    break
                except (ConnectionError, RuntimeError, KeyError):
                    await asyncio.sleep(0.5)
            self.queue.task_done()

    async def sent(self) -> None:
        """Every event queued so far has been sent."""
        await self.queue.join()


class RealBot(Harness):
    """The bot as a process, driven over the fake gateway; `env`: settings beside the test defaults
    (`DISCORD_MESSAGE_CONTENT=1` is set unless `message_content` is False)."""

    def __init__(
        self, fake: FakeDiscord, folder: Path, *, message_content: bool = True, env: dict[str, str] | None = None
    ):
        self.fake = fake
        self.folder = folder
        self.data_dir = folder / "data"
        self.env = {"DISCORD_MESSAGE_CONTENT": "1" if message_content else "0", **(env or {})}
        self.state = Gateway(fake)
        self.bot = SimpleNamespace(intents=SimpleNamespace(message_content=message_content))
        self.engine = None  # the process's own: open an Engine on `data_dir` once it has stopped
        self.threads: dict[int, dict] = {}  # threads the bot opened, or a member did
        self.opened: list[int] = []  # the threads the bot opened, in order
        self.process: subprocess.Popen | None = None
        self.runs = 0
        fake.on_thread_created = self._thread_created

    @property
    def log(self) -> Path:
        return self.folder / f"bot-{self.runs}.log"

    async def start(self) -> None:
        self.runs += 1
        self.process = start_bot(self.fake, self.data_dir, self.log, self.env)
        await connected(self.fake, self.process, self.log)

    async def stop(self, sig: int = signal.SIGTERM, timeout: float = 180.0) -> int:
        """Stop the process (SIGTERM: gracefully; SIGKILL: at once); its exit status."""
        process = self.process
        if process is None or process.poll() is not None:
            return process.returncode if process else 0
        process.send_signal(sig)
        await self.fake.wait_for(lambda: process.poll() is not None, timeout, "the bot to stop")
        await self.fake.wait_for(lambda: not self.fake.shards, 30, "its gateway connection to close")
        return process.returncode

    async def restart(self, sig: int = signal.SIGTERM) -> None:
        assert await self.stop(sig) in (0, -signal.SIGKILL), self.log.read_text()[-3000:]
        await self.start()

    def close(self) -> None:
        """Kill what is left (a test's `finally`)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        self.state.pump.cancel()

    # ------------------------------------------------------------------ Harness, over the gateway

    def create_guild(self) -> None:
        """The gateway sends GUILD_CREATE itself when the bot connects."""

    def _thread_created(self, payload: dict) -> None:
        self.threads[int(payload["id"])] = payload
        self.opened.append(int(payload["id"]))
        self._known_to_guild(payload)
        self.state.parse_thread_create(payload)

    def _known_to_guild(self, thread: dict) -> None:
        """An active thread is in the guild's GUILD_CREATE from now on, as Discord sends it to a bot that
        connects again: a restarted bot knows the threads it opened."""
        guild = self.fake.guilds[int(thread.get("guild_id") or GUILD)]
        guild["threads"] = [t for t in guild.get("threads", []) if t["id"] != thread["id"]] + [thread]

    def open_thread(self, parent: int, name: str, *, owner: int = ALICE, archived: bool = False) -> int:
        tid = super().open_thread(parent, name, owner=owner, archived=archived)
        self.threads[tid] = thread_payload(tid, parent, name, owner=owner)
        if not archived:
            self._known_to_guild(self.threads[tid])
        return tid

    def _channel_payload(self, channel_id: int) -> dict:
        if channel_id in self.threads:
            thread = self.threads[channel_id]
            return thread_payload(channel_id, int(thread["parent_id"]), thread["name"], int(thread["owner_id"]))
        ctype = 15 if channel_id == FORUM else 0
        return {"id": str(channel_id), "type": ctype, "guild_id": str(GUILD), "name": "chan"}

    async def finished(self, token: str) -> None:
        """The command's response has its final text (no process-internal signal is visible here)."""
        await self.fake.replies_done(token)

    async def answer_thread(self, token: str) -> int:
        """The thread the bot opened on the answer of the interaction `token` (waits for it)."""
        answer_id = (await self.fake.replies_done(token))[0]["id"]

        def found() -> int | None:
            opened = [c for c in self.fake.calls if c.method == "POST" and c.path.endswith("/threads")]
            at = next((i for i, c in enumerate(opened) if f"messages/{answer_id}/threads" in c.path), None)
            return self.opened[at] if at is not None and at < len(self.opened) else None

        return await self.fake.wait_for(found, 120, "the answer's thread")

    def bot_messages(self, channel_id: int) -> list[dict]:
        return [m for m in self.fake.channel_messages(channel_id) if int(m["author"]["id"]) == BOT_ID]
