"""`python -m bot [--sync] [--shard-count N --shards A-B]`: run the Discord bot with settings from the
environment and `.env`. Without shard options it runs every shard Discord recommends; with them, one
process per range of shards (docs/SCALING.md).

--sync pushes the slash commands to Discord (instantly to DISCORD_DEV_GUILD when set, else globally);
without it the commands are not synced, so restarts do not hit Discord's command rate limits.
SIGTERM/SIGINT stop gracefully: running builds finish (their writes are transactional anyway), then the
database is closed. A second signal stops at once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import discord

from raptor_engine.config import Settings
from raptor_engine.engine import Engine
from raptor_engine.errors import RaptorError
from raptor_engine.storage.spaces import keep_private

from .client import RaptorBot
from .gateway import point_at_endpoints, shard_plan

log = logging.getLogger("bot")


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bot", description="Run the RAPTOR Discord bot.")
    parser.add_argument("--sync", action="store_true", help="sync slash commands with Discord on start")
    parser.add_argument(
        "--log-level", default=os.environ.get("RAPTOR_LOG_LEVEL", "INFO"), help="logging level"
    )
    parser.add_argument(
        "--shard-count", type=int, metavar="N", help="total shards of the bot (RAPTOR_SHARD_COUNT)"
    )
    parser.add_argument("--shards", metavar="A-B", help="this process's shards, e.g. 0-3 (RAPTOR_SHARDS)")
    return parser.parse_args(argv)


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("discord").setLevel(logging.WARNING if level.upper() != "DEBUG" else logging.DEBUG)


# Close codes Discord ends a session with for good (discord.py does not reconnect), and what to check.
GATEWAY_REFUSALS = {
    4010: (
        "invalid shard",
        "another process may already run this shard with this token, or RAPTOR_SHARD_COUNT and "
        "RAPTOR_SHARDS do not fit Discord's count; stop the other process or fix the shard settings",
    ),
    4011: ("sharding required", "set RAPTOR_SHARD_COUNT (docs/SCALING.md)"),
    4012: ("invalid API version", "update discord.py to the version pyproject.toml names"),
    4013: ("invalid intents", "update discord.py to the version pyproject.toml names"),
}


def gateway_refusal(code: int) -> str:
    """One line for a gateway session Discord closed for good: the code, its meaning and what to check."""
    meaning, advice = GATEWAY_REFUSALS.get(code, ("refused", "check the bot's log and Discord's status page"))
    return f"Discord closed the gateway connection ({code}, {meaning}); {advice}, then start again."


LOCK_FILE = "bot.lock"  # in the data directory: held by the one bot process that uses it


class DataDirInUse(Exception):
    """Another bot process holds the data directory's lock."""


@contextlib.contextmanager
def data_dir_lock(data_dir: Path) -> Iterator[None]:
    """One bot per data directory: two would each resume the other's running uploads (building them
    twice) and reconcile the same messages. The lock is the kernel's, so a killed bot leaves none behind.
    A directory that cannot be written is not refused here: opening the engine says why in one line."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no guard
        yield
        return
    try:
        keep_private(data_dir)  # as the engine makes and checks it, before anything is opened in it
        handle = (data_dir / LOCK_FILE).open("a+")
    except OSError:  # read-only or full: the engine's own check gives the sentence
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise DataDirInUse(handle.read().strip() or "?") from None
        with contextlib.suppress(OSError):  # the pid is for the message only
            handle.truncate(0)
            handle.write(str(os.getpid()))
            handle.flush()
        yield


async def run(
    settings: Settings, sync: bool, message_content: bool, *, engine: Engine | None = None, warm: bool = True
) -> int:
    """Run until stopped; 0 after a graceful stop, 2 when Discord refuses the token, the intents or the
    session (a shard another process runs), or the data directory cannot be opened (read-only, full),
    3 when Discord cannot be reached at all."""
    bot = RaptorBot(settings, engine=engine, message_content=message_content, sync=sync, warm=warm)
    loop = asyncio.get_running_loop()
    stops: list[asyncio.Task[None]] = []

    def on_signal(signame: str) -> None:
        log.info("%s received; stopping", signame)
        stops.append(loop.create_task(bot.shutdown()))

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig.name)
    try:
        async with bot:
            await bot.start(settings.discord_token)
    except RaptorError as error:  # the data directory cannot be opened (read-only, full): one line
        log.error("%s", error)
        return 2
    except discord.LoginFailure:
        log.error("Discord rejected DISCORD_TOKEN; copy the bot token again from the developer portal.")
        return 2
    except discord.PrivilegedIntentsRequired:
        log.error(
            "DISCORD_MESSAGE_CONTENT=1 but the Message Content intent is off in the developer portal; "
            "turn it on there (Bot → Privileged Gateway Intents) or unset DISCORD_MESSAGE_CONTENT."
        )
        return 2
    except discord.ConnectionClosed as error:  # the gateway refused this session for good
        log.error("%s", gateway_refusal(error.code))
        return 2
    except (aiohttp.ClientConnectionError, OSError) as error:
        log.error("Could not reach Discord (%s); check this machine's network connection and start again.", error)
        log.debug("connection failure", exc_info=True)
        return 3
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        for task in stops:
            await task
        if not bot.is_closed():
            await bot.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.log_level)
    try:
        settings = Settings.from_env(shard_count=args.shard_count, shards=args.shards)
        log.info("gateway: %s", shard_plan(settings).describe())
    except ValueError as error:
        log.error("%s", error)
        return 2
    if not settings.discord_token:
        log.error(
            "DISCORD_TOKEN is not set; put the bot token in .env (see docs/BOT.md)."
        )
        return 2
    log.info("settings: %s", settings.redacted())
    point_at_endpoints(settings)
    try:
        with data_dir_lock(Path(settings.data_dir)):
            return asyncio.run(run(settings, args.sync, env_flag("DISCORD_MESSAGE_CONTENT")))
    except RaptorError as error:  # a data directory another user could change (keep_private): one line
        log.error("%s", error)
        return 2
    except DataDirInUse as holder:
        log.error(
            "Another bot process (pid %s) is running on the data directory %s; run one bot per data "
            "directory (docs/SCALING.md) and stop the other one first.",
            holder,
            settings.data_dir,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
