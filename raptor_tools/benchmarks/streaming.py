"""How soon a streamed LLM answer becomes visible, in Discord and in the terminal.

The test LLM server (tests/llm_server.py) on 127.0.0.1 streams every answer at 20 pieces (about a token
each) a second. For each surface the question is asked several times and this prints, per run:
question -> model's first token, question -> first visible text, and the difference (goal: 1.5 s at
most); for Discord also the edits per answer and the shortest gap between two edits (at most one a
second); and whether the final text and citations equal the non-streamed run's for the same output.

- Discord: the real bot (discord.py) against the fake Discord API of tests/bot/conftest.py; the time a
  text is visible is when the fake answered the call that put it in the message.
- Terminal: `raptor ask` run in-process with stdout on a pseudo-terminal; the time is when the answer's
  first bytes were read from the terminal.

Run: `python -m raptor_tools.benchmarks.streaming [--runs 3] [--rate 20]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pty
import re
import select
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_ROOT = Path(__file__).resolve().parents[2]  # the checkout
if str(_ROOT) not in sys.path:  # so `tests.*` imports when run as a script
    sys.path.insert(0, str(_ROOT))

from raptor_engine.config import Settings  # noqa: E402

ANSWER = (
    "The lighthouse at Skerrow Point was first lit in 1871 by its principal keeper, Thomas Reid [1]. He "
    "kept the lamp burning through the great gale of 1881, when the relief boat could not land for six "
    "weeks [2]. His daughter Agnes later became the first woman to keep the light on her own [1]."
)
DOCUMENT = (
    "# Skerrow Point\n\nThe lighthouse at Skerrow Point was first lit in 1871. Its principal keeper was "
    "Thomas Reid, who came from Aberdeen.\n\nIn the great gale of 1881 the relief boat could not land for "
    "six weeks, and Reid kept the lamp burning alone.\n\nAgnes Reid, his daughter, kept the light after him."
)
QUESTION = "Who kept the Skerrow Point light?"


def _answer_only(body: dict[str, Any]) -> str:
    return ANSWER if "numbered context blocks" in str(body) else "A summary of the keepers."


def _settings(base_url: str, data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, llm_base_url=base_url, llm_api_key="sk-bench", ask_cooldown_seconds=0)


# ---- Discord -------------------------------------------------------------------------------------------


async def discord_runs(runs: int, rate: float, data_dir: Path, embedder: Any) -> list[dict[str, Any]]:
    import discord
    import yarl
    from aiohttp import web

    from bot.client import RaptorBot
    from bot.kb import kb_name
    from bot.render import render_answer
    from raptor_engine.engine import Engine
    from tests.bot.conftest import CHAN_A, GUILD, FakeDiscord, Harness, custom_ids
    from tests.llm_server import FakeLLMServer

    fake = FakeDiscord()
    app = web.Application()
    app.router.add_route("*", "/api/v10/{tail:.*}", fake.handle)
    app.router.add_get("/gateway/", fake.gateway)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    fake.base = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    discord.http.Route.BASE = fake.base + "/api/v10"
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.base.replace("http", "ws") + "/gateway/")
    results = []
    async with FakeLLMServer(responder=_answer_only) as server:
        settings = _settings(server.base_url, data_dir)
        engine = Engine(settings, embedder=embedder)
        bot = RaptorBot(settings, engine=engine, warm=False)
        await bot.login("bench-token")
        h = Harness(bot, fake, engine)
        h.create_guild()
        kb = kb_name(GUILD, CHAN_A)
        await engine.ingest(kb, "skerrow.md", DOCUMENT.encode())
        plain = await engine.ask(kb, QUESTION)
        rendered = render_answer(plain)[0]
        expected = (rendered.content, rendered.embeds[0].description)  # the text, and the sources
        server.stream_at(rate)
        try:
            for _ in range(runs):
                server.reset()
                asked = time.monotonic()
                token = h.ask(QUESTION)
                await fake.wait_for(lambda t=token: any(custom_ids(m) for m in fake.replies(t)), 120)
                await h.finished(token)  # the thread opened and the turns stored
                results.append(_discord_figures(fake, server, token, asked, expected))
        finally:
            await bot.close()
            engine.close()
            await runner.cleanup()
    return results


def _discord_figures(
    fake: Any, server: Any, token: str, asked: float, expected: tuple[str, str]
) -> dict[str, Any]:
    edits = [
        c
        for c in fake.calls
        if c.method == "PATCH" and c.status == 200 and f"{token}/messages/@original" in c.path
    ]
    visible = next(c.at for c in edits if (c.body.get("content") or "").strip())
    first_token = next(r.first_token_at for r in server.requests if r.stream)
    gaps = [b.at - a.at for a, b in zip(edits, edits[1:], strict=False)]
    original = fake.original(token)
    final = (original["content"], original["embeds"][0]["description"])
    return {
        "first_token": first_token - asked,
        "visible": visible - asked,
        "edits": len(edits),
        "min_gap": min(gaps) if gaps else float("nan"),
        "same": final == expected,
    }


# ---- terminal ------------------------------------------------------------------------------------------


def terminal_runs(runs: int, rate: float, data_dir: Path, embedder: Any) -> list[dict[str, Any]]:
    from click.testing import CliRunner

    import raptor_engine.cli as cli_module
    from raptor_engine.engine import Engine
    from tests.llm_server import FakeLLMServer

    server = FakeLLMServer(responder=_answer_only)
    results = []
    with server.running_in_thread():
        os.environ.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-bench")
        cli_module.Engine = lambda settings: Engine(settings, embedder=embedder)  # type: ignore[assignment]
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "skerrow.md").write_text(DOCUMENT)
        base = ["--data-dir", str(data_dir)]
        CliRunner().invoke(cli_module.cli, [*base, "ingest", str(data_dir / "skerrow.md"), "--kb", "t"])
        piped = CliRunner().invoke(cli_module.cli, [*base, "ask", QUESTION, "--kb", "t"]).output
        server.stream_at(rate)
        for _ in range(runs):
            server.reset()
            results.append(_terminal_run(cli_module, [*base, "ask", QUESTION, "--kb", "t"], server, piped))
    return results


def _terminal_run(cli_module: Any, args: list[str], server: Any, piped: str) -> dict[str, Any]:
    master, slave = pty.openpty()
    out = os.fdopen(slave, "w", buffering=1, encoding="utf-8")
    real_stdout = sys.stdout
    sys.stdout = out
    done = threading.Event()

    def run() -> None:
        try:
            cli_module.cli.main(args, standalone_mode=False)
        finally:
            out.flush()
            done.set()

    screen = b""
    visible = None
    asked = time.monotonic()
    threading.Thread(target=run, daemon=True).start()
    try:
        while not (done.is_set() and not select.select([master], [], [], 0.1)[0]):
            if select.select([master], [], [], 0.05)[0]:
                screen += os.read(master, 65536)
                if visible is None and screen.strip():
                    visible = time.monotonic()
    finally:
        sys.stdout = real_stdout
        out.close()
        os.close(master)
    first_token = next(r.first_token_at for r in server.requests if r.stream)
    shown = screen.decode(errors="replace").replace("\r\n", "\n").split("\x1b[J")[-1]  # after any rewrite
    return {
        "first_token": first_token - asked,
        "visible": (visible or float("nan")) - asked,
        "same": re.sub(r"\x1b\[[0-9;]*m", "", shown) == piped,  # answer, sources and context lines
    }


# ---- report --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=float, default=20.0, help="pieces (about tokens) a second")
    args = parser.parse_args(argv)
    from raptor_engine.tree.embed import Embedder

    embedder = Embedder()
    embedder.embed(["warm up"])
    words = len(ANSWER.split())
    print(f"answer: {words} pieces streamed at {args.rate:g}/s (~{words / args.rate:.1f} s of writing)")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (shared machine)")
    with tempfile.TemporaryDirectory() as tmp:
        surfaces = {
            "Discord": lambda: asyncio.run(discord_runs(args.runs, args.rate, Path(tmp, "bot"), embedder)),
            "terminal": lambda: terminal_runs(args.runs, args.rate, Path(tmp, "cli"), embedder),
        }
        for name, measure in surfaces.items():
            for i, f in enumerate(measure(), start=1):
                line = (
                    f"{name:>8} run {i}: first token {f['first_token']:.2f} s, first visible "
                    f"{f['visible']:.2f} s (+{f['visible'] - f['first_token']:.2f} s)"
                )
                if "edits" in f:
                    line += f", {f['edits']} edits, shortest gap {f['min_gap']:.2f} s"
                print(line + f", final text and citations as non-streamed: {'yes' if f['same'] else 'NO'}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
