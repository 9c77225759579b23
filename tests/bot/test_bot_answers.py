"""What the bot's answers say, through its real flows (fake Discord, real engine, no LLM): follow-ups in
a thread are answered as the standalone question they stand for, extractive quotes are sentences
(never headings, never twice), the context holds each sentence once, and citations name the page of
what was quoted."""

from __future__ import annotations

import asyncio
import dataclasses
import re

import pytest

from bot.kb import kb_name
from raptor_engine.ingest.chunk import split_sentences
from raptor_engine.llm import OpenAIAnswerer
from raptor_engine.query.smalltalk import REPLIES, Act
from raptor_engine.types import AnswerDraft
from tests.bot.conftest import BOB, CHAN_A, GUILD, custom_ids, text_of
from tests.bot.test_bot_flows import add_doc, ask, sources_of
from tests.llm_server import FakeLLMServer
from tests.test_llm import FAST_BACKOFF, llm_settings
from tests.test_load import make_pdf

KB_A = kb_name(GUILD, CHAN_A)

ARCHIVE = """# The Harbour Town Archive

## Founding

The harbour town archive was founded in 1921 in the old customs house on Quay Street.
Its first keeper was Thomas Reid, a retired schoolmaster who catalogued the shipping registers by hand.
Thomas Reid left the archive in 1948 and moved to Glasgow to live with his daughter.

## The Hale years

In 1962 the town council appointed Margaret Hale as keeper of the archive.
She had trained as a librarian in Edinburgh and was the first woman to hold the post.
Under her care the archive gained a reading room and a fireproof vault for the oldest charters.
Margaret Hale left the archive in 1975, when she married a boat builder and moved to the island of Arran.

## Later keepers

After 1975 the archive was run by a committee of volunteers for ten years.
In 1985 the council appointed David Orr, who computerised the catalogue and opened on Saturdays.
The archive closed its reading room in 2009 and moved its collections to the county record office.
"""

BICYCLE = """# The Workshop Bicycle Manual

## Common repairs

- Punctures
- Brakes

A punctured inner tube is patched after the tyre is levered off and the hole is found in a bowl of water.
Worn brake pads are replaced when their grooves are no longer visible, and the cable is tensioned again.
A slipping chain is usually a sign of a stretched chain or a worn cassette, and both are replaced together.

## Cleaning

The chain is cleaned with a degreaser every month and oiled sparingly afterwards.
The frame is washed with warm soapy water, never with a pressure washer, which forces grit into the bearings.

## Why maintenance matters

Regular maintenance keeps a bicycle safe, because worn brakes and loose bolts fail without warning.
A well kept bicycle lasts for decades and costs far less over its life than a neglected one.
"""

FIRST_QUESTION = "Who was appointed keeper of the archive in 1962?"
FOLLOW_UP = "and when did she leave?"
SEARCHED = "Searched as: When did Margaret Hale leave?"


def key(text: str) -> str:
    """Case, punctuation and whitespace removed: two copies of one sentence compare equal."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def quotes_of(content: str) -> list[str]:
    """The sentences an extractive answer quotes, in order."""
    return re.findall(r"\u201c(.+?)\u201d \[\d+\]", content)


def footer_of(message: dict) -> str:
    return "\n".join((e.get("footer") or {}).get("text") or "" for e in message.get("embeds") or [])


async def open_archive_thread(h) -> int:
    """Add the archive, ask the first question with /ask and return the thread it opened."""
    await add_doc(h, "archive.md", ARCHIVE)
    _, replies = await ask(h, FIRST_QUESTION)
    assert "Margaret Hale" in replies[0]["content"]
    return next(t for t in h.bot.get_guild(GUILD).threads).id


async def bot_reply_in(h, thread_id: int, count: int = 1) -> dict:
    """The bot's `count`-th answer in the thread (a message with the sources embed)."""
    answers = await h.fake.wait_for(
        lambda: (lambda found: found if len(found) >= count else None)(
            [m for m in h.fake.channel_messages(thread_id) if m["embeds"]]
        ),
        what="the bot's answer in the thread",
    )
    return answers[count - 1]


async def remembered_turns(state, thread_id: int, count: int) -> list | None:
    """The thread's stored turns once there are `count` of them (the bot records an exchange just after
    posting its answer)."""
    history = await state.history(GUILD, thread_id)
    return history if len(history) >= count else None


def assert_answers_the_follow_up(message: dict) -> None:
    """The follow-up was searched and answered as 'When did Margaret Hale leave?', and the footer says so."""
    quotes = quotes_of(message["content"])
    assert quotes and "Margaret Hale left the archive in 1975" in quotes[0], message["content"]
    assert footer_of(message).startswith(SEARCHED), footer_of(message)


# ---------------------------------------------------------------------------------------------- follow-ups


async def test_follow_up_by_mention_is_answered_as_the_standalone_question(harness):
    h = harness
    thread = await open_archive_thread(h)
    h.user_message(thread, FOLLOW_UP, mention_bot=True)
    assert_answers_the_follow_up(await bot_reply_in(h, thread))


async def test_ask_inside_the_thread_uses_the_thread_history(harness):
    h = harness
    thread = await open_archive_thread(h)
    _, replies = await ask(h, FOLLOW_UP, channel=thread)
    assert_answers_the_follow_up(replies[-1])


async def test_plain_follow_up_with_the_message_content_intent(make_harness):
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    h.user_message(thread, FOLLOW_UP)
    assert_answers_the_follow_up(await bot_reply_in(h, thread))


async def test_follow_ups_chain_and_a_fresh_question_is_not_glued_to_them(harness):
    h = harness
    thread = await open_archive_thread(h)
    h.user_message(thread, FOLLOW_UP, mention_bot=True)
    await bot_reply_in(h, thread, 1)
    h.user_message(thread, "where did she move to?", mention_bot=True)
    second = await bot_reply_in(h, thread, 2)
    assert footer_of(second).startswith("Searched as: Where did Margaret Hale move to?")
    assert "Arran" in quotes_of(second["content"])[0]
    h.user_message(thread, "what else did she do?", mention_bot=True)
    more = await bot_reply_in(h, thread, 3)
    assert quotes_of(more["content"]) and not set(quotes_of(more["content"])) & set(
        quotes_of(second["content"])
    )
    h.user_message(thread, "Who computerised the catalogue?", mention_bot=True)
    fresh = await bot_reply_in(h, thread, 4)
    assert "Searched as" not in footer_of(fresh)  # a question of its own is searched as it is
    assert "David Orr" in quotes_of(fresh["content"])[0]


async def test_a_long_thread_of_vague_follow_ups_keeps_the_question_that_opened_it(make_harness, bot_settings):
    """More follow-ups than the remembered turns, none naming anything: the thread's opening question still
    says whom 'she' means (it is always among the turns a follow-up is given)."""
    h = await make_harness(settings=dataclasses.replace(bot_settings, questions_per_minute=100))
    thread = await open_archive_thread(h)
    vague = ["say more", "how so?", "go on", "really?", "tell me more", "is that so?", "more please"]
    for count, text in enumerate(vague, start=1):
        h.user_message(thread, text, mention_bot=True)
        await bot_reply_in(h, thread, count)
    h.user_message(thread, FOLLOW_UP, mention_bot=True)
    assert_answers_the_follow_up(await bot_reply_in(h, thread, len(vague) + 1))


async def test_a_long_question_reaches_the_engine_whole_up_to_the_engines_own_limit(make_harness, monkeypatch):
    """The bot and the engine take questions of the same length: /ask's option allows the engine's
    limit, and a follow-up of 1,500 characters in a thread is asked whole, not cut at a lower limit."""
    from raptor_engine.engine import MAX_QUESTION_CHARS, Engine

    h = await make_harness(message_content=True)
    ask_option = next(o for o in h.bot.tree.get_command("ask").to_dict(h.bot.tree)["options"] if o["name"] == "question")
    assert ask_option["max_length"] >= MAX_QUESTION_CHARS
    thread = await open_archive_thread(h)
    asked: list[str] = []
    original = Engine.ask

    async def recording(self, kb, question, **kwargs):
        asked.append(question)
        return await original(self, kb, question, **kwargs)

    monkeypatch.setattr(Engine, "ask", recording)
    long_follow_up = "When did she leave? " + "I am asking because the archive's history matters to me. " * 26
    assert 1000 < len(long_follow_up.strip()) < MAX_QUESTION_CHARS
    h.user_message(thread, long_follow_up)
    await bot_reply_in(h, thread)
    assert asked == [long_follow_up.strip()]


async def test_with_an_llm_the_condensed_question_is_answered_and_shown(make_harness, tmp_path):
    async with FakeLLMServer() as server:  # condenses to "<follow-up> (regarding: <first question>)"
        answerer = OpenAIAnswerer(llm_settings(server, tmp_path / "llm"), backoff_base=FAST_BACKOFF)
        h = await make_harness(answerer=answerer)
        await add_doc(h, "archive.md", ARCHIVE)
        await ask(h, FIRST_QUESTION)
        thread = next(t for t in h.bot.get_guild(GUILD).threads).id
        h.user_message(thread, FOLLOW_UP, mention_bot=True)
        reply = await bot_reply_in(h, thread)
        condensed = f"{FOLLOW_UP} (regarding: {FIRST_QUESTION})"
        answered = server.requests[-1].messages[-1]["content"]
        assert f"Question: {condensed}" in answered  # the answer addresses the standalone question
        assert footer_of(reply).startswith(f"Searched as: {condensed}")


# ---------------------------------------------------------------------------------------------- quoting


@pytest.mark.parametrize(
    "question",
    ["What are the common repairs?", "What is the central theme?", "What is this manual about?"],
)
async def test_extractive_answers_quote_sentences_never_headings_or_repeats(harness, question):
    h = harness
    await add_doc(h, "bicycle.md", BICYCLE)
    _, replies = await ask(h, question)
    quotes = quotes_of(replies[0]["content"])
    assert quotes, replies[0]["content"]
    headings = {"common repairs", "the workshop bicycle manual", "punctures", "brakes", "cleaning"}
    assert not [q for q in quotes if q.lstrip("-# ") != q or key(q) in headings], quotes
    assert len({key(q) for q in quotes}) == len(quotes), quotes


async def test_a_question_about_repairs_quotes_the_repairs(harness):
    h = harness
    await add_doc(h, "bicycle.md", BICYCLE)
    _, replies = await ask(h, "How is a punctured inner tube repaired?")
    assert "patched" in quotes_of(replies[0]["content"])[0]


# ---------------------------------------------------------------------------------------------- context


async def test_context_holds_each_sentence_once_and_counts_only_new_text(make_harness, bot_settings):
    bot_settings.budget = 400  # smaller than the document: summaries compete with leaves for room
    h = await make_harness(settings=bot_settings)
    await add_doc(h, "archive.md", ARCHIVE)
    await add_doc(h, "bicycle.md", BICYCLE)
    _, replies = await ask(h, "What happened to the archive and its keepers over the years?")
    answer_id = int(next(i for i in custom_ids(replies[-1]) if i.startswith("raptor:ctx:")).split(":")[2])
    stored = await h.bot.services.state.answer(GUILD, answer_id)
    keys = [key(node.text[a:b]) for node in stored.nodes for a, b in split_sentences(node.text)]
    assert len(keys) == len(set(keys)), "a sentence reached the context twice"
    assert stored.tokens_used <= 400
    assert stored.tokens_used == sum(node.tokens for node in stored.nodes)
    counted = [h.engine.embedder.count_tokens(node.text) for node in stored.nodes]
    assert all(n.tokens >= c for n, c in zip(stored.nodes, counted, strict=True))


# ---------------------------------------------------------------------------------------------- pages

ORCHARD_PAGES = [
    "Field Notes on the Hollins Orchard\nThe orchard was planted in 1902 with forty apple trees.\n"
    "Most of the trees are Bramley and Cox, with a few old russets by the wall.\n"
    "The soil is heavy clay that holds water through the winter months.",
    "Pruning is done in January when the trees are fully dormant.\n"
    "Dead and crossing branches are removed first to open the centre of each tree.\n"
    "The prunings are stacked by the hedge as shelter for hedgehogs.\n"
    "Young trees are pruned lightly so that they fruit in their third year.",
    "Codling moth is the worst pest and is caught with pheromone traps in May.\n"
    "Canker is cut out of the branches and the wounds are painted with sealant.\n"
    "The hives of the village beekeeper stand by the east gate every spring.",
    "The cider press was repaired by Agnes Moore in the autumn of 1958.\n"
    "She replaced the oak screw and the cracked slats of the pressing tray.\n"
    "The press still works and is used for the village cider day in October.",
    "Windfalls are collected every morning and fed to the pigs at Low Farm.\n"
    "The best apples are wrapped in paper and stored in the loft until spring.",
]


def leaf_holding(engine, kb: str, words: str):
    with engine.in_space(kb):  # the server's own store
        nodes = engine.store.nodes_of_kb(engine.store.require_kb(kb))
    return next(n for n in nodes if n.layer == 0 and words in n.text)


async def add_orchard_pdf(h):
    """Upload the PDF; returns the leaf holding the page-4 sentence, which starts on an earlier page."""
    attachment = h.fake.add_file("orchard.pdf", make_pdf(ORCHARD_PAGES), content_type="application/pdf")
    token = h.kb_add(attachment)
    await h.replies_done(token, lambda r: "Done" in text_of(r[0]), what="adding orchard.pdf")
    await h.finished(token)
    leaf = leaf_holding(h.engine, KB_A, "cider press was repaired")
    assert leaf.page < 4, "the test needs the quoted sentence in a chunk that starts a page earlier"
    return leaf


async def test_citation_names_the_page_of_the_quoted_sentence(harness):
    h = harness
    await add_orchard_pdf(h)
    _, replies = await ask(h, "Who repaired the cider press?")
    content = replies[0]["content"]
    assert "Agnes Moore" in quotes_of(content)[0]
    marker = re.search(r"Agnes Moore[^\n]*\[(\d+)\]", content).group(1)
    line = next(ln for ln in sources_of(replies).splitlines() if ln.startswith(f"**[{marker}]**"))
    assert "orchard.pdf · p. 4" in line, line


class CitingAnswerer:
    """A stand-in for an LLM: one sentence citing the leaf that holds the cider press, as a whole node."""

    name = "citing-test-answerer"
    leaf_id = 0

    async def answer(self, question, context, history):
        position = next(i for i, n in enumerate(context, start=1) if n.node_id == self.leaf_id)
        return AnswerDraft(text=f"Agnes Moore repaired the press [{position}].")

    async def condense(self, question, history):
        return question


async def test_a_node_citation_across_a_page_break_names_both_pages(make_harness):
    answerer = CitingAnswerer()
    h = await make_harness(answerer=answerer)
    leaf = await add_orchard_pdf(h)
    answerer.leaf_id = leaf.id
    _, replies = await ask(h, "Who repaired the cider press?")
    line = next(ln for ln in sources_of(replies).splitlines() if ln.startswith("**[1]**"))
    assert f"orchard.pdf · pp. {leaf.page}-4" in line, line


async def test_thanks_in_a_thread_gets_a_plain_reply_inside_the_cooldown_and_is_not_leaned_on(
    make_harness, bot_settings
):
    """'thanks!' searches nothing: a one-line reply without sources or buttons, never refused by the
    question cooldown (the /ask just before it started one), and the next follow-up still leans on the
    last real question."""
    settings = dataclasses.replace(bot_settings, ask_cooldown_seconds=3600)
    h = await make_harness(message_content=True, settings=settings)
    thread = await open_archive_thread(h)
    h.user_message(thread, "thanks!")
    reply = await h.fake.wait_for(
        lambda: next((m for m in h.fake.channel_messages(thread) if "welcome" in m["content"]), None),
        what="the reply to thanks",
    )
    assert reply["content"].startswith("You're welcome") and not reply["embeds"]
    assert not custom_ids(reply)
    assert not any("wait" in m["content"].lower() for m in h.fake.channel_messages(thread))
    state = h.bot.services.state
    # the exchange is recorded just after the reply is posted
    history = await h.fake.wait_for(
        lambda: remembered_turns(state, thread, 4), what="the exchange remembered"
    )
    assert [t.content for t in history][-2:] == ["thanks!", reply["content"]]
    assert not [m for m in h.fake.channel_messages(thread) if m["embeds"]]


@pytest.mark.parametrize("question", ["what is the?", "Who is he?"])
async def test_a_question_that_names_nothing_asks_for_something_specific_without_searching(harness, question):
    h = harness
    await add_doc(h, "archive.md", ARCHIVE)
    token = h.ask(question)
    replies = await h.replies_done(
        token, lambda r: any(REPLIES[Act.VAGUE] in text_of(m) for m in r), what="the request for something specific"
    )
    await h.finished(token)
    assert not any(m.get("embeds") or custom_ids(m) for m in replies)  # no sources: nothing was searched
    assert not list(h.bot.get_guild(GUILD).threads)


async def test_hello_with_ask_gets_a_greeting_and_opens_no_thread(harness):
    h = harness
    await add_doc(h, "archive.md", ARCHIVE)
    token = h.ask("hello!")
    replies = await h.replies_done(token, lambda r: any("Hello" in text_of(m) for m in r), what="a greeting")
    await h.finished(token)
    assert not any(m.get("embeds") or custom_ids(m) for m in replies)
    assert not list(h.bot.get_guild(GUILD).threads)


async def test_a_follow_up_the_bot_may_not_answer_in_its_thread_is_one_log_line(harness, caplog):
    """The bot lost Send Messages in Threads (or the thread was locked): Discord refuses the answer, and
    the bot logs one line saying so, not a traceback; the exchange the member never saw is not stored."""
    h = harness
    thread = await open_archive_thread(h)
    h.fake.forbid("POST", rf"channels/{thread}/messages$")
    h.user_message(thread, FOLLOW_UP, mention_bot=True)
    await h.fake.wait_for(
        lambda: "could not answer in thread" in caplog.text or "failed" in caplog.text, what="the follow-up's end"
    )
    assert f"could not answer in thread {thread}: 403 Forbidden" in caplog.text, caplog.text
    assert "Traceback" not in caplog.text and "ERROR" not in caplog.text
    assert [t.content for t in await h.bot.services.state.history(GUILD, thread)][::2] == [FIRST_QUESTION]


async def test_a_private_question_in_the_thread_stays_out_of_its_public_conversation(harness):
    """/ask private inside the answer thread is answered from the thread's conversation, but only its
    asker sees it: it is not remembered as a turn, so no later public follow-up leans on it (the footer's
    'Searched as: … (context: …)' would show it to everyone)."""
    h = harness
    thread = await open_archive_thread(h)
    secret = "Who computerised the catalogue in 1985?"
    _, replies = await ask(h, secret, channel=thread, private=True)
    assert "David Orr" in replies[-1]["content"]
    assert secret not in [t.content for t in await h.bot.services.state.history(GUILD, thread)]
    h.user_message(thread, "and why?", mention_bot=True)
    public = await bot_reply_in(h, thread)
    assert "computerised" not in footer_of(public), footer_of(public)


async def test_a_question_with_a_lone_surrogate_is_remembered_as_the_engine_read_it(harness):
    """JSON may carry half a UTF-16 pair ("\\ud800"), which SQLite cannot store: the thread's memory keeps
    the question as the engine read and answered it (U+FFFD in its place), and follow-ups go on."""
    h = harness
    thread = await open_archive_thread(h)
    _, replies = await ask(h, "When did Margaret Hale leave?\ud800", channel=thread)
    assert "1975" in replies[-1]["content"], replies[-1]["content"]
    remembered = [t.content for t in await h.bot.services.state.history(GUILD, thread) if t.role == "user"]
    assert remembered[-1] == "When did Margaret Hale leave?\ufffd", remembered


async def test_two_follow_ups_sent_at_once_are_answered_in_turn(harness):
    """Of two follow-ups typed quickly (by one member or two), the first sent is answered first, and the
    second after the first's exchange is remembered, so it reads that exchange as its context (both used
    to read the turns from before; and the second could overtake the first while the thread was looked up)."""
    h = harness
    thread = await open_archive_thread(h)
    lookup, lookups = h.bot.services.state.thread, []

    async def slow_first_lookup(*args):  # the thread's record read slowly for the first message only
        lookups.append(args)
        if len(lookups) == 1:
            await asyncio.sleep(0.5)
        return await lookup(*args)

    h.bot.services.state.thread = slow_first_lookup
    first_sent = h.user_message(thread, FOLLOW_UP, mention_bot=True)
    second_sent = h.user_message(thread, "and where did she go?", mention_bot=True, user=BOB)
    answers = [await bot_reply_in(h, thread, count) for count in (1, 2)]
    replied_to = [str((a.get("message_reference") or {}).get("message_id")) for a in answers]
    assert replied_to == [first_sent["id"], second_sent["id"]]
    first, second = (footer_of(a) for a in answers)
    assert first.startswith("Searched as: When did Margaret Hale leave?"), first
    assert second.startswith("Searched as: Where did Margaret Hale go? (context: When did Margaret Hale leave?"), second
