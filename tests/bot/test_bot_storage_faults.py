"""The data directory failing under the bot: read-only at start, a full disk, a server's directory
deleted while the bot runs. Each is said in one sentence, and what the user is told is what is kept.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.bot.test_bot_shards import bot_env
from tests.storage_faults import read_only_view
from tests.unhurried import unhurried_settings

ROOT = Path(__file__).resolve().parents[2]


async def run_until_it_stops(fake_api, data: Path, cwd: Path) -> tuple[int, str]:
    """A real `python -m bot` (builds in its own threads) on `data`, which must stop by itself: its exit
    status and output."""
    env = bot_env(fake_api, data, "")
    for key in ("RAPTOR_SHARD_COUNT", "RAPTOR_DASK_SCHEDULER"):
        del env[key]
    env["RAPTOR_BUILD_WORKERS"] = "0"
    bot = subprocess.Popen(
        [sys.executable, "-m", "bot"], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    await fake_api.wait_for(lambda: bot.poll() is not None, 300, "the bot to stop")
    return bot.returncode, bot.stdout.read().decode()


async def test_a_read_only_data_directory_stops_the_bot_with_one_line(fake_api, tmp_path):
    """A real `python -m bot` on a read-only data directory (a read-only bind mount, which stops root
    too): exit status 2 and one line saying so, no traceback."""
    data = tmp_path / "data"
    data.mkdir()
    with read_only_view(data, tmp_path / "ro") as view:
        returncode, output = await run_until_it_stops(fake_api, view, tmp_path)
    assert returncode == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and errors[0].endswith(
        f"ERROR bot: The data directory {view} is read-only, or this user may not write it."
    ), output[-3000:]


async def test_a_server_directory_deleted_while_the_bot_runs_loses_nothing_silently(make_harness, embedder):
    """The guild's directory removed mid-build: the file is refused in one sentence (nothing reported
    added that is not stored). Removed while idle: the next question does not answer from the deleted
    store, and the next upload lands in a new store that is still there after the bot stops."""
    import asyncio
    import shutil

    from bot.kb import kb_name
    from raptor_engine.engine import Engine
    from tests.bot.bot_samples import LIGHTHOUSE, SOURDOUGH
    from tests.bot.conftest import CHAN_A, GUILD, text_of, upload_finished
    from tests.bot.test_bot_flows import GatedSummarizer

    summarizer = GatedSummarizer(embedder.count_tokens)
    h = await make_harness(summarizer=summarizer)
    guild_dir = h.bot.settings.data_dir / "guilds" / str(GUILD)
    uploads = h.bot.services.jobs.uploads

    building = h.kb_add(h.fake.add_file("kestrel.md", LIGHTHOUSE.encode()))
    await asyncio.wait_for(summarizer.entered.wait(), 120)
    assert (guild_dir / "raptor.db").exists()
    shutil.rmtree(guild_dir)
    summarizer.gate.set()
    [status] = await h.replies_done(building, lambda r: upload_finished(r[0]))
    assert "❌ **kestrel.md** was not added: The store in " in status["content"], status["content"]
    assert "was deleted or replaced while in use, so nothing was written; try again." in status["content"]
    assert "✅" not in status["content"]
    assert uploads.status(1) == "failed"

    added = h.kb_add(h.fake.add_file("bread.txt", SOURDOUGH.encode()))
    [status] = await h.replies_done(added, lambda r: upload_finished(r[0]))
    assert "✅ **bread.txt** added" in status["content"], status["content"]
    shutil.rmtree(guild_dir)  # while nothing works in it
    [reply] = await h.replies_done(h.ask("How long does the dough rise?"))
    assert "has no documents yet" in text_of(reply), text_of(reply)  # not an answer from the deleted file
    again = h.kb_add(h.fake.add_file("kestrel.md", LIGHTHOUSE.encode()))
    [status] = await h.replies_done(again, lambda r: upload_finished(r[0]))
    assert "✅ **kestrel.md** added" in status["content"], status["content"]
    await h.bot.close()

    engine = Engine(unhurried_settings(data_dir=h.bot.settings.data_dir), embedder=embedder)
    try:  # what the bot said it added after the deletion is on disk
        assert [d.name for d in engine.documents(kb_name(GUILD, CHAN_A))] == ["kestrel.md"]
    finally:
        engine.close()


async def test_a_full_disk_records_what_the_requester_was_told(make_harness, bot_settings, tmp_path):
    """The data directory on a small tmpfs, filled after the bot started: the upload is accepted (a
    small row) but its bytes do not fit. The requester is told it was not added, and the record says
    so (failed, with that reason), so the next start does not add it after all."""
    from bot.uploads import UploadLog
    from tests.bot.conftest import upload_finished
    from tests.storage_faults import fill, small_disk

    with small_disk(tmp_path / "disk", 16) as disk:
        bot_settings.data_dir = disk / "data"
        h = await make_harness(settings=bot_settings)
        uploads = h.bot.services.jobs.uploads
        assert uploads.reserve.stat().st_size == 1024 * 1024
        text = "".join(f"Line {i} of the lamp keeper's long log, written every evening.\n" for i in range(1400))
        assert 80_000 < len(text) < bot_settings.max_file_bytes
        attachment = h.fake.add_file("log.txt", text.encode())
        fill(disk, leave_bytes=48 * 1024)
        token = h.kb_add(attachment)
        [status] = await h.replies_done(token, lambda r: upload_finished(r[0]))
        told = "The data directory is on a full disk."
        assert f"❌ **log.txt** was not added: {told} Nothing was stored." in status["content"], status["content"]
        await h.bot.close()
        log = UploadLog(bot_settings.data_dir / "uploads.db")
        try:
            assert log.unfinished() == []  # what the next start would build: nothing
            row = log.db.execute("SELECT filename, status, error, data FROM uploads").fetchall()
            assert row == [("log.txt", "failed", told, None)]
        finally:
            log.close()


async def test_a_damaged_store_is_one_sentence_for_questions_and_commands_not_try_again(make_harness, embedder):
    """A server's database damaged while the bot was down (its pages overwritten): /ask, a follow-up in
    the thread and /kb list each say the database is damaged and must be restored (no path: that is for
    the log), instead of 'something went wrong, try again' (which cannot help); the bot keeps running."""
    from bot.replies import DAMAGED_STORE
    from tests.bot.bot_samples import LIGHTHOUSE
    from tests.bot.conftest import GUILD, text_of, thread_payload, upload_finished

    h = await make_harness()
    [status] = await h.replies_done(
        h.kb_add(h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())), lambda r: upload_finished(r[0])
    )
    asked = h.ask("How is the lens cleaned?")
    await h.replies_done(asked)
    await h.finished(asked)
    [thread] = [t for t in h.bot.get_guild(GUILD).threads]
    await h.bot.close()
    store = h.bot.settings.data_dir / "guilds" / str(GUILD) / "raptor.db"
    raw = bytearray(store.read_bytes())
    raw[100:4096] = b"\xff" * (4096 - 100)  # the schema page: SQLite calls the file malformed
    store.write_bytes(bytes(raw))

    h2 = await make_harness()
    h2.state.parse_thread_create(dict(thread_payload(thread.id, thread.parent_id, thread.name), newly_created=True))
    thread_id = thread.id
    damaged = DAMAGED_STORE
    [reply] = await h2.replies_done(h2.ask("How is the lens cleaned?"))
    assert damaged in text_of(reply) and "try again" not in text_of(reply), text_of(reply)
    [listed] = await h2.replies_done(h2.slash("kb", sub="list"))
    assert damaged in text_of(listed) and "try again" not in text_of(listed), text_of(listed)
    h2.user_message(thread_id, "and in fog?", mention_bot=True)
    [answer] = await h2.fake.wait_for(lambda: h2.fake.channel_messages(thread_id), what="the follow-up's reply")
    assert damaged in text_of(answer) and "try again" not in text_of(answer), text_of(answer)
    assert str(h2.bot.settings.data_dir) not in "".join(map(str, h2.fake.calls))  # paths stay in the log


async def test_a_damaged_database_at_start_is_one_line_that_names_the_file(fake_api, tmp_path):
    """A real `python -m bot` whose data directory holds a damaged file among its databases (here the
    bot's upload records): exit status 2 and one line naming that file, so the operator knows which of
    the directory's databases to restore; no traceback."""
    data = tmp_path / "data"
    data.mkdir()
    damaged = data / "uploads.db"
    damaged.write_bytes(b"not a database " * 512)
    returncode, output = await run_until_it_stops(fake_api, data, tmp_path)
    assert returncode == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if " ERROR " in line]
    assert len(errors) == 1, output[-3000:]
    assert f"holds a damaged database (file is not a database: {damaged})" in errors[0], errors[0]
