"""A channel used as a server's members use it, found by driving the real bot process (botqa14): uploads
with some files refused, the same file twice, questions while a build runs."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from bot import adding
from bot.answering import STILL_BUILDING
from bot.kb import kb_name
from bot.uploads import Source, UploadLog
from tests.bot.bot_samples import LIGHTHOUSE, SOURDOUGH
from tests.bot.conftest import ALICE, CHAN_A, GUILD, text_of
from tests.bot.test_bot_flows import GatedSummarizer

KB_A = kb_name(GUILD, CHAN_A)


async def test_an_upload_whose_refused_files_are_the_only_problem_does_not_read_done(harness):
    """Every accepted file added, one refused from its type and one from its size: the header counts all
    the files sent ("Done." read as if the .exe went in too)."""
    h = harness
    good = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    exe = h.fake.add_file("tool.exe", b"MZ\x90\x00", content_type="application/octet-stream")
    huge = h.fake.add_file("huge.txt", b"x", size=50_000_000)
    token = h.kb_add(good, exe, huge)
    lines = (await h.replies_done(token, lambda r: "Done" in text_of(r[0])))[0]["content"].split("\n")
    assert lines[0] == "Done: 1 file added and 2 not added.", lines
    assert [line[0] for line in lines[1:]] == ["❌", "❌", "✅"], lines
    assert [d.name for d in h.engine.documents(KB_A)] == ["kestrel.md"]


async def test_a_posted_message_with_a_refused_file_beside_good_ones(make_harness):
    """Auto-ingest of a message with three files, one over the size limit: the two others are added, the
    refused one has its own line naming it, and the header says 2 of 3."""
    h = await make_harness(message_content=True)
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    files = [
        h.fake.add_file("kestrel.md", LIGHTHOUSE.encode()),
        h.fake.add_file("huge.txt", b"x", size=50_000_000),
        h.fake.add_file("bread.txt", SOURDOUGH.encode()),
    ]
    h.user_message(CHAN_A, "two manuals", attachments=files)
    done = await h.fake.wait_for(
        lambda: [m for m in h.fake.channel_messages(CHAN_A) if m["content"].startswith("Done")], what="the build"
    )
    lines = done[0]["content"].split("\n")
    assert lines[0] == "Done: 2 files added and 1 not added.", lines
    assert lines[1].startswith("❌ **huge.txt** is ") and "over the" in lines[1], lines
    assert sorted(d.name for d in h.engine.documents(KB_A)) == ["bread.txt", "kestrel.md"]


def kestrel_sections(count: int) -> bytes:
    """A document long enough that its build is still running when a question follows the command."""
    return "\n\n".join(
        f"## Ledge {i}\n\nKestrel {i} nests on ledge {i * 7} of the quarry and hunts voles in field {i % 13}." for i in range(count)
    ).encode()


def hold_upload_log(jobs: Any) -> asyncio.Event:
    """The upload log's write (`BuildJobs.accept`) held until the event returned is set: a loaded
    machine's disk, made certain, so what members do meanwhile lands while the files are being recorded."""
    record, release = jobs.accept, asyncio.Event()

    async def slow_record(*args: Any) -> list[int | None]:
        await asyncio.wait_for(release.wait(), 60)
        return await record(*args)

    jobs.accept = slow_record
    return release


async def test_a_question_asked_right_after_the_first_upload_reads_that_it_is_on_its_way(harness):
    """/ask answered while /kb add is still recording its first file (deferring, writing the upload log):
    it used to read "no documents yet, add one with /kb add" (a file counted as waiting only once its build
    was queued); now the file counts from the moment the command accepted it, so the asker is told to
    wait for it, privately."""
    h = harness
    answered = hold_upload_log(h.bot.services.jobs)
    token = h.kb_add(h.fake.add_file("kestrels.md", kestrel_sections(200)))
    # The command reads the guild's manager role (a database read in a thread) before it accepts the file;
    # a question sent before that ends was asked before any upload, so it waits until the file is counted.
    await h.fake.wait_for(lambda: h.bot.services.jobs.pending(KB_A) > 0, 60, "the command to accept the file")
    asked = h.ask("Where does kestrel 5 nest?")
    reply = (await h.replies_done(asked))[0]
    answered.set()
    assert text_of(reply) == STILL_BUILDING and reply["flags"] & 64, reply
    await h.replies_done(token, lambda r: "Done" in text_of(r[0]))
    assert [d.name for d in h.engine.documents(KB_A)] == ["kestrels.md"]
    assert h.bot.services.jobs.pending(KB_A) == 0


async def test_the_waiting_limit_counts_every_file_of_every_batch_accepted(harness):
    """Three /kb add of five files each, sent together while the upload log is slow: two fill the channel's
    ten places, the third is refused with the sentence naming them (each request used to count one file,
    the one being queued, so six requests of five, 30 files, passed the limit of 10)."""
    h = harness
    jobs = h.bot.services.jobs
    refused = hold_upload_log(jobs)
    requests = [
        h.kb_add(*(h.fake.add_file(f"note-{r}-{f}.md", f"# Note {r}.{f}\n\nShelf {r * 5 + f} holds jars.".encode()) for f in range(5)))
        for r in range(3)
    ]
    sentence = "This channel already has 10 file(s) waiting to be added (limit 10); try again when they are done."

    def answers() -> list[str] | None:
        texts = [text_of(h.fake.original(t)) if h.fake.original(t) else "" for t in requests]
        return texts if sentence in texts else None

    texts = await h.fake.wait_for(answers, 60, "the third request's refusal")
    refused.set()
    assert texts.count(sentence) == 1, texts
    for token in requests:
        if text_of(h.fake.original(token)) != sentence:
            await h.replies_done(token, lambda r: "Done" in text_of(r[0]))
    assert len(h.engine.documents(KB_A)) == 10 and jobs.pending(KB_A) == 0


async def test_a_question_asked_while_a_restarted_bot_resumes_the_first_upload_reads_that_it_is_on_its_way(
    make_harness, bot_settings, monkeypatch
):
    """A bot killed during a channel's first build starts again and first closes the old status messages
    (a Discord edit each) before it queues the file again: a question answered meanwhile used to read "no
    documents yet, add one with /kb add"; the resumed file counts as waiting from the start."""
    log = UploadLog(bot_settings.data_dir / "uploads.db")
    try:
        [upload] = log.accept(KB_A, [Source("kestrels.md", "http://cdn.invalid/k", 10)], "alice", CHAN_A, ALICE)
        log.downloaded(upload, kestrel_sections(200))
        log.begin(upload)  # it was building when the bot was killed
    finally:
        log.close()
    answered, close = asyncio.Event(), adding.close_stale_statuses

    async def slow_close(*args: Any) -> None:
        """Closing the old status messages as a rate-limited Discord makes it: the question comes first."""
        await asyncio.wait_for(answered.wait(), 60)
        await close(*args)

    monkeypatch.setattr(adding, "close_stale_statuses", slow_close)
    h = await make_harness()
    reply = (await h.replies_done(h.ask("Where does kestrel 5 nest?")))[0]
    answered.set()
    assert text_of(reply) == STILL_BUILDING and reply["flags"] & 64, reply
    await h.fake.wait_for(lambda: [d.name for d in h.engine.documents(KB_A)] == ["kestrels.md"], 240, "the resumed build")
    await h.fake.wait_for(lambda: h.bot.services.jobs.pending(KB_A) == 0, 60, "the queue to empty")


async def test_kb_status_counts_every_file_a_batch_still_has_to_add(make_harness, embedder):
    """A three-file /kb add queued behind a build in the same channel: /kb status says 3 waiting (it said 1,
    the batch's file being queued, leaving out the two behind it)."""
    summarizer = GatedSummarizer(embedder.count_tokens)
    h = await make_harness(summarizer=summarizer)
    first = h.kb_add(h.fake.add_file("kestrel.md", LIGHTHOUSE.encode()))
    await asyncio.wait_for(summarizer.entered.wait(), 120)
    notes = [h.fake.add_file(f"note-{i}.md", f"# Note {i}\n\nShelf {i} holds the jam jars.".encode()) for i in range(3)]
    batch = h.kb_add(*notes)
    await h.fake.wait_for(lambda: "waiting: another file" in text_of(h.fake.original(batch) or {}), what="the batch to queue")
    status = (await h.replies_done(h.slash("kb", sub="status")))[0]
    summarizer.gate.set()
    assert "1 waiting" not in text_of(status) and "3 waiting" in text_of(status), text_of(status)
    for token in (first, batch):
        await h.replies_done(token, lambda r: "Done" in text_of(r[0]))
    assert len(h.engine.documents(KB_A)) == 4


async def test_a_file_being_downloaded_shows_its_size_in_units_that_fit_it(monkeypatch):
    """A 312-byte notes file read "downloading 0 KB" (the size in whole kilobytes) while it was fetched."""
    shown: list[str] = []
    batch = SimpleNamespace(set=lambda index, text: shown.append(text))
    services = SimpleNamespace(cdn=None, settings=SimpleNamespace(max_file_bytes=1 << 20))

    async def download(*_: Any) -> bytes:
        return b""

    monkeypatch.setattr(adding, "download", download)
    for size in (312, 48_000, 3_500_000):
        await adding.fetcher(services, batch, 0, Source("notes.md", "http://cdn.invalid/n", size))()  # type: ignore[arg-type]
    assert shown == [
        "⏳ **notes.md**: downloading 312 B",
        "⏳ **notes.md**: downloading 46.9 KB",
        "⏳ **notes.md**: downloading 3.3 MB",
    ]
