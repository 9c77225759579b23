"""Small messages in and around the bot's threads (fake Discord, real engine): reactions typed as messages,
markup around a question, a forwarded question, a reply to an answer in its channel, a mention in a
member's thread, and the sentence for a question asked beside files (each test fails on the code before
its fix; docs/BOT.md, botqa18)."""

from __future__ import annotations

import dataclasses
import logging
import re

import pytest

from bot.adding import Tally, done_header
from bot.answering import SPOILER_THREAD, WORDLESS_QUESTION
from bot.client import THREAD_POINTER
from bot.hints import ANSWERS_HERE, files_outcome, only_links, unread_types
from bot.render import CONTENT_LIMIT, asked_under_spoiler, plain_question, render_answer
from bot.streaming import CURSOR, streaming_pieces
from tests.bot.conftest import BOT_ID, CHAN_A, GUILD, text_of, user_payload
from tests.bot.test_bot_answers import (
    ARCHIVE,
    FIRST_QUESTION,
    FOLLOW_UP,
    SEARCHED,
    bot_reply_in,
    footer_of,
    open_archive_thread,
)
from tests.bot.test_bot_flows import add_doc, ask
from tests.bot.test_bot_mentions import replies_to
from tests.bot.test_bot_real_process import MANUAL, MINUTES
from tests.bot.test_bot_render import make_answer


def post(h, channel: int, content: str, *, mention: bool = False, **fields) -> dict:
    """A member's message as Discord delivers it, with any further fields (a sticker, a forward, a reply)."""
    message = h.fake.post(channel, f"<@{BOT_ID}> {content}".strip() if mention else content)
    if mention:
        message["mentions"] = [user_payload(BOT_ID, "raptor", True)]
    message.update(fields)
    h.state.parse_message_create(dict(message))
    return message


def bot_messages_after(h, channel: int, message: dict) -> list[dict]:
    return [
        m for m in h.fake.channel_messages(channel) if int(m["author"]["id"]) == BOT_ID and int(m["id"]) > int(message["id"])
    ]


async def test_reactions_typed_in_an_answer_thread_get_no_reply_and_a_lone_question_mark_a_short_one(make_harness):
    """"👍", "🤔", "...", a custom emoji and a sticker alone are reactions: no reply, nothing searched, nothing
    the next follow-up leans on. "?" gets one short sentence. Before, each got "Ask me another question
    about the documents whenever you like.", the custom emoji was searched (its name's letters) and became
    the next follow-up's context."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    first = post(h, thread, "👍")
    for text in ("🤔", "...", "!!", "<:blobthink:123456789012345678>", "<a:dance:223456789012345678> 🎉"):
        post(h, thread, text)
    post(h, thread, "", sticker_items=[{"id": "749054660769218631", "name": "Wave", "format_type": 1}])
    asked = post(h, thread, "?")
    post(h, thread, FOLLOW_UP)
    answer = await bot_reply_in(h, thread, 1)
    assert footer_of(answer).startswith(SEARCHED), footer_of(answer)  # the context is still the /ask
    said = [text_of(m) for m in bot_messages_after(h, thread, first) if not m["embeds"]]
    assert said == [WORDLESS_QUESTION] and replies_to(h, asked) == [WORDLESS_QUESTION], said


async def test_a_follow_up_edited_to_a_reaction_or_thanks_keeps_its_answer(make_harness, caplog):
    """A follow-up answered, then edited to "👍" (and another to "thanks!"): its answer stays as it was,
    and so does the exchange the next follow-up leans on. Before, the answer message was edited into
    the small-talk sentence."""
    caplog.set_level(logging.INFO, logger="bot.answering")
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    question = h.say(thread, FOLLOW_UP)
    answer = await bot_reply_in(h, thread, 1)
    assert "1975" in answer["content"]
    for count, edit in enumerate(("👍", "thanks!"), start=1):
        h.edit(question, edit)
        await h.fake.wait_for(
            lambda c=count: caplog.text.count("edited to ask nothing") >= c
            or h.fake.messages[int(answer["id"])]["content"] != answer["content"],
            what="the edit to be handled",
        )
        assert h.fake.messages[int(answer["id"])]["content"] == answer["content"]
    history = await h.bot.services.state.history(GUILD, thread)
    assert [t.content for t in history if t.role == "user"][-1] == FOLLOW_UP, history


@pytest.mark.parametrize(
    "wrapped",
    [
        f"||{FOLLOW_UP}||",
        f"```\n{FOLLOW_UP}\n```",
        f"`{FOLLOW_UP}`",
        f"> {FOLLOW_UP}",
        f"**{FOLLOW_UP}**",
    ],
)
async def test_a_follow_up_under_discord_markup_asks_what_its_words_say(make_harness, wrapped):
    """A follow-up under a spoiler, in a code block, quoted or in bold is searched as its words. Before,
    "Searched as: ||and when did she leave?||": the bars hid the question from the follow-up's reading.
    Under a spoiler, its answer is hidden too (the searched line, in the sources' text, also); before, the
    answer showed what the spoiler hid."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    h.say(thread, wrapped)
    answer = await bot_reply_in(h, thread, 1)
    content, sources = answer["content"], answer["embeds"][-1]
    assert "1975" in content
    if not wrapped.startswith("||"):
        assert footer_of(answer).startswith(SEARCHED) and "||" not in content, footer_of(answer)
        return
    assert content.startswith("||") and content.endswith("||") and "||" not in content[2:-2], content
    assert "Searched as" not in footer_of(answer) and footer_of(answer).startswith("Context:"), footer_of(answer)
    searched = sources["description"].splitlines()[-1]
    assert searched.startswith(f"||{SEARCHED}") and searched.endswith("||"), searched
    assert sources["description"].startswith("**[1]**")  # the sources stay as they were


async def test_a_question_forwarded_into_the_answer_thread_is_answered(make_harness):
    """A member forwards a message holding the follow-up into the thread (Discord's forward: no text of its
    own, a snapshot of the message). Before, nothing was said."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    snapshot = {
        "content": FOLLOW_UP, "embeds": [], "attachments": [], "type": 0, "flags": 0, "mentions": [],
        "mention_roles": [], "components": [], "timestamp": "2026-01-01T00:00:00+00:00", "edited_timestamp": None,
    }
    post(
        h, thread, "",
        message_reference={"type": 1, "message_id": "1", "channel_id": str(CHAN_A)},
        message_snapshots=[{"message": snapshot}],
    )
    answer = await bot_reply_in(h, thread, 1)
    assert footer_of(answer).startswith(SEARCHED), footer_of(answer)


async def test_a_reply_to_an_answer_in_its_channel_points_to_the_answers_thread(make_harness):
    """A member answers the bot's /ask answer with Discord's reply in the channel (pinging the bot, as a
    reply does by default), or without the ping: they are told the thread where follow-ups are answered.
    Before: "Ask me with /ask …" with the ping, nothing without. A "thanks!" reply gets nothing."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    reply = {"type": 19, "message_reference": {"type": 0, "message_id": str(thread), "channel_id": str(CHAN_A)}}
    pinged = post(h, CHAN_A, "and when did she leave?", mention=True, **reply)
    quiet = post(h, CHAN_A, "where did she train?", **reply)
    thanks = post(h, CHAN_A, "thanks!", **reply)
    pointer = THREAD_POINTER.format(thread=thread)
    for message in (pinged, quiet):
        assert await h.fake.wait_for(lambda m=message: replies_to(h, m), what="the pointer") == [pointer]
    assert replies_to(h, thanks) == []


async def test_a_mention_in_a_members_thread_says_where_ask_answers(make_harness):
    """In a thread a member opened, /ask answers in the thread (no thread opens in a thread): the hint says
    so. Before it said "my answer opens a thread"."""
    h = await make_harness(message_content=True)
    await add_doc(h, "manual.md", MANUAL)
    own = h.open_thread(CHAN_A, "questions")
    asked = post(h, own, "what oil does it take?", mention=True)
    hint = await h.fake.wait_for(lambda: replies_to(h, asked), what="the hint")
    assert len(hint) == 1 and ANSWERS_HERE in hint[0] and "opens a thread" not in hint[0], hint


async def test_a_question_beside_files_is_told_what_became_of_them(make_harness, bot_settings):
    """Auto-ingest on; a member asks beside files. The sentence tells what became of them: a duplicate is
    "already in this knowledge base", a file of a type the bot does not read (passed over in silence) is
    not "being added", a refused one (too big) "could not be added", and a mix counts each. Before, every
    one read "I'm adding these files; … once they are added"."""
    h = await make_harness(settings=dataclasses.replace(bot_settings, max_file_bytes=5_000), message_content=True)
    await add_doc(h, "manual.md", MANUAL)
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    f = h.fake.add_file
    cases = [
        ([f("manual.md", MANUAL.encode())], Tally(already=1)),
        ([f("copy.md", MANUAL.encode())], Tally(already=1)),
        ([f("tool.exe", b"MZ\x90\x00")], Tally(passed_over=1)),
        ([f("huge.md", b"x" * 10, size=50_000)], Tally(not_added=1)),
        ([f("minutes.md", MINUTES.encode()), f("manual2.md", MANUAL.encode()), f("big.txt", b"y", size=9_000)],
         Tally(added=1, already=1, not_added=1)),
    ]
    for files, tally in cases:
        asked = post(h, CHAN_A, "what oil does it take?", mention=True, attachments=files)
        expected = files_outcome(tally)
        got = await h.fake.wait_for(lambda m=asked, e=expected: [r for r in replies_to(h, m) if r == e], 240, expected)
        assert got == [expected]
        assert not [r for r in replies_to(h, asked) if "adding these files" in r]


async def test_files_the_bot_cannot_read_are_not_offered_to_a_manager(make_harness):
    """Auto-ingest off, a picture posted with a mention: "I can't read this file" with the kinds read.
    Before: "To add these files, a manager can use Apps → Add to knowledge base", which would refuse it."""
    h = await make_harness(message_content=True)
    await add_doc(h, "manual.md", MANUAL)
    png = h.fake.add_file("shed.png", b"\x89PNG\r\n", content_type="image/png")
    asked = post(h, CHAN_A, "what is this?", mention=True, attachments=[png])
    assert await h.fake.wait_for(lambda: replies_to(h, asked), what="the hint") == [unread_types(1)]


@pytest.mark.parametrize(
    "links",
    [
        "https://a.example/x and https://b.example/y",
        "https://a.example/x, https://b.example/y or https://c.example/z",
        "https://a.example/x\nhttps://b.example/y",
        "- https://a.example/x\n- https://b.example/y",
        "• https://a.example/x\n• https://b.example/y",
        "1. https://a.example/x\n2) https://b.example/y",
        "[the rules](https://a.example/rules) & [the map](<https://b.example/map>)",
        "<@123> https://a.example/x plus https://b.example/y",
    ],
)
def test_links_listed_are_only_links(links):
    assert only_links(links)


@pytest.mark.parametrize(
    "question",
    ["what does https://a.example/x say about sheds?", "https://a.example/x and who chaired it?", "1887", "and"],
)
def test_a_question_with_a_link_is_a_question(question):
    assert not only_links(question)


def test_plain_question_keeps_words_and_drops_markup():
    assert plain_question("```py\nwhat is max_file_bytes?\n```") == "what is max_file_bytes?"
    assert plain_question("> who chaired it?\n> and when?") == "who chaired it? and when?"
    assert plain_question("what is C# used for?") == "what is C# used for?"
    assert plain_question("<:blobthink:123456789012345678>") == ""


async def test_an_upload_of_files_already_here_reads_already_here(make_harness):
    """/kb add of a file already in the knowledge base, then of it with a new file and a refused one: the
    header says what became of each. Before: "Done: 0 of 1 file(s) added." above the ↩️ line."""
    h = await make_harness()
    await add_doc(h, "manual.md", MANUAL)
    again = h.kb_add(h.fake.add_file("manual.md", MANUAL.encode()))
    lines = text_of((await h.replies_done(again, lambda r: "↩️" in text_of(r[0]) and "⏳" not in text_of(r[0])))[0])
    assert lines.split("\n")[0] == "Already here: 1 file, nothing changed.", lines
    mixed = h.kb_add(
        h.fake.add_file("manual.md", MANUAL.encode()),
        h.fake.add_file("minutes.md", MINUTES.encode()),
        h.fake.add_file("tool.exe", b"MZ\x90\x00"),
    )
    lines = text_of((await h.replies_done(mixed, lambda r: "Done" in text_of(r[0])))[0])
    assert lines.split("\n")[0] == "Done: 1 file added, 1 already here and 1 not added.", lines


@pytest.mark.parametrize(
    ("tally", "header"),
    [
        (Tally(added=1), "Done."),
        (Tally(added=3), "Done."),
        (Tally(already=1), "Already here: 1 file, nothing changed."),
        (Tally(already=2), "Already here: 2 files, nothing changed."),
        (Tally(not_added=1), "Nothing added: 1 file could not be added."),
        (Tally(not_added=2), "Nothing added: 2 files could not be added."),
        (Tally(already=1, not_added=2), "Nothing added: 1 file already here and 2 not added."),
        (Tally(added=1, already=1), "Done: 1 file added and 1 already here."),
        (Tally(added=2, not_added=1), "Done: 2 files added and 1 not added."),
        (Tally(added=1, already=2, not_added=1), "Done: 1 file added, 2 already here and 1 not added."),
    ],
)
def test_the_upload_header_says_what_became_of_every_file(tally, header):
    assert done_header(tally) == header


@pytest.mark.parametrize(
    ("question", "hidden"),
    [
        ("||who dies at the end?||", True),
        ("who is ||the traitor|| in chapter 3?", True),
        ("||who dies\nat the end?||", True),
        ("is it a || b?", False),
        ("`a || b` or `||c||`?", False),
        ("```\n||who?||\n```", False),
        ("\\|\\|who?\\|\\|", False),
        ("|| ||", False),
    ],
)
def test_a_question_under_a_spoiler_is_told_from_bars_that_hide_nothing(question, hidden):
    assert asked_under_spoiler(question) is hidden


def test_a_hidden_answer_is_under_spoilers_that_its_own_markup_cannot_break():
    """Each message of a hidden answer (long, holding `||`, a code fence, a quote and a backslash) is one
    spoiler: every bar and backtick of the answer escaped, within Discord's limit, streamed ones too."""
    text = "The ending || who dies ||: ```py\nprint(1)\n```\n> quoted \\ [1]. " * 80
    for pieces in (
        [m.content for m in render_answer(make_answer(text), hidden=True)],
        streaming_pieces(text, hidden=True),
    ):
        assert len(pieces) > 1
        for piece in pieces:
            body = piece.removesuffix(CURSOR)
            assert len(piece) <= CONTENT_LIMIT and body.startswith("||") and body.endswith("||"), piece[-20:]
            assert not re.search(r"(?<!\\)(?:\\\\)*\|", body[2:-2]), body  # no bar unescaped inside
            assert not re.search(r"(?<!\\)`", body), body
    assert not render_answer(make_answer(text))[0].content.startswith("||")


async def test_an_ask_under_a_spoiler_is_answered_under_one_in_a_thread_not_named_by_it(make_harness):
    """/ask with its question under a spoiler: the answer's text is hidden and the thread it opens is not
    named after the question (a thread's name shows no spoiler). Before, both showed it."""
    h = await make_harness()
    await add_doc(h, "archive.md", ARCHIVE)
    _, replies = await ask(h, f"||{FIRST_QUESTION}||")
    content = replies[0]["content"]
    assert "Margaret Hale" in content and content.startswith("||") and content.endswith("||"), content
    assert [t.name for t in h.bot.get_guild(GUILD).threads] == [SPOILER_THREAD]


async def test_a_very_long_follow_up_is_what_it_asks_to_the_follow_ups_after_it(make_harness):
    """A follow-up of one clause pasted over and over (3,600 characters, cut to 2,000), then another: the
    second is searched with what the long one asked as its context, once. Before: "(context: When did
    she leave, when did she leave, when did she leave, …)", the whole paste given to every later one."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    long = ("when did she leave, " * 180).rstrip(", ") + "?"
    assert len(long) > 3_500
    h.say(thread, long)
    await bot_reply_in(h, thread, 1)
    h.say(thread, "where did she train?")
    footer = footer_of(await bot_reply_in(h, thread, 2)).split("\n")[0]
    assert footer.startswith("Searched as: Where did Margaret Hale train?"), footer
    # cut at a clause, its "?" kept and the cut shown (fit_question); the first 2,000 characters lost the "?"
    assert footer.endswith("(context: When did Margaret Hale leave…?)"), footer
