"""The bot when its build cluster cannot build (issue 28): a real `python -m bot` whose scheduler no worker
ever joins tells the upload why within RAPTOR_BUILD_WORKER_WAIT, marks its record failed, answers the
channel's questions and stops on SIGTERM; a bot given a tls:// scheduler without the TLS settings starts and
says in one sentence what is missing."""

from __future__ import annotations

import dataclasses
import signal
import socket
import subprocess
import sys
from pathlib import Path

from bot.answering import EMPTY_KB, STILL_BUILDING
from bot.render import inert
from tests.bot.bot_samples import LIGHTHOUSE
from tests.bot.conftest import ALICE, CHAN_A, GUILD, snowflake, text_of, upload_finished
from tests.bot.test_bot_restart import connected, kb_add, upload_states
from tests.bot.test_bot_shards import bot_env
from tests.dask_processes import dask_processes

WAIT_S = 4  # long enough for a starved scheduler to answer a poll (over 2 s at a load average of 18)


def start_bot(fake_api, data_dir: Path, scheduler: str, log: Path) -> subprocess.Popen:
    env = bot_env(fake_api, data_dir, scheduler)
    del env["RAPTOR_SHARD_COUNT"]
    env["RAPTOR_BUILD_WORKER_WAIT"] = str(WAIT_S)
    return subprocess.Popen(
        [sys.executable, "-m", "bot"], cwd=log.parent, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )


async def ask(fake_api, question: str) -> str:
    """/ask in CHAN_A by Alice, over the gateway; the text of its first reply."""
    data = {
        "id": str(snowflake()), "name": "ask", "type": 1,
        "options": [{"name": "question", "type": 3, "value": question}],
    }  # fmt: skip
    channel = {"id": str(CHAN_A), "type": 0, "guild_id": str(GUILD), "name": "docs"}
    token, payload = fake_api.interaction(2, data, channel, ALICE)
    await fake_api.dispatch(GUILD, "INTERACTION_CREATE", payload)
    replies = await fake_api.replies_done(token, lambda r: bool(text_of(r[0])), what="the answer")
    return text_of(replies[0])


async def test_a_bot_whose_scheduler_has_no_worker_says_why_answers_questions_and_stops_on_sigterm(fake_api, tmp_path):
    data_dir = tmp_path / "data"
    with dask_processes(tmp_path, workers=0) as address:
        process = start_bot(fake_api, data_dir, address, tmp_path / "bot.log")
        try:
            await connected(fake_api, process, tmp_path / "bot.log")
            token = await kb_add(fake_api, fake_api.add_file("kestrel.md", LIGHTHOUSE.encode()))
            replies = await fake_api.replies_done(
                token, lambda r: upload_finished(r[0]), what="the upload's outcome"
            )
            sentence = (
                f"No build worker has been connected to {address} for {WAIT_S} s; the file was not added, try again "
                "later."
            )
            assert f"❌ **kestrel.md** was not added: {inert(sentence)} Nothing was stored." in replies[0]["content"]
            assert upload_states(data_dir) == {"kestrel.md": "failed"}  # not left running, not resumed
            answer = await ask(fake_api, "Who kept the light?")
            assert answer != STILL_BUILDING and EMPTY_KB in answer
            process.send_signal(signal.SIGTERM)
            await fake_api.wait_for(lambda: process.poll() is not None, 120, "the bot to stop")
            assert process.returncode == 0, (tmp_path / "bot.log").read_text()[-3000:]
        finally:
            if process.poll() is None:
                process.kill()


async def test_a_bot_given_a_tls_scheduler_without_tls_settings_starts_and_says_what_is_missing(
    make_harness, bot_settings, caplog
):
    settings = dataclasses.replace(bot_settings, dask_scheduler="tls://127.0.0.1:8786")
    h = await make_harness(settings=settings)
    sentence = (
        "The Dask scheduler tls://127.0.0.1:8786 uses TLS but RAPTOR_DASK_TLS_CA_FILE, RAPTOR_DASK_TLS_CERT, "
        "RAPTOR_DASK_TLS_KEY are not set; set them to this cluster's CA, certificate and key files (docs/SCALING.md)."
    )
    assert [r.getMessage() for r in caplog.records if r.name == "raptor_engine.workers"] == [sentence]
    token = h.kb_add(h.fake.add_file("kestrel.md", LIGHTHOUSE.encode()))
    replies = await h.replies_done(token, lambda r: upload_finished(r[0]), what="the upload's outcome")
    assert f"❌ **kestrel.md** was not added: {inert(sentence)} Nothing was stored." in replies[0]["content"]
    assert h.engine.knowledge_bases() == []


async def test_a_bot_whose_scheduler_port_never_speaks_dask_starts_and_says_the_workers_cannot_be_reached(
    make_harness, bot_settings
):
    """A scheduler address whose port never answers Dask's handshake (another service, a wrong port): the
    bot starts all the same (its start waited forever) and an upload says the workers cannot be reached."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the kernel and are never accepted or answered
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        h = await make_harness(settings=dataclasses.replace(bot_settings, dask_scheduler=address))
        token = h.kb_add(h.fake.add_file("kestrel.md", LIGHTHOUSE.encode()))
        replies = await h.replies_done(token, lambda r: upload_finished(r[0]), what="the upload's outcome")
        assert inert(f"The build workers (Dask scheduler {address}) cannot be reached") in replies[0]["content"]
        assert h.engine.knowledge_bases() == []
