"""A channel used as a server's members use it, found by driving the real bot process (botqa14): uploads
with some files refused, the same file twice, questions while a build runs."""

from __future__ import annotations

from bot.kb import kb_name
from tests.bot.bot_samples import LIGHTHOUSE, SOURDOUGH
from tests.bot.conftest import CHAN_A, GUILD, text_of

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
    assert lines[0] == "Done: 1 of 3 file(s) added.", lines
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
    assert lines[0] == "Done: 2 of 3 file(s) added.", lines
    assert lines[1].startswith("❌ **huge.txt** is ") and "over the" in lines[1], lines
    assert sorted(d.name for d in h.engine.documents(KB_A)) == ["bread.txt", "kestrel.md"]

