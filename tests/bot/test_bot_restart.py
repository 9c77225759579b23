"""Uploads outlive the bot: each is recorded when it is accepted, before it waits for its turn, and a bot
started again builds what the last one did not finish (bot/uploads.py, docs/SCALING.md "Durable uploads").

In-process bots (builds in the test's process) check the record's states, a graceful stop with files
still waiting, a waiting upload downloaded again and a link that expired; the last test SIGKILLs a real
`python -m bot` process (with its embedded LocalCluster) mid-build and starts it again on its data dir.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import signal
import sqlite3
from pathlib import Path

import psutil  # a dependency of distributed

from bot.kb import kb_name
from bot.uploads import Source, UploadLog
from raptor_engine.engine import Engine
from tests.bot.bot_samples import LIGHTHOUSE, SOURDOUGH
from tests.bot.conftest import ALICE, BOB, CHAN_A, GUILD, snowflake, text_of
from tests.bot.real_bot import connected, start_bot
from tests.bot.test_bot_flows import GatedSummarizer
from tests.unhurried import unhurried_settings

KB_A = kb_name(GUILD, CHAN_A)
ROOT = Path(__file__).resolve().parents[2]
KEEPERS = (ROOT / "raptor_tools" / "samples" / "lighthouse_keepers.md").read_text()
RESTARTED = f"<@{ALICE}> The bot restarted while this file was being added; adding it again"
REBUILT = f"<@{ALICE}> Done (the bot restarted while this file was being added, so it was built again)."
RETRIED = f"<@{ALICE}> Done (the bot restarted while this file was being added, so it was tried again)."
WAITED = f"<@{ALICE}> The bot restarted before this file's turn came; adding it now"
ADDED_AFTER = f"<@{ALICE}> Done (the bot restarted before this file's turn came, so it was added once the bot was back)."
TRIED_AFTER = f"<@{ALICE}> Done (the bot restarted before this file's turn came, so it was tried once the bot was back)."
# the release before uploads were recorded on acceptance: no url, no size
OLD_SCHEMA = """CREATE TABLE uploads (
    id INTEGER PRIMARY KEY, kb TEXT NOT NULL, filename TEXT NOT NULL, sha256 TEXT NOT NULL,
    data BLOB, added_by TEXT NOT NULL, channel_id INTEGER, requester_id INTEGER,
    status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL,
    updated_at REAL NOT NULL)"""


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def cdn_key(attachment: dict) -> str:
    return attachment["url"].rsplit("/cdn/", 1)[1]


def resumed_message(fake, name: str) -> dict | None:
    """The channel message of a resumed upload once it shows its outcome."""
    return next(
        (
            m
            for m in fake.channel_messages(CHAN_A)
            if f"**{name}**" in m["content"] and m["content"].startswith(f"<@{ALICE}> Done")
        ),
        None,
    )


def test_an_uploads_file_of_the_previous_release_opens_and_keeps_its_unfinished_uploads(tmp_path):
    path = tmp_path / "uploads.db"
    conn = sqlite3.connect(path)
    conn.execute(OLD_SCHEMA)
    conn.execute(
        "INSERT INTO uploads (kb, filename, sha256, data, added_by, channel_id, requester_id, status, "
        "created_at, updated_at) VALUES (?, 'bread.txt', ?, ?, 'alice', ?, ?, 'running', 0, 0)",
        [KB_A, sha256(SOURDOUGH), SOURDOUGH.encode(), CHAN_A, ALICE],
    )
    conn.commit()
    conn.close()
    log = UploadLog(path)
    try:
        [old] = log.unfinished()
        assert (old.filename, old.data, old.status, old.url, old.size, old.post) == (
            "bread.txt", SOURDOUGH.encode(), "running", "", 0, None,
        )  # fmt: skip
        [new] = log.accept(KB_A, [Source("kestrel.md", "http://cdn/kestrel.md", 1234)], "alice", CHAN_A, ALICE)
        waiting = log.unfinished()[1]
        assert (waiting.id, waiting.status, waiting.url, waiting.size, waiting.data, waiting.sha256) == (
            new, "waiting", "http://cdn/kestrel.md", 1234, None, "",
        )  # fmt: skip
        log.downloaded(new, LIGHTHOUSE.encode())
        queued = log.unfinished()[1]
        assert (queued.status, queued.data, queued.sha256) == ("queued", LIGHTHOUSE.encode(), sha256(LIGHTHOUSE))
        log.mark(old.id, "done")
        assert [u.id for u in log.unfinished()] == [new]
    finally:
        log.close()
    UploadLog(path).close()  # opened again: the columns are there once
    conn = sqlite3.connect(path)
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(uploads)")]
        added = ["url", "size", "attempts", "status_message_id", "status_token", "status_until"]
        added += ["post_channel_id", "post_message_id", "post_attachment_id", "post_author_id"]
        assert columns[-len(added) :] == added and len(columns) == len(set(columns))
        assert conn.execute("SELECT data FROM uploads WHERE id = ?", [old.id]).fetchone() == (None,)
    finally:
        conn.close()


async def test_files_are_recorded_when_accepted_and_downloaded_only_when_their_turn_comes(make_harness, embedder):
    """Both ways files arrive: /kb add (two files in one request) and a message auto-ingested."""
    summarizer = GatedSummarizer(embedder.count_tokens)
    h = await make_harness(message_content=True, summarizer=summarizer)
    autoingest = [{"name": "enabled", "type": 5, "value": True}]
    assert "**on**" in (await h.replies_done(h.slash("kb", autoingest, sub="autoingest")))[0]["content"]
    kestrel = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    bread = h.fake.add_file("bread.txt", SOURDOUGH.encode())
    notes = h.fake.add_file("notes.md", b"# Notes\n\nThe lamp room is swept every morning before the log is written.")
    first = h.kb_add(kestrel, bread)  # two files in one request: the second waits for the first
    await asyncio.wait_for(summarizer.entered.wait(), 120)
    h.user_message(CHAN_A, "the notes", attachments=[notes], user=BOB)  # waits for the channel's queue
    uploads = h.bot.services.jobs.uploads
    await h.fake.wait_for(lambda: len(uploads.unfinished()) == 3, what="three recorded uploads")
    running, *waiting = uploads.unfinished()
    assert (running.filename, running.status, running.sha256) == ("kestrel.md", "running", sha256(LIGHTHOUSE))
    for upload, attachment, requester in zip(waiting, (bread, notes), (ALICE, BOB), strict=True):
        assert (upload.filename, upload.status, upload.data, upload.sha256) == (
            attachment["filename"], "waiting", None, "",
        )  # fmt: skip
        assert (upload.url, upload.size) == (attachment["url"], attachment["size"])
        assert (upload.kb, upload.channel_id, upload.requester_id) == (KB_A, CHAN_A, requester)
    assert h.fake.cdn_hits == [cdn_key(kestrel)]  # the waiting ones are not downloaded yet
    summarizer.gate.set()
    await h.replies_done(first, lambda r: "Done" in text_of(r[0]), what="the slash command's builds")
    await h.fake.wait_for(
        lambda: any("✅ **notes.md** added" in m["content"] for m in h.fake.channel_messages(CHAN_A)),
        what="the auto-ingested build",
    )
    assert sorted(d.name for d in h.engine.documents(KB_A)) == ["bread.txt", "kestrel.md", "notes.md"]
    await h.fake.wait_for(lambda: uploads.unfinished() == [], what="every upload to be marked")
    assert [uploads.status(u.id) for u in (running, *waiting)] == ["done", "done", "done"]


async def test_a_stopping_bot_keeps_the_files_still_waiting_for_its_next_start(make_harness, embedder):
    summarizer = GatedSummarizer(embedder.count_tokens)
    h = await make_harness(summarizer=summarizer)
    bread = h.fake.add_file("bread.txt", SOURDOUGH.encode())
    token = h.kb_add(h.fake.add_file("kestrel.md", LIGHTHOUSE.encode()), bread)
    await asyncio.wait_for(summarizer.entered.wait(), 120)
    stopping = asyncio.create_task(h.bot.shutdown())
    await h.fake.wait_for(lambda: h.bot.services.jobs.closing, what="the bot to start stopping")
    summarizer.gate.set()
    await asyncio.wait_for(stopping, 120)
    content = h.fake.original(token)["content"]
    assert "✅ **kestrel.md** added" in content
    assert "⏸️ **bread.txt** waits: the bot is restarting and adds it when it is back." in content
    assert cdn_key(bread) not in h.fake.cdn_hits

    h2 = await make_harness()
    message = await h2.fake.wait_for(lambda: resumed_message(h2.fake, "bread.txt"), 240, "the resumed upload")
    assert message["content"].startswith(ADDED_AFTER)  # never started: not "built again"
    assert "✅ **bread.txt** added" in message["content"]
    assert h2.fake.versions[int(message["id"])][0].startswith(WAITED)
    assert sorted(d.name for d in h2.engine.documents(KB_A)) == ["bread.txt", "kestrel.md"]
    assert h2.fake.cdn_hits.count(cdn_key(bread)) == 1
    assert h2.bot.services.jobs.uploads.unfinished() == []


async def test_a_waiting_upload_is_downloaded_again_and_one_whose_link_expired_is_asked_for_again(
    make_harness, fake_api, bot_settings
):
    bread = fake_api.add_file("bread.txt", SOURDOUGH.encode())
    expired = Source("notes.md", f"{fake_api.base}/cdn/expired-notes.md", 2048)  # the CDN answers 404
    log = UploadLog(bot_settings.data_dir / "uploads.db")
    gone, kept = log.accept(
        KB_A, [expired, Source("bread.txt", bread["url"], bread["size"])], "alice", CHAN_A, ALICE
    )
    log.close()
    h = await make_harness()
    built = await h.fake.wait_for(lambda: resumed_message(h.fake, "bread.txt"), 240, "the resumed upload")
    failed = await h.fake.wait_for(lambda: resumed_message(h.fake, "notes.md"), 60, "the expired upload")
    assert built["content"].startswith(ADDED_AFTER) and "✅ **bread.txt** added" in built["content"]
    assert failed["content"] == (
        f"{TRIED_AFTER}\n❌ **notes.md** could not be downloaded from Discord (HTTP 404); post it again. "
        "Nothing was stored."
    )
    assert [d.name for d in h.engine.documents(KB_A)] == ["bread.txt"]
    uploads = h.bot.services.jobs.uploads
    assert (uploads.status(gone), uploads.status(kept)) == ("failed", "done")


async def test_an_upload_started_as_often_as_allowed_is_given_up_and_its_requester_told(make_harness, bot_settings):
    """A build that never finishes (each start stopped the bot, or lost its workers) is not resumed forever:
    each start is counted, and one started RAPTOR_BUILD_ATTEMPTS times is marked failed with a sentence."""
    log = UploadLog(bot_settings.data_dir / "uploads.db")
    try:
        [stuck] = log.accept(KB_A, [Source("bread.txt", "http://cdn.invalid/bread", 10)], "alice", CHAN_A, ALICE)
        log.downloaded(stuck, SOURDOUGH.encode())
        for _ in range(bot_settings.build_attempts):
            log.begin(stuck)
        [kept] = log.accept(KB_A, [Source("notes.md", "http://cdn.invalid/notes", 10)], "alice", CHAN_A, ALICE)
        log.downloaded(kept, b"# Notes\n\nThe lamp room is swept every morning before the log is written.")
        log.begin(kept)  # started once before: built again
        assert [u.attempts for u in log.unfinished()] == [bot_settings.build_attempts, 1]
    finally:
        log.close()
    h = await make_harness()
    given_up = await h.fake.wait_for(lambda: resumed_message(h.fake, "bread.txt"), 240, "the given-up upload")
    assert given_up["content"] == (
        f"{RETRIED}\n❌ **bread.txt** was not added: Its build was started {bot_settings.build_attempts} times and "
        "never finished, so it was given up; post the file again. Nothing was stored."
    )
    built = await h.fake.wait_for(lambda: resumed_message(h.fake, "notes.md"), 240, "the resumed upload")
    assert "✅ **notes.md** added" in built["content"]
    uploads = h.bot.services.jobs.uploads
    assert (uploads.status(stuck), uploads.status(kept)) == ("failed", "done")
    assert [d.name for d in h.engine.documents(KB_A)] == ["notes.md"]


# ---------------------------------------------------------------------------------------------- real processes


def upload_states(data_dir: Path) -> dict[str, str]:
    """File name -> state, as the bot process recorded them."""
    path = data_dir / "uploads.db"
    if not path.exists():
        return {}
    conn = sqlite3.connect(path, timeout=30)
    try:
        return dict(conn.execute("SELECT filename, status FROM uploads ORDER BY id").fetchall())
    finally:
        conn.close()


async def kb_add(fake_api, *attachments: dict) -> str:
    """/kb add in CHAN_A by Alice, over the gateway; its interaction token."""
    names = ["file", "file2", "file3"]
    options = [{"name": n, "type": 11, "value": a["id"]} for n, a in zip(names, attachments, strict=False)]
    data = {
        "id": str(snowflake()),
        "name": "kb",
        "type": 1,
        "options": [{"name": "add", "type": 1, "options": options}],
        "resolved": {"attachments": {a["id"]: a for a in attachments}},
    }
    channel = {"id": str(CHAN_A), "type": 0, "guild_id": str(GUILD), "name": "docs"}
    token, payload = fake_api.interaction(2, data, channel, ALICE)
    await fake_api.dispatch(GUILD, "INTERACTION_CREATE", payload)
    return token


def alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those still running (a zombie waiting for init to reap it has exited)."""
    running = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                running.append(process)
        except psutil.NoSuchProcess:
            pass
    return running


async def test_a_bot_killed_mid_build_builds_its_uploads_on_restart_and_tells_the_requester(
    fake_api, tmp_path, embedder
):
    data_dir = tmp_path / "data"
    long_text = "\n\n".join(f"# Part {i}\n\n{KEEPERS}" for i in range(2))
    long_md = fake_api.add_file("long.md", long_text.encode())
    kestrel = fake_api.add_file("kestrel.md", LIGHTHOUSE.encode())
    bread = fake_api.add_file("bread.txt", SOURDOUGH.encode())
    first = start_bot(fake_api, data_dir, tmp_path / "first.log")
    processes = [first]
    descendants: list[psutil.Process] = []
    try:
        await connected(fake_api, first, tmp_path / "first.log")
        token = await kb_add(fake_api, long_md, kestrel)
        building = re.compile(r"⏳ \*\*long\.md\*\*: (?!downloading|waiting)")  # a stage reported by the worker
        await fake_api.wait_for(
            lambda: building.search((fake_api.original(token) or {}).get("content", "")), 240, "long.md's build"
        )
        await kb_add(fake_api, bread)
        await fake_api.wait_for(lambda: len(upload_states(data_dir)) == 3, 60, "bread.txt to be recorded")
        descendants = psutil.Process(first.pid).children(recursive=True)
        assert descendants  # the embedded cluster's worker, at least
        os.kill(first.pid, signal.SIGKILL)
        await fake_api.wait_for(lambda: first.poll() is not None, 30, "the bot to die")
        assert upload_states(data_dir) == {"long.md": "running", "kestrel.md": "waiting", "bread.txt": "waiting"}
        # the killed bot's LocalCluster worker (and anything else it started) exits with it
        await fake_api.wait_for(lambda: not alive(descendants), 60, "the killed bot's children to exit")

        second = start_bot(fake_api, data_dir, tmp_path / "second.log")
        processes.append(second)
        await connected(fake_api, second, tmp_path / "second.log")
        for name, said, first in (
            ("long.md", REBUILT, RESTARTED), ("kestrel.md", ADDED_AFTER, WAITED), ("bread.txt", ADDED_AFTER, WAITED)
        ):
            message = await fake_api.wait_for(lambda n=name: resumed_message(fake_api, n), 300, f"{name}'s outcome")
            assert message["content"].startswith(said), message["content"]
            assert f"✅ **{name}** added" in message["content"]
            assert fake_api.versions[int(message["id"])][0].startswith(first)
        # the killed run's status message no longer spins: the restarted bot closed it (through the token)
        stale = fake_api.original(token)["content"]
        assert stale.startswith("⏸️ The bot restarted before this finished") and "⏳" not in stale, stale
        assert "⏸️ **long.md** was interrupted by the restart." in stale, stale
        assert "⏸️ **kestrel.md** was interrupted by the restart." in stale, stale
        second.send_signal(signal.SIGTERM)
        await fake_api.wait_for(lambda: second.poll() is not None, 120, "the bot to stop")
        assert second.returncode == 0, (tmp_path / "second.log").read_text()[-3000:]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
        for process in alive(descendants):
            process.kill()
    assert upload_states(data_dir) == {"long.md": "done", "kestrel.md": "done", "bread.txt": "done"}
    # the waiting files were downloaded only once, by the restarted bot; the killed build kept its bytes
    assert [fake_api.cdn_hits.count(cdn_key(a)) for a in (long_md, kestrel, bread)] == [1, 1, 1]
    engine = Engine(unhurried_settings(data_dir=data_dir), embedder=embedder)
    try:
        assert sorted(d.name for d in engine.documents(KB_A)) == ["bread.txt", "kestrel.md", "long.md"]
    finally:
        engine.close()


def test_closing_the_upload_records_waits_for_a_running_statement_and_then_refuses_calls(tmp_path):
    """The bot closed uploads.db while a cancelled start-up task's thread was reading it: a segfault.
    Closing now waits for the statement in flight, and a call after it gets a RaptorError."""
    import threading

    import pytest

    from raptor_engine.errors import RaptorError

    uploads = UploadLog(tmp_path / "uploads.db")
    uploads._lock.acquire()  # a statement running in another thread
    closer = threading.Thread(target=uploads.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive()  # it waits for the statement
    uploads._lock.release()
    closer.join(5)
    assert not closer.is_alive()
    with pytest.raises(RaptorError, match="closed"):
        uploads.unfinished()


async def test_a_stop_does_not_wait_for_a_stalled_download_and_the_next_start_fetches_it_again(make_harness):
    """SIGTERM while Discord's CDN sends nothing for a file: the stop does not wait for the download (up
    to the session's five-minute timeout, holding the bot up); the file's line says it waits for the
    next start, its record stays waiting, and the next start downloads and adds it."""
    h = await make_harness()
    stalled = h.fake.add_file("slow.md", LIGHTHOUSE.encode())
    after = h.fake.add_file("bread.txt", SOURDOUGH.encode())
    h.fake.held.add(cdn_key(stalled))
    token = h.kb_add(stalled, after)
    await h.fake.wait_for(lambda: cdn_key(stalled) in h.fake.cdn_hits, what="the download to start")
    await h.bot.shutdown()
    content = h.fake.original(token)["content"]
    assert "⏸️ **slow.md** waits: the bot is restarting and adds it when it is back." in content, content
    assert "⏸️ **bread.txt** waits: the bot is restarting and adds it when it is back." in content, content
    assert not h.fake.release_held.is_set()  # the stop did not wait for the stalled download

    h.fake.release_held.set()
    h2 = await make_harness()
    for name in ("slow.md", "bread.txt"):
        message = await h2.fake.wait_for(lambda n=name: resumed_message(h2.fake, n), 240, f"{name} resumed")
        assert f"✅ **{name}** added" in message["content"], message["content"]
    assert sorted(d.name for d in h2.engine.documents(KB_A)) == ["bread.txt", "slow.md"]
    assert h2.bot.services.jobs.uploads.unfinished() == []
