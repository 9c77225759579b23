"""The channel's own messages in its knowledge base, end to end: /kb add-messages over the fake API's
paged history (pins, forum posts), answers citing a message with its jump link, deletions (one, bulk, a
thread, a channel, a restart that missed one), edits, sync and forget-me (bot/messages.py, bot/sync.py)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from bot.kb import kb_name
from bot.messages import IMPORT_BATCH, MAX_IMPORT, NEEDS_CONTENT, resume_imports
from bot.state import MessageImport
from tests.bot.bot_samples import LIGHTHOUSE
from tests.bot.conftest import ALICE, BOB, CAROL, CHAN_A, CHAN_B, FORUM, GUILD, guild_payload, text_of
from tests.bot.test_bot_flows import add_doc, ask, sources_of
from tests.message_samples import TOPICS

KB_A = kb_name(GUILD, CHAN_A)
GATE = "The gate code for the boathouse is 4417, and the key hangs behind the red door."
DINNER = "Our treasurer moved the annual dinner to the Crown Inn on the ninth of March."
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def chatter(h, channel: int, count: int, *, start: datetime = START, step: float = 7.0) -> list[dict]:
    """`count` members' messages on rotating topics, `step` minutes apart."""
    users = [ALICE, BOB, CAROL]
    return [
        h.fake.post(
            channel,
            f"Note {i}: {TOPICS[i % len(TOPICS)]}, says message {i}.",
            user=users[i % 3],
            when=start + timedelta(minutes=step * i),
        )
        for i in range(count)
    ]


async def imported(h, token: str, timeout: float = 90.0) -> list[dict]:
    """The import's final message, once it says Done (or why it stopped)."""
    replies = await h.fake.wait_for(
        lambda: (r := h.fake.replies(token)) and ("Done" in text_of(r[0]) or "❌" in text_of(r[0])) and r,
        timeout=timeout,
        what="import",
    )
    await h.finished(token)
    return replies


def stored_text(h, kb: str = KB_A) -> str:
    """Every text the store keeps for the knowledge base: nodes of all layers and the messages table."""
    with h.engine.in_space(kb):
        store = h.engine.store
        kb_id = store.kb_id(kb)
        if kb_id is None:
            return ""
        rows = store.db.execute("SELECT text FROM messages WHERE kb_id = ?", [kb_id]).fetchall()
        return " ".join(n.text for n in store.nodes_of_kb(kb_id)) + " ".join(r[0] for r in rows)


def held(h, message: dict, kb: str = KB_A) -> bool:
    return int(message["id"]) in h.engine.message_ids(kb)


async def test_an_import_reads_history_skips_bots_and_system_messages_and_answers_cite_the_message(
    make_harness,
):
    h = await make_harness(message_content=True)
    history = chatter(h, CHAN_B, 40)
    gate = h.fake.post(CHAN_B, GATE, user=BOB, when=START + timedelta(hours=9))
    bot = h.fake.post(
        CHAN_B, "I am a bot: ignore me", user=555, bot=True, when=START + timedelta(hours=9, minutes=1)
    )
    joined = h.fake.post(CHAN_B, "", user=CAROL, mtype=7, when=START + timedelta(hours=9, minutes=2))
    rules = h.fake.post(
        CHAN_B, "Rule one: be kind.", user=ALICE, pinned=True, when=START + timedelta(hours=10)
    )
    token = h.add_messages(CHAN_B, limit=43)  # stops before the pinned message, which joins all the same
    replies = await imported(h, token)
    final = replies[0]["content"]
    assert "Done" in final and "43 messages read, 42 added, 2 skipped" in final
    versions = h.fake.versions[int(replies[0]["id"])]
    assert any("reading" in v or "messages read" in v for v in versions[:-1])  # progress came first
    ids = set(h.engine.message_ids(KB_A))
    assert {int(m["id"]) for m in history + [gate, rules]} == ids
    assert int(bot["id"]) not in ids and int(joined["id"]) not in ids
    assert [d.name for d in h.engine.documents(KB_A)] == ["#docs-b 2026-03-01"]
    _, answer = await ask(h, "What is the gate code for the boathouse?")
    sources = sources_of(answer)
    link = f"https://discord.com/channels/{GUILD}/{CHAN_B}/{gate['id']}"
    assert f"[message by bob, 2026-03-01 18:00 UTC]({link})" in sources
    assert "4417" in answer[0]["content"]


async def test_a_deleted_message_leaves_the_store_the_index_and_later_answers(make_harness):
    h = await make_harness(message_content=True)
    chatter(h, CHAN_A, 30)
    gate = h.fake.post(CHAN_A, GATE, user=BOB, when=START + timedelta(hours=5))
    await imported(h, h.add_messages())
    with h.engine.in_space(KB_A):
        kb_id = h.engine.store.kb_id(KB_A)
        leaves = {n.id for n in h.engine.store.nodes_of_kb(kb_id) if "4417" in n.text}
    _, answer = await ask(h, "What is the gate code for the boathouse?")
    assert "4417" in text_of(answer[0])
    h.delete(gate)
    await h.fake.wait_for(lambda: not held(h, gate), what="the deletion to be applied")
    await h.bot.services.sync.settled()
    assert "4417" not in stored_text(h)
    with h.engine.in_space(KB_A):
        assert not leaves & h.engine.indexes.get(kb_id).ids
    _, again = await ask(h, "What is the gate code for the boathouse?")
    assert "4417" not in text_of(again[0]) and str(gate["id"]) not in sources_of(again)
    # the earlier answer's 'Show context' no longer shows the deleted text
    with h.engine.in_space(KB_A):
        saved = h.engine.store.db.execute("SELECT context_json FROM bot_answers").fetchall()
    assert len(saved) == 2 and all("4417" not in row[0] for row in saved)


async def test_bulk_deletes_edits_and_new_messages_of_a_synced_channel(make_harness):
    h = await make_harness(message_content=True)
    token = h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="sync")
    assert "Sync is now **on**" in (await h.replies_done(token))[0]["content"]
    first = h.say(CHAN_A, GATE, user=BOB)
    second = h.say(CHAN_A, DINNER, user=CAROL)
    third = h.say(CHAN_A, "The ferry timetable changes in April.", user=ALICE)
    await h.fake.wait_for(lambda: all(held(h, m) for m in (first, second, third)), what="synced messages")
    h.edit(third, "The ferry timetable changes in May, not April.")
    await h.fake.wait_for(lambda: "changes in May" in stored_text(h), what="the edit")
    assert "changes in April." not in stored_text(h)
    h.delete(first, second)
    await h.fake.wait_for(lambda: not held(h, first) and not held(h, second), what="the bulk delete")
    await h.bot.services.sync.settled()
    text = stored_text(h)
    assert "4417" not in text and "Crown Inn" not in text and "changes in May" in text
    thread = h.open_thread(CHAN_A, "Ferry questions")
    reply = h.say(thread, "Bikes ride the ferry for free.", user=BOB)
    await h.fake.wait_for(lambda: held(h, reply), what="a thread message")
    assert "Ferry questions" in [d.name for d in h.engine.documents(KB_A)]
    h.delete_thread(thread, CHAN_A)
    await h.fake.wait_for(lambda: not held(h, reply), what="the thread deletion")


async def test_forum_posts_become_documents_and_a_deleted_channel_takes_its_messages(make_harness):
    h = await make_harness(message_content=True)
    active = h.open_thread(FORUM, "How do I join the choir?")
    archived = h.open_thread(FORUM, "Lost keys at the boathouse", archived=True)
    h.fake.post(active, "Come to the chapel on Tuesday at seven.", user=BOB, when=START)
    h.fake.post(archived, GATE, user=CAROL, when=START)
    await imported(h, h.add_messages(FORUM))
    assert {d.name for d in h.engine.documents(KB_A)} == {
        "How do I join the choir?",
        "Lost keys at the boathouse",
    }
    other = h.fake.post(CHAN_B, DINNER, user=ALICE, when=START)
    await imported(h, h.add_messages(CHAN_B))
    assert held(h, other)
    h.delete_channel(CHAN_B)
    await h.fake.wait_for(lambda: not held(h, other), what="the channel's messages to go")
    assert len(h.engine.message_ids(KB_A)) == 2


async def test_forget_me_removes_a_members_messages_and_keeps_them_out(make_harness):
    h = await make_harness(message_content=True)
    chatter(h, CHAN_A, 12)
    await imported(h, h.add_messages())
    bobs = h.engine.message_ids(KB_A, author_id=BOB)
    assert len(bobs) == 4
    token = h.slash("kb", sub="forget-me", user=BOB)
    replies = await h.replies_done(token, lambda r: "Done" in text_of(r[0]))
    assert "4 of your messages were removed" in replies[0]["content"] and replies[0]["flags"] & 64
    assert h.engine.message_ids(KB_A, author_id=BOB) == []
    h.fake.post(CHAN_A, "Bob again: the ferry is late.", user=BOB, when=START + timedelta(days=1))
    await imported(h, h.add_messages())  # a new import leaves the opted-out member out
    assert h.engine.message_ids(KB_A, author_id=BOB) == []
    assert "ferry is late" not in stored_text(h)


async def test_a_restart_applies_a_deletion_made_while_the_bot_was_down(make_harness, bot_settings):
    h = await make_harness(message_content=True)
    chatter(h, CHAN_A, 10)
    gate = h.fake.post(CHAN_A, GATE, user=BOB, when=START + timedelta(hours=3))
    edited = h.fake.post(CHAN_A, "The ferry leaves at six.", user=ALICE, when=START + timedelta(hours=4))
    await imported(h, h.add_messages())
    assert held(h, gate)
    await h.bot.services.state.set_sync(KB_A, GUILD, CHAN_A, True, "alice")
    await h.bot.close()
    h.delete(gate, dispatch=False)  # deleted while the bot was down: it never sees the event
    h.fake.messages[int(edited["id"])]["content"] = "The ferry leaves at eight."
    new = h.fake.post(CHAN_A, DINNER, user=CAROL, when=START + timedelta(hours=5))  # synced: added
    again = await make_harness(message_content=True, settings=bot_settings)
    await again.bot._reconciling
    assert not held(again, gate) and held(again, edited) and held(again, new)
    text = stored_text(again)
    assert "4417" not in text and "leaves at eight" in text and "leaves at six" not in text


async def test_the_message_menu_adds_a_message_without_a_file_and_the_intent_is_needed(make_harness):
    h = await make_harness()
    message = h.full_message(CHAN_A, DINNER, [])
    token = h.context_menu(message)
    replies = await h.replies_done(token, lambda r: "Added" in text_of(r[0]))
    assert "✅ Added the message by alice to **\\#docs-a " in replies[0]["content"]  # the name inert
    assert h.engine.message_ids(KB_A) == [int(message["id"])]
    token = h.add_messages()
    assert (await h.replies_done(token))[0]["content"] == NEEDS_CONTENT
    token = h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="sync")
    assert (await h.replies_done(token))[0]["content"] == NEEDS_CONTENT


async def test_a_long_import_pages_through_history_batch_by_batch_with_progress(make_harness):
    """Four batches of history (twenty pages): every page is read and stored and each batch shows its
    count. The command's most, 10,000 messages, is measured by `raptor bench --messages 10000`."""
    h = await make_harness(message_content=True)
    h.bot.services.status_interval = 0.0  # every batch's count is shown, however fast the machine
    count = 4 * IMPORT_BATCH
    chatter(h, CHAN_B, count, step=0.5)
    token = h.add_messages(CHAN_B, limit=MAX_IMPORT)
    replies = await imported(
        h, token, timeout=1800
    )  # a guard against a hang, not a speed goal (raptor bench)
    assert f"{count:,} messages read, {count:,} added" in replies[0]["content"]
    pages = h.fake.calls_to("GET", rf"^channels/{CHAN_B}/messages$")
    assert len(pages) >= count // 100
    progress = [v for v in h.fake.versions[int(replies[0]["id"])] if "messages read" in v]
    assert [line for line in progress if f"⏳ {IMPORT_BATCH:,} messages read" in line]  # the first batch's count
    assert len(progress) >= 2  # the count went up while it read
    assert len(h.engine.message_ids(kb_name(GUILD, CHAN_A))) == count


async def test_an_import_the_bot_did_not_finish_carries_on_after_a_restart(make_harness, bot_settings):
    h = await make_harness(message_content=True)
    history = chatter(h, CHAN_B, 30)
    # a previous run read the first ten messages, stored them and recorded how far it got, then died
    record = MessageImport(
        0, KB_A, GUILD, CHAN_B, CHAN_A, ALICE, "alice", 20, int(history[9]["id"]), "running"
    )
    record.id = await h.bot.services.state.start_import(record)
    await h.bot.close()
    again = await make_harness(message_content=True, settings=bot_settings)
    await again.bot._reconciling
    assert again.engine.message_ids(KB_A) == [int(m["id"]) for m in history[10:]]
    assert await again.bot.services.state.unfinished_imports(GUILD) == []
    done = [m for m in again.fake.channel_messages(CHAN_A) if m["content"].startswith(f"<@{ALICE}> Done")]
    assert done and "20 messages read, 20 added" in done[-1]["content"]


async def test_status_counts_the_messages_held_and_says_whether_the_channel_syncs(make_harness):
    h = await make_harness(message_content=True)
    chatter(h, CHAN_A, 5)
    await imported(h, h.add_messages())
    token = h.slash("kb", sub="status")
    replies = await h.replies_done(token, lambda r: "Messages here" in text_of(r[0]))
    assert "**Messages here**: 5 held · sync off" in text_of(replies[0])


async def test_deletions_are_handled_on_every_shard(fake_api, bot_settings, embedder):
    """Two shards over the fake gateway: each guild's MESSAGE_DELETE arrives on its own shard's
    connection, and both take the message out of that guild's knowledge base."""
    from bot.client import RaptorBot
    from raptor_engine.engine import Engine
    from raptor_engine.ingest.messages import MessagePlace
    from tests.bot.test_bot_gateway import OTHER_CHANNELS, OTHER_GUILD
    from tests.message_samples import history

    bot_settings.shard_count = 2
    fake_api.max_concurrency = 2
    fake_api.guilds[OTHER_GUILD] = guild_payload(OTHER_GUILD, OTHER_CHANNELS)
    engine = Engine(bot_settings, embedder=embedder)
    held = {}
    for base, guild, channel in ((10_000, GUILD, CHAN_A), (20_000, OTHER_GUILD, OTHER_CHANNELS[0])):
        kb = kb_name(guild, channel)
        messages = history(6, channel=channel, guild=guild, base_id=base)
        for chat in messages:  # in the channel's history too, or the reconcile at start would remove them
            posted = fake_api.post(channel, chat.text, guild=guild)
            del fake_api.messages[int(posted["id"])]
            fake_api.messages[chat.message_id] = dict(posted, id=str(chat.message_id))
        await engine.add_messages(kb, MessagePlace(channel, "docs-a"), messages)
        held[guild] = (kb, channel, base + 5)
    bot = RaptorBot(bot_settings, engine=engine, warm=False)
    running = asyncio.create_task(bot.start("fake-token"))
    try:
        await fake_api.wait_for(
            lambda: bot.get_guild(GUILD) and bot.get_guild(OTHER_GUILD), what="both shards"
        )
        await bot._reconciling
        assert {bot.get_guild(GUILD).shard_id, bot.get_guild(OTHER_GUILD).shard_id} == {0, 1}
        assert all(len(engine.message_ids(kb)) == 6 for kb, _, _ in held.values())
        for guild, (_, channel, deleted) in held.items():
            data = {"id": str(deleted), "channel_id": str(channel), "guild_id": str(guild)}
            await fake_api.dispatch(guild, "MESSAGE_DELETE", data)
        for kb, _, deleted in held.values():
            await fake_api.wait_for(
                lambda kb=kb, d=deleted: d not in engine.message_ids(kb), what=f"deletion in {kb}"
            )
            assert len(engine.message_ids(kb)) == 5
    finally:
        await bot.close()
        await asyncio.wait_for(running, 60)


async def test_the_resume_at_start_leaves_an_import_of_this_run_alone(make_harness):
    h = await make_harness(message_content=True)
    await h.bot._reconciling
    history = chatter(h, CHAN_B, 5)
    services = h.bot.services
    mine = MessageImport(0, KB_A, GUILD, CHAN_B, CHAN_A, ALICE, "alice", 5, None, "running", services.run_id)
    mine.id = await services.state.start_import(mine)  # a command of this run, between its record and reading
    assert await resume_imports(services, h.bot) == 0
    assert h.engine.message_ids(KB_A) == []
    earlier = MessageImport(0, KB_A, GUILD, CHAN_B, CHAN_A, ALICE, "alice", 5, None, "running", "an-earlier-run")
    earlier.id = await services.state.start_import(earlier)
    assert await resume_imports(services, h.bot) == 1
    assert h.engine.message_ids(KB_A) == [int(m["id"]) for m in history]


async def test_an_edit_that_arrives_after_its_deletion_does_not_bring_the_message_back(make_harness):
    """Gateway events of one message may come out of order (an embed's update after the delete): the
    deleted text stays gone in a synced channel, where an edit of an unheld message would add it."""
    h = await make_harness(message_content=True)
    token = h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="sync")
    assert "Sync is now **on**" in (await h.replies_done(token))[0]["content"]
    gate = h.say(CHAN_A, GATE, user=BOB)
    await h.fake.wait_for(lambda: held(h, gate), what="the synced message")
    h.delete(gate)
    h.edit(gate, GATE + " (edited)")
    later = h.say(CHAN_A, DINNER, user=ALICE)  # events are handled in order: this one comes after the edit
    await h.fake.wait_for(lambda: held(h, later), what="a later message")
    await h.bot.services.sync.settled()
    assert not held(h, gate) and "4417" not in stored_text(h)


async def test_an_edited_follow_up_in_the_bots_answer_thread_does_not_join_the_synced_knowledge_base(
    make_harness,
):
    """A conversation with the bot is not the channel's knowledge: its follow-ups are never synced, and
    editing one (a typo fixed) must not add it either, or later answers cite the question as a source."""
    h = await make_harness(message_content=True)
    token = h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="sync")
    assert "Sync is now **on**" in (await h.replies_done(token))[0]["content"]
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    await ask(h, "What signal does the light show?")
    thread = next(t for t in h.bot.get_guild(GUILD).threads).id
    follow_up = h.say(thread, "and in fgo?", user=BOB)
    await h.fake.wait_for(
        lambda: any(m["embeds"] for m in h.fake.channel_messages(thread)), what="the answer to the follow-up"
    )
    h.edit(follow_up, "and in fog?")
    after = h.say(CHAN_A, GATE, user=ALICE)  # synced after the edit was handled
    await h.fake.wait_for(lambda: held(h, after), what="the channel message")
    await h.bot.services.sync.settled()
    assert not held(h, follow_up)
    assert sorted(d.name for d in h.engine.documents(KB_A)) == [f"#docs-a {after['timestamp'][:10]}", "kestrel.md"]
