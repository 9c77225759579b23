"""A removal killed between the engine's commit and the bot's redaction (SIGKILL to a real process) is
finished by the next start of the bot, before it connects (`RaptorBot.finish_removals`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from bot.state import REMOVED_DOCUMENT, REMOVED_SOURCE, BotState
from raptor_engine.engine import Engine
from raptor_engine.types import ContextNode
from tests.bot.conftest import GUILD
from tests.bot.test_bot_flows import KB_A

ROOT = Path(__file__).resolve().parents[2]
SECRET = "zqxwarden3391"
LOCKERS = f"# Lockers\n\nThe locker combination is {SECRET}, kept by the warden of the east wing.\n"
KILLED = """
import asyncio, os, signal, sys
from pathlib import Path
from bot.state import BotState
from raptor_engine.engine import Engine
from tests.unhurried import unhurried_settings

async def main():
    engine = Engine(unhurried_settings(data_dir=Path(sys.argv[1]), build_workers=0))
    state = BotState(engine.spaces)
    await state.ready_for_removal(sys.argv[2])
    await engine.forget(sys.argv[2], "lockers.md")
    os.kill(os.getpid(), signal.SIGKILL)  # before the bot's redaction (`finish_removals`)

asyncio.run(main())
"""


async def test_a_removal_killed_before_its_redaction_is_finished_when_the_bot_starts(
    make_harness, bot_settings, embedder
):
    engine = Engine(bot_settings, embedder=embedder)
    await engine.ingest(KB_A, "lockers.md", LOCKERS.encode())
    with engine.in_space(KB_A):
        [leaf] = [n for n in engine.store.nodes_of_kb(engine.store.kb_id(KB_A)) if n.kind == "leaf"]
    state = BotState(engine.spaces)
    node = ContextNode(leaf.id, 0, "lockers.md", 0.9, leaf.text, 20, 1)
    answer_id = await state.save_answer(KB_A, "What is the locker combination?", [node], 20, 2000)
    state.close()
    engine.close()

    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    script = textwrap.dedent(KILLED)
    done = subprocess.run(
        [sys.executable, "-c", script, str(bot_settings.data_dir), KB_A],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr

    h = await make_harness(message_content=True)  # setup_hook finishes it before connecting
    assert h.engine.documents(KB_A) == []
    saved = await h.bot.services.state.answer(GUILD, answer_id)
    assert [(n.text, n.document) for n in saved.nodes] == [(REMOVED_DOCUMENT, REMOVED_SOURCE)]
    with h.engine.in_space(KB_A):
        pending = h.engine.store.db.execute("SELECT pending FROM bot_removals").fetchall()
    assert pending and all(p[0] is None for p in pending)
    path, _ = h.engine.spaces.files_of(KB_A)
    assert SECRET.encode() not in path.read_bytes()  # scrubbed from the file, not only the rows
