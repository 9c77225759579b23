"""The bot end to end: real discord.py objects against the fake Discord API, over a real Engine
(real embedder, real SQLite and hnswlib in tmp_path)."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path

import pytest

from bot.kb import kb_name
from bot.render import human_time
from raptor_engine.errors import BackendError
from raptor_engine.query.support import NOT_ANSWERED_SOURCES
from raptor_engine.tree.summarize import ExtractiveSummarizer
from raptor_engine.types import AnswerDraft
from tests.bot.bot_samples import LIGHTHOUSE, SOURDOUGH
from tests.bot.conftest import (
    ALICE,
    BOB,
    CAROL,
    CHAN_A,
    CHAN_B,
    FORUM,
    GUILD,
    MANAGER_ROLE,
    custom_ids,
    snowflake,
    text_of,
    thread_payload,
    upload_finished,
)

KB_A = kb_name(GUILD, CHAN_A)
KB_B = kb_name(GUILD, CHAN_B)


async def add_doc(h, name: str, text: str, channel: int = CHAN_A) -> list[dict]:
    """Add one file with /kb add; its status once finished, whatever became of the file."""
    attachment = h.fake.add_file(name, text.encode())
    token = h.kb_add(attachment, channel=channel)
    replies = await h.replies_done(
        token, lambda r: upload_finished(r[0]), what=f"adding {name}"
    )
    await h.finished(token)
    return replies


async def ask(h, question: str, channel: int = CHAN_A, **kwargs) -> tuple[str, list[dict]]:
    token = h.ask(question, channel=channel, **kwargs)
    replies = await h.replies_done(
        token, lambda r: any(custom_ids(m) or "⚠️" in text_of(m) for m in r), what="an answer"
    )
    await h.finished(token)
    return token, replies


async def _turns(h, thread_id: int, count: int) -> list | None:
    history = await h.bot.services.state.history(GUILD, thread_id)
    return history if len(history) >= count else None


def sources_of(replies: list[dict]) -> str:
    return "\n".join(
        e.get("description") or ""
        for m in replies
        for e in m.get("embeds") or []
        if e.get("title", "").startswith(("Sources", NOT_ANSWERED_SOURCES))
    )


# ---------------------------------------------------------------------------------------------- adding


async def test_add_file_by_slash_command_defers_shows_progress_and_completes(harness):
    h = harness
    attachment = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    token = h.kb_add(attachment)
    replies = await h.replies_done(token, lambda r: "Done" in text_of(r[0]), what="the build")
    callbacks = h.fake.calls_to("POST", r"^interactions/.*/callback$")
    assert callbacks[0].body["type"] == 5  # deferred ('thinking') before any slow work
    original = replies[0]
    assert "✅ **kestrel.md** added:" in original["content"]
    versions = h.fake.versions[int(original["id"])]
    assert any("queued" in v or "downloading" in v for v in versions[1:-1])  # progress edits came first
    assert versions[-1] == original["content"]
    docs = h.engine.documents(KB_A)
    assert [(d.name, d.added_by) for d in docs] == [("kestrel.md", "alice")]
    assert h.fake.cdn_hits == [attachment["url"].rsplit("/", 1)[1]]  # the bytes were read once


async def test_a_renamed_copy_is_named_with_the_document_it_repeats(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    replies = await add_doc(h, "kestrel (1).md", LIGHTHOUSE)  # the same bytes under another name
    assert (
        "↩️ **kestrel (1).md** is already in this knowledge base as **kestrel.md** (same content)"
        in replies[0]["content"]
    )
    again = await add_doc(h, "kestrel.md", LIGHTHOUSE)
    assert "↩️ **kestrel.md** is already in this knowledge base (same content)" in again[0]["content"]
    resaved = await add_doc(h, "kestrel.txt", "\ufeff" + LIGHTHOUSE.replace("\n", " \r\n"))  # other bytes
    assert (
        "↩️ **kestrel.txt** is already in this knowledge base as **kestrel.md** (same content)"
        in resaved[0]["content"]
    )
    assert [d.name for d in h.engine.documents(KB_A)] == ["kestrel.md"]


async def test_add_from_message_context_menu(harness):
    h = harness
    attachment = h.fake.add_file("bread.txt", SOURDOUGH.encode())
    message = h.full_message(CHAN_A, "our bakery notes", [attachment])
    token = h.context_menu(message)
    replies = await h.replies_done(token, lambda r: "Done" in text_of(r[0]))
    assert "✅ **bread.txt** added" in replies[0]["content"]
    assert [d.name for d in h.engine.documents(KB_A)] == ["bread.txt"]


async def test_adding_without_permission_is_refused_and_a_manager_role_allows_it(make_harness, bot_settings):
    bot_settings.manager_role = "KB Managers"
    h = await make_harness(settings=bot_settings)
    attachment = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    token = h.kb_add(attachment, user=BOB)
    replies = await h.replies_done(token)
    assert replies[0]["flags"] & 64  # ephemeral
    assert (
        "You need the Manage Messages permission in this channel or the 'KB Managers' role"
        in replies[0]["content"]
    )
    assert h.fake.cdn_hits == [] and h.engine.documents(KB_A) == []

    token = h.kb_add(attachment, user=CAROL, roles=[MANAGER_ROLE])
    replies = await h.replies_done(token, lambda r: "Done" in text_of(r[0]))
    assert "✅ **kestrel.md** added" in replies[0]["content"]
    assert [d.added_by for d in h.engine.documents(KB_A)] == ["carol"]


@pytest.mark.parametrize(
    ("name", "data", "size", "expected"),
    [
        ("huge.txt", b"small body", 5_000_000, "over the"),
        ("tool.exe", b"MZ\x90\x00", None, "unsupported file type"),
    ],
)
async def test_oversized_or_wrong_type_refused_before_download(harness, name, data, size, expected):
    h = harness
    attachment = h.fake.add_file(name, data, size=size)
    token = h.kb_add(attachment)
    replies = await h.replies_done(token)
    assert replies[0]["flags"] & 64
    assert "Nothing was added" in replies[0]["content"] and expected in replies[0]["content"]
    assert h.fake.cdn_hits == []  # refused from the metadata, never downloaded
    assert h.engine.documents(KB_A) == []


async def test_corrupt_or_lying_attachments_refused_and_nothing_stored(harness):
    h = harness
    corrupt = h.fake.add_file(
        "report.pdf", b"%PDF-1.7 this is not really a pdf at all", content_type="application/pdf"
    )
    liar = h.fake.add_file("big.txt", b"word " * 40_000, size=1000)  # claims 1 KB, serves 200 KB
    token = h.kb_add(corrupt, liar)
    replies = await h.replies_done(token, lambda r: "Nothing added" in text_of(r[0]))
    content = replies[0]["content"]
    assert "❌ **report.pdf**" in content and "Nothing was stored" in content
    assert "❌ **big.txt** is larger than the" in content
    assert "Nothing added: 2 files could not be added." in content
    assert h.engine.documents(KB_A) == []
    assert all(layer.nodes == 0 for layer in h.engine.tree_info(KB_A).layers)


# ---------------------------------------------------------------------------------------------- asking


async def test_ask_answers_with_sources_opens_thread_and_follow_up_uses_parent_kb(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    token, replies = await ask(h, "How is the lens of the lighthouse cleaned?")
    assert h.fake.calls_to("POST", r"^interactions/")[-1].body["type"] == 5
    answer = replies[-1]
    assert re.search(r"\[\d+\]", "".join(m["content"] for m in replies))
    sources = sources_of(replies)
    assert re.search(r"\*\*\[1\]\*\* L\d (leaf|summary) · node \d+ · kestrel\.md", sources)
    assert "L0 leaf" in sources or "summary" in sources
    footer = answer["embeds"][-1]["footer"]["text"]
    assert re.match(r"Context: (L\d+×\d+ · )+[\d,]+/2,000 tokens · collapsed · ", footer)
    assert any(i.startswith("raptor:ctx:") for i in custom_ids(answer))

    thread_calls = h.fake.calls_to("POST", rf"^channels/{CHAN_A}/messages/\d+/threads$")
    assert (
        len(thread_calls) == 1
        and thread_calls[0].body["name"] == "How is the lens of the lighthouse cleaned?"
    )
    thread = next(t for t in h.bot.get_guild(GUILD).threads)
    assert thread.parent_id == CHAN_A

    # without the message-content intent a plain message arrives empty and is left alone; a mention works
    h.user_message(thread.id, "and when was the tower built?")
    h.user_message(thread.id, "and when was the tower built?", mention_bot=True)
    reply = await h.fake.wait_for(
        lambda: [m for m in h.fake.channel_messages(thread.id) if m["embeds"]], what="follow-up"
    )
    assert len(h.fake.channel_messages(thread.id)) == 1
    follow = reply[0]
    assert "kestrel.md" in text_of(follow) and "1871" in follow["content"]
    assert follow.get("message_reference")  # a reply to the question
    history = await h.fake.wait_for(
        lambda: _turns(h, thread.id, 4), what="the follow-up's turns to be stored"
    )
    assert [t.role for t in history] == ["user", "assistant", "user", "assistant"]
    assert history[2].content == "and when was the tower built?"


async def test_follow_up_without_mention_when_the_intent_is_on(make_harness):
    h = await make_harness(message_content=True)
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    await ask(h, "What signal does the light show?")
    thread = next(t for t in h.bot.get_guild(GUILD).threads)
    h.user_message(thread.id, "What happens in fog?")
    reply = await h.fake.wait_for(lambda: h.fake.channel_messages(thread.id), what="follow-up")
    assert "diaphone" in reply[0]["content"] or "fog" in reply[0]["content"].lower()


async def test_show_context_is_private_paged_and_bound_to_its_channel(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    await add_doc(h, "bread.txt", SOURDOUGH, channel=CHAN_B)
    _, replies = await ask(h, "Tell me about the lamp, the lens, the cleaning and the keepers.")
    answer = replies[-1]
    button = next(i for i in custom_ids(answer) if i.startswith("raptor:ctx:"))
    token = h.click(answer, button)
    page = (await h.replies_done(token))[0]
    assert page["flags"] & 64
    embed = page["embeds"][0]
    assert embed["title"].startswith("Context for: Tell me about the lamp")
    assert "**[1]**" in embed["description"] and "kestrel.md" in embed["description"]
    footer = embed["footer"]["text"]
    pages = int(re.match(r"Page 1/(\d+)", footer).group(1))
    if pages > 1:
        nxt = next(i for i in custom_ids(page) if i.endswith(":n"))
        token2 = h.click(page, nxt)
        await h.fake.wait_for(lambda: h.fake.tokens[token2].responded)
        assert h.fake.calls_to("POST", rf"^interactions/\d+/{token2}/callback$")[0].body["type"] == 7
        assert h.fake.messages[int(page["id"])]["embeds"][0]["footer"]["text"].startswith("Page 2/")

    # the same button clicked in another channel cannot reveal this channel's nodes
    token3 = h.click(answer, button, channel=CHAN_B)
    refused = (await h.replies_done(token3))[0]
    assert "no longer available" in refused["content"] and not refused["embeds"]


async def test_two_channels_are_isolated(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE, channel=CHAN_A)
    await add_doc(h, "bread.txt", SOURDOUGH, channel=CHAN_B)
    _, in_b = await ask(h, "How is the lighthouse lens cleaned?", channel=CHAN_B)
    _, in_a = await ask(h, "How long are the loaves baked?", channel=CHAN_A)
    assert "bread.txt" in sources_of(in_b) and "kestrel" not in "".join(text_of(m) for m in in_b)
    assert "kestrel.md" in sources_of(in_a) and "bread" not in "".join(text_of(m) for m in in_a).lower()
    assert [d.name for d in h.engine.documents(KB_A)] == ["kestrel.md"]
    assert [d.name for d in h.engine.documents(KB_B)] == ["bread.txt"]


async def test_empty_knowledge_base_gets_help(harness):
    h = harness
    token = h.ask("Anything here?", channel=CHAN_B)
    replies = await h.replies_done(token)
    assert "has no documents yet" in replies[0]["content"] and "/kb add" in replies[0]["content"]
    from raptor_engine.ingest.load import file_kinds

    # the kinds read, in a few words (it listed 32 extensions, 358 characters)
    assert file_kinds() in replies[0]["content"] and len(replies[0]["content"]) < 260, replies[0]["content"]
    assert not h.fake.calls_to("POST", r"/threads$")
    # only the asker sees it: the public 'thinking…' was withdrawn and the sentence sent privately
    assert [m["flags"] & 64 for m in replies] == [64]
    assert [m for m in h.fake.channel_messages(CHAN_B) if not m["flags"] & 64] == []


class LongAnswerer:
    """An answerer that writes a long answer citing every node, to exercise the 2,000-character split."""

    name = "long-test-answerer"

    async def answer(self, question, context, history):
        sentences = [
            f"Point {i} about the station is recorded in the manual [{(i % len(context)) + 1}]."
            for i in range(120)
        ]
        return AnswerDraft(text=" ".join(sentences))

    async def condense(self, question, history):
        return question


async def test_long_answer_is_split_within_2000_characters(make_harness):
    h = await make_harness(answerer=LongAnswerer())
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    token, replies = await ask(h, "Everything about the station?")
    assert len(replies) >= 3
    assert all(len(m["content"]) <= 2000 for m in replies)
    joined = " ".join(m["content"] for m in replies)
    assert joined.count("Point ") == 120 and "Point 119 about the station" in joined
    assert all(
        re.search(r"\[\d+\]\.$", m["content"]) for m in replies if m["content"]
    )  # cut between sentences
    assert replies[-1]["embeds"] and custom_ids(replies[-1])  # sources and button on the last message
    assert not any(m["embeds"] for m in replies[:-1])


class FlakySummarizer(ExtractiveSummarizer):
    """The real extractive summariser, failing on demand like an LLM backend that gives up."""

    fail = False

    async def summarize_many(self, requests):
        if self.fail:
            raise BackendError("The summarisation backend failed after its retries.")
        return await super().summarize_many(requests)


async def test_failed_build_leaves_the_previous_tree_answering(make_harness, embedder):
    summarizer = FlakySummarizer(embedder.count_tokens)
    h = await make_harness(summarizer=summarizer)
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    before = h.engine.tree_info(KB_A)
    assert any(layer.kind != "leaf" for layer in before.layers)  # the summariser really ran
    summarizer.fail = True
    replies = await add_doc(h, "bread.txt", SOURDOUGH)
    assert "❌ **bread.txt** was not added: The summarisation backend failed" in replies[0]["content"]
    assert [d.name for d in h.engine.documents(KB_A)] == ["kestrel.md"]
    assert h.engine.tree_info(KB_A) == before
    _, answer = await ask(h, "How is the lens cleaned?")
    assert "kestrel.md" in sources_of(answer)


# ---------------------------------------------------------------------------------------------- Discord failures


async def test_expired_interaction_falls_back_to_a_channel_message(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    token = h.ask("When was the tower built?", user=ALICE)
    h.fake.expired.add(token)  # Discord answers 10062: the 3 seconds had passed
    messages = await h.fake.wait_for(
        lambda: [m for m in h.fake.channel_messages(CHAN_A) if m["embeds"] and not m.get("webhook_id")],
        what="fallback",
    )
    assert h.fake.calls_to("POST", rf"/{token}/callback$")[0].status == 404
    assert messages[0]["content"].startswith(f"<@{ALICE}> ")  # names the asker; mentions are suppressed
    assert "kestrel.md" in sources_of(messages)


async def test_build_outliving_the_token_reports_in_the_channel(harness):
    h = harness
    attachment = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    token = h.kb_add(attachment)
    h.fake.expire_after_callback.add(token)  # the token dies right after the defer
    done = await h.fake.wait_for(
        lambda: [m for m in h.fake.channel_messages(CHAN_A) if "Done" in m["content"]], what="channel status"
    )
    assert done[0]["content"].startswith(f"<@{ALICE}> ") and "✅ **kestrel.md** added" in done[0]["content"]
    assert h.fake.calls_to("PATCH", rf"^webhooks/.*/{token}/messages/@original$")[0].status == 404
    assert [d.name for d in h.engine.documents(KB_A)] == ["kestrel.md"]


async def test_rate_limits_are_waited_out_and_missing_thread_permission_is_explained(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    h.fake.rate_limit_once("PATCH", r"^webhooks/")
    h.fake.forbid("POST", r"/threads$")
    token, replies = await ask(h, "What does the relief keeper bring?")
    assert [c.status for c in h.fake.calls_to("PATCH", rf"^webhooks/\d+/{token}/")][:2] == [429, 200]
    assert sources_of(replies)
    note = await h.fake.wait_for(
        lambda: [m for m in h.fake.followups(token) if "Create Public Threads" in m["content"]]
    )
    assert note[0]["flags"] & 64
    assert await h.bot.services.state.count("bot_threads", guild_id=GUILD) == 0


async def test_ask_cooldown_per_user(make_harness, bot_settings):
    bot_settings.ask_cooldown_seconds = 3600
    h = await make_harness(settings=bot_settings)
    first = h.ask("anything?")
    await h.replies_done(first)
    second = h.ask("again?")
    refused = (await h.replies_done(second))[0]
    assert refused["flags"] & 64 and refused["content"].startswith("You're asking too quickly; try again in")
    other = h.ask("me too?", user=BOB)
    assert "no documents" in (await h.replies_done(other))[0]["content"]


# ---------------------------------------------------------------------------------------------- managing


async def test_remove_with_autocomplete_and_confirm(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    await add_doc(h, "bread.txt", SOURDOUGH)
    token = h.autocomplete("remove", "document", "KEST")
    await h.fake.wait_for(lambda: h.fake.tokens[token].autocomplete is not None)
    assert h.fake.tokens[token].autocomplete == [{"name": "kestrel.md", "value": "kestrel.md"}]

    token = h.slash("kb", [{"name": "document", "type": 3, "value": "nope.md"}], sub="remove")
    assert "no document named 'nope.md'" in (await h.replies_done(token))[0]["content"]

    token = h.slash("kb", [{"name": "document", "type": 3, "value": "kestrel.md"}], sub="remove", user=BOB)
    assert "Manage Messages" in (await h.replies_done(token))[0]["content"]

    token = h.slash("kb", [{"name": "document", "type": 3, "value": "kestrel.md"}], sub="remove")
    prompt = (await h.replies_done(token))[0]
    assert prompt["flags"] & 64 and custom_ids(prompt) == ["raptor:confirm", "raptor:cancel"]
    h.click(prompt, "raptor:confirm", user=BOB)  # someone else cannot confirm
    click = h.click(prompt, "raptor:confirm")
    await h.fake.wait_for(lambda: "Removed" in h.fake.messages[int(prompt["id"])]["content"], what="removal")
    assert [d.name for d in h.engine.documents(KB_A)] == ["bread.txt"]
    assert h.fake.tokens[click].responded


async def test_a_new_version_under_the_same_name_can_be_removed_on_its_own(harness):
    """A file posted again with new content is a second document of that name: autocomplete offers each,
    told apart by when it was added, and removing one leaves the other."""
    h = harness
    first = await add_doc(h, "notes.md", LIGHTHOUSE)
    assert "earlier" not in first[0]["content"]
    second = await add_doc(h, "notes.md", SOURDOUGH)
    old, new = h.engine.documents(KB_A)
    assert (
        f"An earlier **notes.md** (added {human_time(old.added_at)}) is still here too: "
        "/kb remove it if this one replaces it."
    ) in second[0]["content"]
    token = h.autocomplete("remove", "document", "notes")
    await h.fake.wait_for(lambda: h.fake.tokens[token].autocomplete is not None)
    choices = h.fake.tokens[token].autocomplete
    assert [c["value"] for c in choices] == [old.sha256[:16], new.sha256[:16]]
    assert all(c["name"].startswith("notes.md · added ") for c in choices) and choices[0]["name"] != choices[1]["name"]

    token = h.slash("kb", [{"name": "document", "type": 3, "value": "notes.md"}], sub="remove")
    assert "Several documents are named 'notes.md'" in (await h.replies_done(token))[0]["content"]

    token = h.slash("kb", [{"name": "document", "type": 3, "value": choices[0]["value"]}], sub="remove")
    prompt = (await h.replies_done(token))[0]
    assert "Remove **notes.md** (added " in prompt["content"]
    h.click(prompt, "raptor:confirm")
    await h.fake.wait_for(lambda: "Removed" in h.fake.messages[int(prompt["id"])]["content"], what="removal")
    assert [d.sha256 for d in h.engine.documents(KB_A)] == [new.sha256]


async def test_list_tree_status_and_clear(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    listing = (await h.replies_done(h.slash("kb", sub="list", user=BOB)))[0]
    assert "**kestrel.md**" in text_of(listing) and "added by alice" in text_of(listing)
    tree = (await h.replies_done(h.slash("kb", sub="tree", user=BOB)))[0]
    assert "**L0**:" in text_of(tree) and "leaves" in text_of(tree)
    status = (await h.replies_done(h.slash("kb", sub="status", user=BOB)))[0]
    assert "**Backend**: extractive" in text_of(status) and "1 document(s)" in text_of(status)
    prompt = (await h.replies_done(h.slash("kb", sub="clear")))[0]
    h.click(prompt, "raptor:confirm")
    await h.fake.wait_for(lambda: "Cleared" in h.fake.messages[int(prompt["id"])]["content"], what="clear")
    assert h.engine.documents(KB_A) == []


async def test_auto_ingest_needs_a_manager_and_adds_uploads(make_harness):
    h = await make_harness(message_content=True)
    refused = (
        await h.replies_done(
            h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest", user=BOB)
        )
    )[0]
    assert "Manage Messages" in refused["content"]
    on = (
        await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    )[0]
    assert "Auto-ingest is now **on**" in on["content"]
    attachment = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    picture = h.fake.add_file("photo.png", b"\x89PNG", content_type="image/png")
    h.user_message(CHAN_A, "the manual", attachments=[attachment, picture])
    done = await h.fake.wait_for(
        lambda: [m for m in h.fake.channel_messages(CHAN_A) if "Done" in m["content"]]
    )
    assert "✅ **kestrel.md** added" in done[0]["content"] and "photo" not in done[0]["content"]
    assert [d.name for d in h.engine.documents(KB_A)] == ["kestrel.md"]
    assert all("photo" not in hit for hit in h.fake.cdn_hits)


async def test_auto_ingest_without_the_intent_says_what_degrades(harness):
    h = harness
    on = (
        await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    )[0]
    assert "without the message-content intent" in on["content"]


async def test_channel_delete_and_guild_leave_drop_the_knowledge_bases(harness, bot_settings):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE, channel=CHAN_A)
    await add_doc(h, "bread.txt", SOURDOUGH, channel=CHAN_B)
    await ask(h, "How is the lens cleaned?")
    h.state.parse_channel_delete(
        {"id": str(CHAN_A), "type": 0, "guild_id": str(GUILD), "name": "docs-a", "position": 0}
    )
    await h.fake.wait_for(lambda: KB_A not in h.engine.knowledge_bases(), what="channel KB deletion")
    assert KB_B in h.engine.knowledge_bases()
    assert (
        await h.bot.services.state.count("bot_answers", guild_id=GUILD, kb=KB_A) == 0
    )  # the bot's copies went too
    assert await h.bot.services.state.count("bot_threads", guild_id=GUILD) == 0
    h.state.parse_guild_delete({"id": str(GUILD)})
    await h.fake.wait_for(lambda: not h.engine.knowledge_bases(), what="guild KB deletion")
    await h.fake.wait_for(
        lambda: not (Path(bot_settings.data_dir) / "guilds" / str(GUILD)).exists(),
        what="guild store deletion",
    )
    root = sqlite3.connect(Path(bot_settings.data_dir) / "raptor.db")
    try:  # the server's settings, threads and answers were in its directory: the root file keeps none
        tables = [
            r[0]
            for r in root.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'bot%'")
        ]
        assert all(root.execute(f"SELECT count(*) FROM {t}").fetchone()[0] == 0 for t in tables)
    finally:
        root.close()


async def test_sync_sends_every_command_to_the_development_guild(make_harness, bot_settings):
    bot_settings.discord_dev_guild = str(GUILD)
    h = await make_harness(settings=bot_settings)
    await h.bot.sync_commands()
    commands = {c["name"]: c for c in h.fake.synced[f"guild-{GUILD}"]}
    assert set(commands) == {"ask", "kb", "Add to knowledge base"}
    assert commands["Add to knowledge base"]["type"] == 3
    subs = {o["name"] for o in commands["kb"]["options"]}
    assert subs == {
        "add", "list", "remove", "clear", "tree", "status", "autoingest", "managers", "add-messages", "sync",
        "forget-me",
    }
    add = next(o for o in commands["kb"]["options"] if o["name"] == "add")
    assert [o["type"] for o in add["options"]] == [11, 11, 11, 11, 11]
    history = next(o for o in commands["kb"]["options"] if o["name"] == "add-messages")
    assert [(o["name"], o["type"]) for o in history["options"]] == [("channel", 7), ("limit", 4), ("after", 3)]
    limit = history["options"][1]
    assert (limit["min_value"], limit["max_value"]) == (1, 10_000)
    assert "global" not in h.fake.synced


class GatedSummarizer(ExtractiveSummarizer):
    """The real extractive summariser, holding a build at its first summary until the test opens the gate."""

    def __init__(self, count_tokens):
        super().__init__(count_tokens)
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()

    async def summarize_many(self, requests):
        self.entered.set()
        await self.gate.wait()
        return await super().summarize_many(requests)


async def test_build_slots_are_capped_with_a_clear_waiting_message(make_harness, bot_settings, embedder):
    bot_settings.max_concurrent_builds = 1
    summarizer = GatedSummarizer(embedder.count_tokens)
    h = await make_harness(settings=bot_settings, summarizer=summarizer)
    first = h.kb_add(h.fake.add_file("kestrel.md", LIGHTHOUSE.encode()), channel=CHAN_A)
    await asyncio.wait_for(summarizer.entered.wait(), 120)
    second = h.kb_add(h.fake.add_file("bread.txt", SOURDOUGH.encode()), channel=CHAN_B)
    await h.fake.wait_for(
        lambda: (
            "waiting for a build slot (1 builds running, limit 1)"
            in (h.fake.original(second) or {}).get("content", "")
        ),
        what="the waiting message",
    )
    status = (await h.replies_done(h.slash("kb", sub="status", user=BOB, channel=CHAN_B)))[0]
    assert "1 of 1 build slots in use, 1 file(s) waiting" in text_of(status)
    early = (await h.replies_done(h.ask("What is the lens made of?", user=BOB)))[0]
    assert "first document is still being added" in early["content"]
    summarizer.gate.set()
    for token in (first, second):
        await h.replies_done(token, lambda r: "Done" in text_of(r[0]))
    assert [d.name for d in h.engine.documents(KB_B)] == ["bread.txt"]


async def test_shutdown_lets_a_running_build_finish_and_refuses_new_ones(
    make_harness, bot_settings, embedder
):
    summarizer = GatedSummarizer(embedder.count_tokens)
    h = await make_harness(summarizer=summarizer)
    first = h.kb_add(h.fake.add_file("kestrel.md", LIGHTHOUSE.encode()))
    await asyncio.wait_for(summarizer.entered.wait(), 120)
    stopping = asyncio.create_task(h.bot.shutdown())
    await h.fake.wait_for(lambda: h.bot.services.jobs.closing)
    late = h.kb_add(h.fake.add_file("bread.txt", SOURDOUGH.encode()), channel=CHAN_B)
    refused = (await h.replies_done(late))[0]
    assert refused["flags"] & 64 and "restarting" in refused["content"]
    assert not stopping.done()  # still waiting for the running build
    summarizer.gate.set()
    await asyncio.wait_for(stopping, 120)
    assert h.bot.is_closed()
    assert "✅ **kestrel.md** added" in h.fake.original(first)["content"]
    with sqlite3.connect(h.engine.spaces.files_of(KB_A)[0]) as conn:  # the server's own store
        assert conn.execute("select name from documents").fetchall() == [("kestrel.md",)]


async def test_ask_inside_a_bot_thread_continues_its_conversation(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    await ask(h, "What signal does the light show?")
    thread = next(t for t in h.bot.get_guild(GUILD).threads)
    _, replies = await ask(h, "And in fog?", channel=thread.id)
    assert "kestrel.md" in sources_of(replies)
    assert len(h.fake.calls_to("POST", r"/threads$")) == 1  # no thread inside the thread
    assert [t.content for t in await h.bot.services.state.history(GUILD, thread.id)][::2] == [
        "What signal does the light show?",
        "And in fog?",
    ]


async def test_forum_post_uses_the_forum_knowledge_base(harness):
    h = harness
    post = snowflake()
    h.state.parse_thread_create(
        dict(thread_payload(post, FORUM, "Questions about the light", owner=ALICE), newly_created=True)
    )
    replies = await add_doc(h, "kestrel.md", LIGHTHOUSE, channel=post)
    assert "✅ **kestrel.md** added" in replies[0]["content"]
    assert [d.name for d in h.engine.documents(kb_name(GUILD, FORUM))] == ["kestrel.md"]
    assert h.engine.documents(kb_name(GUILD, post)) == []
    _, answer = await ask(h, "How often is the brass polished?", channel=post)
    assert "kestrel.md" in sources_of(answer)
    assert not h.fake.calls_to("POST", r"/threads$")  # a post is already a thread


async def test_a_channel_deleted_while_its_file_builds_keeps_no_knowledge_base(make_harness, embedder):
    """The channel goes while its upload is mid-build and another waits: its knowledge base is deleted
    and stays deleted (the running build does not bring it back when it commits, the waiting file is
    not built into it), and neither file is reported added."""
    summarizer = GatedSummarizer(embedder.count_tokens)
    h = await make_harness(summarizer=summarizer)
    await add_doc(h, "notes.md", "# Notes\n\nThe lamp room is swept every morning before the log is written.")
    token = h.kb_add(
        h.fake.add_file("kestrel.md", LIGHTHOUSE.encode()), h.fake.add_file("bread.txt", SOURDOUGH.encode())
    )
    await asyncio.wait_for(summarizer.entered.wait(), 120)
    jobs = h.bot.services.jobs
    h.delete_channel(CHAN_A)
    await h.fake.wait_for(lambda: jobs.deletion_count(KB_A), what="the deletion to begin")
    summarizer.gate.set()
    await h.finished(token)
    await h.fake.wait_for(lambda: KB_A not in h.engine.knowledge_bases(), what="the deletion to end")
    [status] = h.fake.replies(token)
    assert "❌ **bread.txt** was not added: its channel was deleted." in status["content"], status["content"]
    assert jobs.uploads.unfinished() == []  # nothing left for the next start to build into it


async def test_auto_ingest_adds_a_file_posted_in_the_bots_answer_thread(make_harness):
    """The answer thread belongs to the channel: a file posted there with auto-ingest on is added as one
    posted in the channel is (it was dropped, the message taken only as a follow-up)."""
    h = await make_harness(message_content=True)
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    await ask(h, "How is the lens cleaned?")
    thread = next(t for t in h.bot.get_guild(GUILD).threads).id
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    bread = h.fake.add_file("bread.txt", SOURDOUGH.encode())
    h.user_message(thread, "", attachments=[bread])
    done = await h.fake.wait_for(
        lambda: [m for m in h.fake.channel_messages(thread) if "Done" in m["content"]], what="the file's build"
    )
    assert "✅ **bread.txt** added" in done[0]["content"]
    assert sorted(d.name for d in h.engine.documents(KB_A)) == ["bread.txt", "kestrel.md"]


async def test_an_upload_with_refused_and_failed_files_lists_the_problems_first(harness):
    """Refused from their metadata (type, size), then failed when built (corrupt, empty), then the rest: one
    line each, problems at the top, however the files were ordered."""
    h = harness
    good = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    exe = h.fake.add_file("tool.exe", b"MZ\x90\x00")
    corrupt = h.fake.add_file("report.pdf", b"%PDF-1.7 not a pdf", content_type="application/pdf")
    huge = h.fake.add_file("huge.txt", b"x", size=50_000_000)
    empty = h.fake.add_file("empty.txt", b"   ")
    token = h.kb_add(good, exe, corrupt, huge, empty)
    lines = (await h.replies_done(token, lambda r: "Done" in text_of(r[0])))[0]["content"].split("\n")
    assert lines[0] == "Done: 1 file added and 4 not added."
    assert [line.split("**")[1] for line in lines[1:]] == ["tool.exe", "huge.txt", "report.pdf", "empty.txt", "kestrel.md"]
    assert all(line.startswith("❌") for line in lines[1:5]) and lines[5].startswith("✅ **kestrel.md** added")
