"""botqa22: sequences played through the real bot process that ended badly, each class held here over the
fake Discord API with real discord.py objects (real engine, no LLM): a direct message, an /ask whose
question holds no words once the bot's mention and markup are read, and a document name typed into
/kb remove with other spaces or case."""

from __future__ import annotations

import asyncio

import pytest

from bot.answering import WORDLESS_QUESTION
from bot.client import DM_POINTER
from bot.kb import kb_name
from tests.bot.conftest import (
    BOB,
    BOT_ID,
    CHAN_A,
    GUILD,
    custom_ids,
    text_of,
)
from tests.bot.test_bot_flows import add_doc
from tests.bot.test_bot_mentions import replies_to
from tests.bot.test_bot_real_process import MANUAL, MINUTES


async def test_a_direct_message_gets_one_sentence_saying_where_the_bot_answers(make_harness):
    """A DM ("when will the shed be built?") got no reply at all: the bot read only server messages, so a
    member could not tell a working bot from a dead one. Now one sentence says to use /ask in a server
    channel, once per member in ten minutes (a second DM from the same member gets nothing; another
    member's gets the sentence)."""
    h = await make_harness(message_content=True)
    first = h.direct_message("when will the shed be built?")
    assert await h.fake.wait_for(lambda: replies_to(h, first), what="the DM's reply") == [DM_POINTER]
    again = h.direct_message("hello?")
    other = h.direct_message("hi", user=BOB)
    assert await h.fake.wait_for(lambda: replies_to(h, other), what="the other member's reply") == [DM_POINTER]
    await asyncio.sleep(0.3)
    assert replies_to(h, again) == []


@pytest.mark.parametrize(
    "question",
    [f"<@{BOT_ID}>", f"<@!{BOT_ID}>  🎉", "🎉", "   ", "|| ||", "``` ```", "> ...", "<:blobthink:123456789012345678>"],
)
async def test_an_ask_with_no_words_is_told_to_ask_in_words(make_harness, question):
    """/ask whose question is the bot's own mention, emoji, marks or empty markup: one private sentence
    asking for words, nothing searched, no thread. Before, "<@bot>" was searched as the bot's name and
    answered publicly with passages "that do not answer the question", and "🎉" got a public "Ask me
    another question … whenever you like." as though something had been asked."""
    h = await make_harness()
    await add_doc(h, "minutes.md", MINUTES)
    token = h.ask(question)
    replies = await h.replies_done(token)
    await h.finished(token)
    assert [text_of(r) for r in replies] == [WORDLESS_QUESTION], replies
    assert all(r["flags"] & 64 for r in replies)  # only the asker sees it
    assert not h.fake.calls_to("POST", r"/threads$")


async def test_an_ask_with_the_bots_mention_before_a_question_searches_the_question(make_harness):
    """"<@bot> when will the new shed be built?" in /ask is searched without the mention, and answered
    publicly as before (this holds the question a wordless /ask is told apart from)."""
    h = await make_harness()
    await add_doc(h, "minutes.md", MINUTES)
    token = h.ask(f"<@{BOT_ID}> when will the new shed be built?")
    reply = (await h.replies_done(token))[0]
    assert "20 June" in reply["content"] and not reply["flags"] & 64, reply


@pytest.mark.parametrize("typed", ["  minutes.md ", "MINUTES.MD", " Minutes.Md"])
async def test_kb_remove_takes_a_typed_name_with_other_spaces_or_case(make_harness, typed):
    """A manager types the document's name into /kb remove instead of picking it from the list: spaces
    around it or another case read "There is no document named '  MINUTES.MD '…" although the channel held
    minutes.md. Now the name is matched as given, else trimmed, else in any case; the confirm button
    removes minutes.md and leaves manual.md."""
    h = await make_harness()
    await add_doc(h, "minutes.md", MINUTES)
    await add_doc(h, "manual.md", MANUAL)
    token = h.slash("kb", [{"name": "document", "type": 3, "value": typed}], sub="remove")
    asked = (await h.replies_done(token))[0]
    assert "minutes.md" in text_of(asked) and custom_ids(asked), asked
    confirm = [c for c in custom_ids(asked) if "cancel" not in c.lower()][0]
    await h.replies_done(h.click(asked, confirm))
    kb = kb_name(GUILD, CHAN_A)
    await h.fake.wait_for(lambda: [d.name for d in h.engine.documents(kb)] == ["manual.md"], what="the removal")


async def test_kb_remove_still_refuses_a_name_no_document_has_in_any_case(make_harness):
    h = await make_harness()
    await add_doc(h, "minutes.md", MINUTES)
    token = h.slash("kb", [{"name": "document", "type": 3, "value": " notes.md"}], sub="remove")
    said = text_of((await h.replies_done(token))[0])
    assert said.startswith("There is no document named ' notes.md'"), said
