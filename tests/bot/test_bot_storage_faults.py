"""The data directory failing under the bot: read-only at start, a full disk, a server's directory
deleted while the bot runs. Each is said in one sentence, and what the user is told is what is kept.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.bot.test_bot_shards import bot_env
from tests.storage_faults import read_only_view

ROOT = Path(__file__).resolve().parents[2]


async def test_a_read_only_data_directory_stops_the_bot_with_one_line(fake_api, tmp_path):
    """A real `python -m bot` on a read-only data directory (a read-only bind mount, which stops root
    too): exit status 2 and one line saying so, no traceback."""
    data = tmp_path / "data"
    data.mkdir()
    with read_only_view(data, tmp_path / "ro") as view:
        env = bot_env(fake_api, view, "")
        for key in ("RAPTOR_SHARD_COUNT", "RAPTOR_DASK_SCHEDULER"):
            del env[key]
        env["RAPTOR_BUILD_WORKERS"] = "0"
        bot = subprocess.Popen(
            [sys.executable, "-m", "bot"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        await fake_api.wait_for(lambda: bot.poll() is not None, 300, "the bot to stop")
        output = bot.stdout.read().decode()
    assert bot.returncode == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and errors[0].endswith(
        f"ERROR bot: The data directory {view} is read-only, or this user may not write it."
    ), output[-3000:]
