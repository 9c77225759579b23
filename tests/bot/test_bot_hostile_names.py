"""Attachment names a member chooses (Discord passes any characters through) and document text that reads as
Discord's markup, through the bot: each name is stored as the engine's safe name (no folders, control,
NUL or direction-changing characters) and shown so in status lines, sources and the context view; text
that looks like a mention is quoted inert, and every message goes out with no mention allowed (the
harness checks `allowed_mentions` on every call)."""

from __future__ import annotations

import dataclasses

import pytest

from tests.bot.conftest import BOB, CHAN_A, MANAGER_ROLE, custom_ids, text_of, upload_finished
from tests.bot.test_bot_flows import KB_A, ask, sources_of

# name Discord hands over -> the name stored, shown, cited
NAMES = {
    "../../../../etc/cron.d/harbour.md": "harbour.md",
    "..\\..\\Windows\\System32\\tide.md": "tide.md",
    "/var/lib/raptor/guilds/43/ferry.md": "ferry.md",
    "nul\x00byte.md": "nulbyte.md",
    "\u202eharbour\u2066log.md": "harbourlog.md",
    "....md": "untitled.md",
}


def _attachment(h, name: str, data: bytes) -> dict:
    """An attachment named `name` served from a link without it (Discord's CDN link is its own; the fake's
    would put the name's '/' in its path)."""
    attachment = h.fake.add_file("upload.md", data)
    return {**attachment, "filename": name}


FACTS = ["the pier", "the beacon", "the ferry", "the crane", "the lock gate", "the buoy"]


@pytest.mark.parametrize("name", list(NAMES))
async def test_an_attachment_name_with_folders_or_controls_is_stored_and_cited_by_its_safe_name(harness, name):
    h = harness
    fact = FACTS[list(NAMES).index(name)]
    text = f"The harbour master painted {fact} blue in 1931 after the storm. The harbour master lived by the quay."
    replies = await h.replies_done(
        h.kb_add(_attachment(h, name, text.encode())), lambda r: upload_finished(r[0]), what="the upload"
    )
    status = text_of(replies[0])
    safe = NAMES[name]
    assert [d.name for d in h.engine.documents(KB_A)] == [safe]
    assert f"**{safe.replace('_', chr(92) + '_')}** added" in status, status
    _, answer = await ask(h, f"When was {fact} painted blue?")
    cited = sources_of(answer)
    assert safe in cited, cited
    shown = "\n".join([status, cited, *(text_of(m) for m in answer)])
    assert not any(ch in shown for ch in "\x00\u202e\u2066"), shown
    assert "etc/cron" not in shown and "Windows" not in shown and "guilds/43" not in shown, shown


async def test_document_text_that_looks_like_mentions_is_quoted_inert(harness):
    """A document quoting '@everyone', a role's and a member's mention: the answer and the context view show
    the characters (escaped), never a ping; the harness checks that no message allowed one either."""
    h = harness
    text = (
        f"Notice to the crew: @everyone and <@&{MANAGER_ROLE}> and <@101> and @here must report to the pier at 06:00. "
        "The pier gate opens at six in the morning."
    )
    attachment = h.fake.add_file("notice.md", text.encode())
    await h.replies_done(h.kb_add(attachment), lambda r: upload_finished(r[0]), what="the upload")
    _, replies = await ask(h, "Who must report to the pier at 06:00?")
    answer = replies[-1]
    token = h.click(answer, next(i for i in custom_ids(answer) if i.startswith("raptor:ctx:")))
    context = (await h.replies_done(token))[0]
    for message in [*replies, context]:
        shown = text_of(message)
        for ping in ("@everyone", "@here"):
            assert ping not in shown.replace("\\" + ping, "").replace("\\@" + ping[1:], ""), shown
        assert f"<@&{MANAGER_ROLE}>" not in shown and "<@101>" not in shown, shown
    assert "@everyone" in text_of(context).replace("\\", ""), text_of(context)  # quoted, not dropped


async def test_a_member_posting_small_files_without_end_is_held_to_the_files_per_hour(make_harness, bot_settings):
    """Tried: with auto-ingest on, one member posting a small file a message had each built (the channel's
    queue bounds only what waits at once), so they could keep the bot's few build slots, shared by every
    server, busy for as long as they liked. Now RAPTOR_FILES_PER_HOUR bounds a member's files, whichever way
    added; another member is not held by it."""
    h = await make_harness(message_content=True, settings=dataclasses.replace(bot_settings, files_per_hour=3))
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    for i in range(3):
        h.user_message(CHAN_A, "", attachments=[h.fake.add_file(f"n{i}.md", f"Note {i}: the tide.".encode())])
    await h.fake.wait_for(lambda: len(h.engine.documents(KB_A)) == 3, what="three files added")
    h.user_message(CHAN_A, "", attachments=[h.fake.add_file("n3.md", b"Note 3: the tide.")])
    said = await h.fake.wait_for(
        lambda: [m for m in h.fake.channel_messages(CHAN_A) if "files in the last hour" in m["content"]],
        what="the refusal",
    )
    assert said[0]["content"] == "You have added 3 files in the last hour, the most one member may; try again in 60 min."
    token = h.kb_add(h.fake.add_file("n4.md", b"Note 4: the tide."))  # the slash command counts too
    assert "files in the last hour" in text_of((await h.replies_done(token))[0])
    h.user_message(CHAN_A, "", user=BOB, attachments=[h.fake.add_file("bob.md", b"Bob's note: the harbour.")])
    await h.fake.wait_for(lambda: len(h.engine.documents(KB_A)) == 4, what="another member's file added")
    assert sorted(d.name for d in h.engine.documents(KB_A)) == ["bob.md", "n0.md", "n1.md", "n2.md"]
