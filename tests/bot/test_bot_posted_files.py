"""A file added from a message (auto-ingest, the message menu, a history import) is that member's post:
deleting the message, its thread, or editing the file off it takes the document out of the knowledge base
(bot/posted.py), also when a restarted bot built it. A file added with /kb add has no message behind it
and stays."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.adding import POST_GONE
from bot.commands import FORGOTTEN_AUTHOR, FORGOTTEN_POSTER
from bot.state import REMOVED_DOCUMENT
from bot.uploads import Post, Source, UploadLog
from raptor_engine.engine import Engine
from tests.bot.bot_samples import LIGHTHOUSE, SOURDOUGH
from tests.bot.conftest import ALICE, BOB, CHAN_A, CHAN_B, FINISHED, GUILD, NOW, snowflake, text_of
from tests.bot.test_bot_flows import KB_A, add_doc, ask
from tests.bot.test_bot_messages import imported
from tests.bot.test_bot_restart import resumed_message

MILL = "# The mill\n\nThe tide mill at Orrin Creek was built in 1794 by the miller Josiah Fenwick.\n"
NOTES = "# Notes\n\nThe lamp room is swept every morning before the log is written.\n"


def names(h) -> list[str]:
    return sorted(d.name for d in h.engine.documents(KB_A))


async def posted(h, name: str, text: str, channel: int = CHAN_A, user: int = ALICE) -> dict:
    """A member posts a file with auto-ingest on; returns the message once its file is added."""
    attachment = h.fake.add_file(name, text.encode())
    message = h.user_message(channel, "a file", attachments=[attachment], user=user)
    await h.fake.wait_for(
        lambda: any(f"✅ **{name}** added" in text_of(m) for m in h.fake.channel_messages(channel)), what=name
    )
    await h.fake.wait_for(lambda: name in names(h), what=f"{name} stored")
    return message


async def test_deleting_or_editing_away_a_posted_file_removes_its_document(make_harness):
    h = await make_harness(message_content=True)
    await add_doc(h, "bread.txt", SOURDOUGH)  # /kb add: no message behind it
    on = [{"name": "enabled", "type": 5, "value": True}]
    await h.replies_done(h.slash("kb", on, sub="autoingest"))
    kestrel = await posted(h, "kestrel.md", LIGHTHOUSE)
    mill = await posted(h, "mill.md", MILL)
    notes_file = h.fake.add_file("notes.md", NOTES.encode())
    shared = h.full_message(CHAN_A, "notes", [notes_file])
    await h.replies_done(h.context_menu(shared), lambda r: "Done" in text_of(r[0]), what="the menu's add")
    thread = h.open_thread(CHAN_A, "more files")
    await posted(h, "threaded.md", MILL.replace("1794", "1795"), channel=thread)
    assert names(h) == ["bread.txt", "kestrel.md", "mill.md", "notes.md", "threaded.md"]

    h.state.parse_message_delete({"id": kestrel["id"], "channel_id": str(CHAN_A), "guild_id": str(GUILD)})
    await h.fake.wait_for(lambda: "kestrel.md" not in names(h), what="the deleted message's document to go")
    edited = dict(mill, attachments=[], content="no file after all", edited_timestamp=mill["timestamp"])
    h.state.parse_message_update(edited)
    await h.fake.wait_for(lambda: "mill.md" not in names(h), what="the file edited off to go")
    h.state.parse_message_delete_bulk({"ids": [shared["id"]], "channel_id": str(CHAN_A), "guild_id": str(GUILD)})
    await h.fake.wait_for(lambda: "notes.md" not in names(h), what="the menu-added file to go")
    h.delete_thread(thread, CHAN_A)
    await h.fake.wait_for(lambda: "threaded.md" not in names(h), what="the deleted thread's file to go")
    assert names(h) == ["bread.txt"]
    with h.engine.in_space(KB_A):
        stored = " ".join(n.text for n in h.engine.store.nodes_of_kb(h.engine.store.kb_id(KB_A)))
    assert "Fresnel" not in stored and "Josiah" not in stored and "lamp room" not in stored


    async def records_gone() -> bool:
        return await h.bot.services.state.posted_files(GUILD, channel_id=CHAN_A) == []

    await h.fake.wait_for(records_gone, what="the records of the removed files to go")


TAKEN_BACK = {
    "deleted": "its message was deleted",
    "edited": "its message was edited to drop it",
    "thread deleted": "its channel or thread was deleted",
}


@pytest.mark.parametrize("how", list(TAKEN_BACK))
async def test_a_post_taken_back_while_its_file_is_being_added_takes_the_document_once_stored(
    make_harness, caplog, how
):
    """The message deleted, edited to drop the file, or its thread deleted while the file downloads: the
    document leaves as soon as it is stored, and the file's line says so ("🗑️ **kestrel.md** was built and
    then removed: its message was deleted."; a deleted thread has no line left to show). Before, the deleted
    message's line read "✅ **kestrel.md** added" over a document that was gone, and a file edited off, or
    whose thread was deleted, during its build stayed for good (nothing was recorded yet when the event
    came)."""
    caplog.set_level(logging.INFO, logger="bot.posted")
    h = await make_harness(message_content=True)
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    channel = h.open_thread(CHAN_A, "files") if how == "thread deleted" else CHAN_A
    attachment = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    h.fake.held.add(attachment["url"].rsplit("/cdn/", 1)[1])  # its download stalls until released
    message = h.user_message(channel, "a file", attachments=[attachment])
    await h.fake.wait_for(lambda: h.fake.cdn_hits, what="the download to start")
    if how == "deleted":
        h.state.parse_message_delete({"id": message["id"], "channel_id": str(channel), "guild_id": str(GUILD)})
    elif how == "edited":
        h.state.parse_message_update(dict(message, attachments=[], content="no file after all", edited_timestamp=NOW))
    else:
        h.delete_thread(channel, CHAN_A)
    h.fake.release_held.set()
    line = f"🗑️ **kestrel.md** was built and then removed: {TAKEN_BACK[how]}."

    def status() -> str | None:
        done = [text_of(m) for m in h.fake.messages.values() if text_of(m).startswith(FINISHED)]
        return done[-1] if done else None

    async def gone() -> bool:
        return names(h) == [] and await h.bot.services.state.posted_files(GUILD, channel_id=channel) == []

    removal = f"{TAKEN_BACK[how]} while the file was being added"  # built, then removed for that reason
    await h.fake.wait_for(lambda: removal in caplog.text, what="the file to be built and removed")
    await h.fake.wait_for(gone, what="the document to go once stored")
    if how != "thread deleted":  # a deleted thread holds no status message to edit
        said = await h.fake.wait_for(status, what="the upload's final status")
        assert line in said and "✅" not in said, said


async def test_forget_me_takes_the_files_a_member_posted_and_keeps_their_next_ones_out(make_harness):
    h = await make_harness(message_content=True)
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    await posted(h, "kestrel.md", LIGHTHOUSE, user=BOB)
    await posted(h, "mill.md", MILL)  # alice's stays
    token = h.slash("kb", sub="forget-me", user=BOB)
    [reply] = await h.replies_done(token, lambda r: "Done" in text_of(r[0]))
    assert "and 1 document(s) of files you posted were removed" in reply["content"], reply["content"]
    assert names(h) == ["mill.md"]
    later = h.fake.add_file("notes.md", NOTES.encode())
    message = h.user_message(CHAN_A, "more", attachments=[later], user=BOB)
    said = await h.fake.wait_for(
        lambda: [m for m in h.fake.channel_messages(CHAN_A) if text_of(m) == FORGOTTEN_POSTER], what="the refusal"
    )
    assert str((said[0].get("message_reference") or {}).get("message_id")) == message["id"]
    menu = h.context_menu(h.full_message(CHAN_A, "more", [later], user=BOB))
    assert [text_of(m) for m in await h.replies_done(menu)] == [FORGOTTEN_AUTHOR]
    assert names(h) == ["mill.md"] and not any("notes" in hit for hit in h.fake.cdn_hits)


async def test_a_restart_removes_the_files_whose_message_went_while_the_bot_was_down(make_harness, bot_settings):
    h = await make_harness(message_content=True)
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    messages = {}
    for name, text in (("kestrel.md", LIGHTHOUSE), ("mill.md", MILL), ("notes.md", NOTES)):
        messages[name] = h.fake.post(CHAN_A, "a file", attachments=[h.fake.add_file(name, text.encode())])
        h.state.parse_message_create(dict(messages[name]))
        await h.fake.wait_for(lambda n=name: n in names(h), what=f"{name} stored")

    async def recorded() -> bool:
        return len(await h.bot.services.state.posted_files(GUILD, every=True)) == 3

    await h.fake.wait_for(recorded, what="the three files recorded with their messages")
    await h.bot.close()
    del h.fake.messages[int(messages["kestrel.md"]["id"])]  # deleted while the bot was down
    messages["mill.md"]["attachments"] = []  # edited to drop its file
    again = await make_harness(message_content=True, settings=bot_settings)
    await again.bot._reconciling
    assert names(again) == ["notes.md"]
    assert [f.message_id for f in await again.bot.services.state.posted_files(GUILD, every=True)] == [
        int(messages["notes.md"]["id"])
    ]


async def test_a_file_found_by_a_history_import_leaves_with_its_message(make_harness):
    h = await make_harness(message_content=True)
    mill = h.fake.post(CHAN_B, "the mill", user=BOB, attachments=[h.fake.add_file("mill.md", MILL.encode())])
    h.fake.post(CHAN_B, "the notes", user=BOB, attachments=[h.fake.add_file("notes.md", NOTES.encode())])
    await imported(h, h.add_messages(CHAN_B))
    await h.fake.wait_for(lambda: {"mill.md", "notes.md"} <= set(names(h)), what="the history's files added")
    h.state.parse_message_delete({"id": mill["id"], "channel_id": str(CHAN_B), "guild_id": str(GUILD)})
    await h.fake.wait_for(lambda: "mill.md" not in names(h), what="the deleted message's file to go")
    assert "notes.md" in names(h)

    async def one_left() -> bool:
        return len(await h.bot.services.state.posted_files(GUILD, every=True)) == 1

    await h.fake.wait_for(one_left, what="the removed file's record to go")
    [left] = await h.bot.services.state.posted_files(GUILD, every=True)
    assert (left.channel_id, left.author_id) == (CHAN_B, BOB)


async def test_a_posted_file_a_restarted_bot_builds_leaves_with_its_message(make_harness, fake_api, bot_settings):
    """Uploads of posted files the last run did not finish: the one whose message is still there is
    recorded with it (and leaves when it is deleted later); the one whose message went while the bot was
    down is removed as soon as it is built, and its line says why."""
    mill = fake_api.add_file("mill.md", MILL.encode())
    notes = fake_api.add_file("notes.md", NOTES.encode())
    message = fake_api.post(CHAN_A, "a file", attachments=[mill])
    still = Post(CHAN_A, int(message["id"]), int(mill["id"]), ALICE)
    deleted = Post(CHAN_A, snowflake(), int(notes["id"]), ALICE)  # fake Discord answers 404 for it
    log = UploadLog(bot_settings.data_dir / "uploads.db")
    sources = [Source("mill.md", mill["url"], mill["size"], still), Source("notes.md", notes["url"], notes["size"], deleted)]
    log.accept(KB_A, sources, "alice", CHAN_A, ALICE)
    log.close()
    h = await make_harness(message_content=True)
    built = await h.fake.wait_for(lambda: resumed_message(h.fake, "mill.md"), 240, "the resumed mill.md")
    gone = await h.fake.wait_for(lambda: resumed_message(h.fake, "notes.md"), 240, "the resumed notes.md")
    assert "✅ **mill.md** added" in built["content"]
    assert f"🗑️ **notes.md** {POST_GONE}" in gone["content"] and "✅" not in gone["content"]
    assert names(h) == ["mill.md"]
    [record] = await h.bot.services.state.posted_files(GUILD, every=True)
    assert (record.message_id, record.attachment_id) == (still.message_id, still.attachment_id)
    h.state.parse_message_delete({"id": message["id"], "channel_id": str(CHAN_A), "guild_id": str(GUILD)})
    await h.fake.wait_for(lambda: names(h) == [], what="the resumed file to leave with its message")


def test_an_upload_record_keeps_the_message_its_file_was_posted_in(tmp_path):
    log = UploadLog(tmp_path / "uploads.db")
    try:
        post = Post(CHAN_A, 11, 12, ALICE)
        log.accept(KB_A, [Source("a.md", "u", 1, post), Source("b.md", "u", 1)], "alice", CHAN_A, ALICE)
        assert [u.post for u in log.unfinished()] == [post, None]
    finally:
        log.close()


async def test_a_stop_waits_for_a_posted_files_removal_to_redact_its_show_context_pages(
    make_harness, bot_settings, embedder
):
    """A bot stopped while a deleted message's file is being removed finishes the removal first: cut
    between the document's removal and the redaction of the saved answers, its next start would find the
    document gone and leave its text in the 'Show context' pages."""
    secret = "zqxlocker5512"
    h = await make_harness(message_content=True)
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    message = await posted(h, "lockers.md", f"# Lockers\n\nThe locker combination is {secret}, kept by the warden.\n")
    answer = await h.replies_done(h.ask("What is the locker combination?", private=True))
    assert secret in text_of(answer[0])
    entered, release = asyncio.Event(), asyncio.Event()
    forget = h.engine.forget

    async def gated_forget(kb: str, document: str, **options):
        entered.set()
        await release.wait()
        return await forget(kb, document, **options)

    h.engine.forget = gated_forget
    h.state.parse_message_delete({"id": message["id"], "channel_id": str(CHAN_A), "guild_id": str(GUILD)})
    await asyncio.wait_for(entered.wait(), 60)
    stopping = asyncio.create_task(h.bot.shutdown())
    await h.fake.wait_for(lambda: h.bot.services.jobs.closing, what="the bot to start stopping")
    release.set()
    await asyncio.wait_for(stopping, 120)
    engine = Engine(bot_settings, embedder=embedder)
    try:
        assert [d.name for d in engine.documents(KB_A)] == []
        with engine.in_space(KB_A):
            pages = [r[0] for r in engine.store.db.execute("SELECT context_json FROM bot_answers").fetchall()]
    finally:
        engine.close()
    assert pages and all(secret not in page for page in pages) and any(REMOVED_DOCUMENT in p for p in pages)


async def test_a_follow_up_after_the_cited_files_message_was_deleted_names_the_file(make_harness):
    """The thread's answer cited a posted file; its message is deleted (the document goes with it); the
    follow-up's answer, from what remains, says that kestrel.md was removed."""
    h = await make_harness(message_content=True)
    await add_doc(h, "bread.txt", SOURDOUGH)
    on = [{"name": "enabled", "type": 5, "value": True}]
    await h.replies_done(h.slash("kb", on, sub="autoingest"))
    kestrel = await posted(h, "kestrel.md", LIGHTHOUSE)
    _, replies = await ask(h, "What is the lighthouse lens made of?")
    assert "kestrel.md" in str(replies[-1]["embeds"])
    thread = next(t for t in h.bot.get_guild(GUILD).threads).id

    h.state.parse_message_delete({"id": kestrel["id"], "channel_id": str(CHAN_A), "guild_id": str(GUILD)})
    await h.fake.wait_for(lambda: "kestrel.md" not in names(h), what="the deleted message's document to go")
    h.user_message(thread, "And how is the bread baked?", mention_bot=True)
    answer = await h.fake.wait_for(
        lambda: next((m for m in h.fake.channel_messages(thread) if m["embeds"]), None), what="the follow-up"
    )
    notice = "⚠️ The document “kestrel.md”, cited by an earlier answer in this thread, was removed"
    assert notice in answer["content"], answer["content"]
    # what the bot keeps no longer names the file nor quotes it: the thread's answer that cited it is a
    # note, the notice said its name and the records dropped it, the upload log's finished row went
    def named() -> list[str]:
        return [row for row in bot_rows(h, KB_A) if "kestrel" in row.casefold()]

    await h.fake.wait_for(lambda: not named(), what="the removal's redaction")  # it runs after the document goes
    kept = bot_rows(h, KB_A)
    assert any(REMOVED_DOCUMENT in row for row in kept)
    with h.bot.services.jobs.uploads._using():
        rows = h.bot.services.jobs.uploads.db.execute("SELECT kb, filename, url FROM uploads").fetchall()
    assert rows and not [r for r in rows if "kestrel" in str(r).casefold()], rows


def bot_rows(h, kb: str) -> list[str]:
    """Every text the bot's own tables hold about `kb`'s threads and saved answers, one string per row."""
    with h.engine.in_space(kb):
        db = h.engine.store.db
        turns = db.execute("SELECT role, content, coalesce(documents, '') FROM bot_turns").fetchall()
        answers = db.execute("SELECT question, context_json FROM bot_answers WHERE kb = ?", [kb]).fetchall()
    return [" | ".join(map(str, row)) for row in [*turns, *answers]]
