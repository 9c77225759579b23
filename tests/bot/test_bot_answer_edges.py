"""Answers and threads at their edges (fake Discord, real engine): a question under a spoiler on its private
'Show context' page, a question cut at Discord's length, a follow-up's footer (each test fails on the code
before its fix; docs/BOT.md, botqa20)."""

from __future__ import annotations

import logging
import re

import pytest

from bot.answering import follow_up_text_of
from bot.render import FOOTER_LIMIT, context_pages, plain_question, sources_embeds
from raptor_engine.engine import MAX_QUESTION_CHARS
from raptor_engine.ingest.messages import clean_text
from raptor_engine.query.asked import fit_question, in_brief
from raptor_engine.query.followup import CONTEXT_CLOSE, CONTEXT_OPEN
from raptor_engine.query.smalltalk import asks, continues
from tests.bot.conftest import BOB, BOT_ID, CHAN_A, GUILD, custom_ids, user_payload
from tests.bot.test_bot_answers import (
    ARCHIVE,
    FIRST_QUESTION,
    bot_reply_in,
    open_archive_thread,
    remembered_turns,
)
from tests.bot.test_bot_flows import add_doc, ask
from tests.bot.test_bot_render import make_answer


async def test_show_context_of_a_question_under_a_spoiler_keeps_it_hidden(make_harness):
    """/ask with its question under a spoiler: the answer hides it, and so does the clicker's private
    'Show context' page (its title names no question; the page opens with it under a spoiler). Before, the
    page's title was "Context for: Who was appointed ...", unhidden."""
    h = await make_harness()
    await add_doc(h, "archive.md", ARCHIVE)
    _, replies = await ask(h, f"||{FIRST_QUESTION}||", channel=CHAN_A)
    answer = replies[-1]
    button = next(i for i in custom_ids(answer) if i.startswith("raptor:ctx:"))
    page = (await h.replies_done(h.click(answer, button)))[0]
    embed = page["embeds"][0]
    assert "1962" not in embed["title"] and "appointed" not in embed["title"], embed["title"]
    description = embed["description"]
    opening, _, rest = description.partition("\n\n")
    assert opening.startswith("||") and opening.endswith("||") and "appointed keeper" in opening, opening
    assert "appointed keeper of the archive in 1962?" not in rest.replace("\\", "")
    assert "**[1]**" in rest


def test_context_pages_of_a_hidden_question_stay_within_discords_limit():
    """The spoiler line takes room from every page: long nodes and a long question still fit 4,096."""
    from raptor_engine.types import ContextNode

    nodes = [
        ContextNode(node_id=i, layer=0, document="d.md", score=1.0, text="*_|`" * 600, tokens=900, leaf_count=1)
        for i in range(6)
    ]
    question = "|*`_" * 400
    for hidden in (False, True):
        pages = context_pages(question, nodes, 5000, 6000, hidden=hidden)
        assert all(len(p.description or "") <= 4096 and len(p.title or "") <= 256 for p in pages)
        assert all((p.description or "").startswith("||") for p in pages) is hidden


PASTE = "The registers were bound in red leather and kept on the top shelf of the reading room. " * 40


@pytest.mark.parametrize(
    ("question", "kept", "ends"),
    [
        (PASTE + "Who was the first keeper?", "Who was the first keeper?", " … Who was the first keeper?"),
        ("Who was the first keeper? " + PASTE, "Who was the first keeper?", "…"),
        (("when did she leave, " * 180).rstrip(", ") + "?", "when did she leave", "leave…?"),
        ("这是谁" * 1000 + "？", "这是谁", "…？"),
        ("Was it " + "very " * 600 + "old?”", "Was it very", "very…?”"),
        (PASTE + "Tell me about the vault!", "Tell me about the vault!", " … Tell me about the vault!"),
    ],
)
def test_a_question_too_long_to_ask_keeps_what_it_asks_and_its_end_mark(question, kept, ends):
    """A question over 2,000 characters is cut at a word (or clause) and keeps its end: a long paste its
    question at the end, one long question its "?" (full-width and after a closing quote too). Before, its
    first 2,000 characters were kept and "…" put after: the question at a paste's end was lost, and the
    "?" of every one."""
    fitted = fit_question(question, MAX_QUESTION_CHARS)
    assert len(fitted) <= MAX_QUESTION_CHARS and kept in fitted and fitted.endswith(ends), fitted[-80:]
    assert not re.search(r"\w…\w", fitted)  # no word cut in two
    assert "?" in in_brief(fitted) or "？" in in_brief(fitted) or "!" in fitted[-2:]


async def test_a_long_paste_in_a_thread_is_answered_for_the_question_at_its_end(make_harness):
    """A member pastes a long paragraph with the question at its end (2,900 characters) in an answer's
    thread: the question searched, shown in the footer and remembered is that question. Before, the first
    2,000 characters were searched (the question cut off) and remembered."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    h.say(thread, PASTE + "Where did Margaret Hale train as a librarian?")
    answer = await bot_reply_in(h, thread, 1)
    assert "Edinburgh" in answer["content"], answer["content"]
    turns = await h.fake.wait_for(lambda: remembered_turns(h.bot.services.state, thread, 4), what="the turns")
    assert turns[2].content.endswith("… Where did Margaret Hale train as a librarian?"), turns[2].content[-80:]


CONTEXT = "Who was appointed keeper of the harbour town archive in 1962, after the war ended and the vault was built"


@pytest.mark.parametrize(
    ("core", "context", "footer"),
    [
        ("When did Margaret Hale leave?", CONTEXT + ", and who kept the registers", True),  # 134: in the footer
        ("When did she leave?", CONTEXT * 6, True),  # 660: still in the footer, whole
        ("Why? " * 70 + "When?", CONTEXT * 16, False),  # over the footer's room: the text's last line, whole
    ],
)
def test_a_follow_ups_searched_line_is_shown_whole(core, context, footer):
    """The "Searched as" line is exactly what was searched: whole in the footer when it fits there, else the
    sources embed's last line of text. Before, it was cut to 400 characters ("(context: …)" to what the
    question left), so it showed a text that was not searched."""
    answer = make_answer("Margaret Hale [1].")
    answer.query = f"{core}{CONTEXT_OPEN}{context}{CONTEXT_CLOSE}"
    line = f"Searched as: {answer.query}"
    embeds = sources_embeds(answer)
    in_footer = line in (embeds[-1].footer.text or "").split("\n")
    in_text = (embeds[-1].description or "").split("\n")[-1] == line
    assert (in_footer, in_text) == (footer, not footer)
    assert len(embeds[-1].footer.text or "") <= FOOTER_LIMIT


@pytest.mark.parametrize(
    ("typed", "asks"),
    [
        ("```py\nwhat is max_file_bytes?\n```", "what is max_file_bytes?"),  # a code block: its code, no fence
        ("```who chaired it?```", "who chaired it?"),  # a code block on one line: no language taken
        ("```\nwho chaired it?", "who chaired it?"),  # an unclosed one runs to the end
        ("what does `max_file_bytes` limit?", "what does max_file_bytes limit?"),  # inline code
        ("what does [the manual](https://example.com/m) say?", "what does the manual say?"),  # labelled link
        ("see <https://example.org/x>, what is it?", "see https://example.org/x, what is it?"),  # autolink
        ("||who is the treasurer?||", "who is the treasurer?"),  # a spoiler
        ("|| who is the treasurer? ||", "who is the treasurer?"),  # a spoiler with spaces inside
        ("is a || b true?", "is a || b true?"),  # lone bars are text
        ("**who** __was__ ~~it~~ *then*?", "who was it then?"),  # emphasis, underline, strike-through
        ("snake_case_name and 2*3*4?", "snake_case_name and 2*3*4?"),  # not emphasis
        ("\\*not bold\\* why?", "*not bold* why?"),  # escapes as shown
        ("> who chaired it?\n>>> and when?", "who chaired it? and when?"),  # quotes
        ("## Who chaired it?\n-# asking for a friend", "Who chaired it? asking for a friend"),  # heading, subtext
        ("who chaired it <:blobthink:123456789012345678>?", "who chaired it ?"),  # a custom emoji is a picture
        ("what is C# used for?", "what is C# used for?"),
    ],
)
def test_a_question_reads_as_the_engine_stores_a_chat_message(typed, asks):
    """Each kind of Discord markup: the question asks what the client shows, as the engine stores the same
    text of a chat message (one function, `chat_plain`; a question's code blocks lose their fences only).
    Before, the bot's own reader kept a labelled link's URL and brackets, left `*then*`, `__was__` and
    escapes as typed and headings' marks only at three levels, and the engine's kept custom emoji and
    quote marks after spaces."""
    assert plain_question(typed) == asks
    stored = " ".join(clean_text(typed).split())
    assert stored == asks or "```" in typed, stored


NAMES = {("@", 101): "bob", ("@&", 350): "managers", ("#", 401): "bread"}


@pytest.mark.parametrize(
    ("typed", "asks"),
    [
        ("<@101> do you know when the archive was founded?", "@bob do you know when the archive was founded?"),
        ("what did <@!101> say about the vault?", "what did @bob say about the vault?"),
        ("can <@&350> add the charters?", "can @managers add the charters?"),
        ("is the starter in <#401>?", "is the starter in #bread?"),
        ("@everyone where was the archive founded?", "where was the archive founded?"),
        ("@here who kept it?", "who kept it?"),
        ("<@999> who kept it?", "who kept it?"),  # a mention it cannot name is left out
        ("what happened on <t:1700000000:D>?", "what happened on 2023-11-14 22:13 UTC?"),
        ("what happened on <t:99999999999999:D>?", "what happened on ?"),  # out of range: left out
    ],
)
def test_a_questions_mentions_read_as_the_client_shows_them(typed, asks):
    """A question's mentions are its words as members read them: a member, role or channel by name, a
    timestamp as its time, pings left out. Before, "<@101>", "@everyone" and "<t:1700000000:D>" were
    searched (and shown in "Searched as") as typed."""
    assert follow_up_text_of(typed, BOT_ID, lambda kind, i: NAMES.get((kind, i))) == asks


async def test_a_follow_up_naming_a_member_is_asked_and_remembered_with_their_name(make_harness):
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    message = h.fake.post(thread, "@everyone <@101> do you know when the archive was founded?")
    message["mentions"] = [user_payload(BOB, "bob")]
    h.state.parse_message_create(dict(message))
    answer = await bot_reply_in(h, thread, 1)
    assert "1921" in answer["content"], answer["content"]
    turns = await h.fake.wait_for(lambda: remembered_turns(h.bot.services.state, thread, 4), what="the turns")
    assert turns[2].content == "@bob do you know when the archive was founded?"


@pytest.mark.parametrize(
    ("text", "asking"),
    [
        ("Margaret Hale trained in Edinburgh.", False),
        ("She left in 1975", False),
        ("ok so the vault came later", False),
        ("when did she leave", True),
        ("Is it open on Saturdays", True),
        ("tell me about the vault", True),
        ("Explain the reading room.", True),
        ("Qui était le premier gardien ?", True),
        ("من كان أول أمين للأرشيف؟", True),
        ("¿Quién fue el primer guardián", True),
        ("这是谁？", True),
    ],
)
def test_whether_a_message_asks_something(text, asking):
    assert asks(text) is asking


async def test_a_follow_up_edited_into_a_statement_keeps_its_answer(make_harness, caplog):
    """A follow-up answered, then edited into a statement (the member answered it themselves): its answer,
    which others may have read, stays as it was, and so does its exchange. Before, the statement was
    searched, the answer message edited into quotes about it and the exchange replaced."""
    caplog.set_level(logging.INFO, logger="bot.answering")
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    question = h.say(thread, "Where did Margaret Hale train?")
    answer = await bot_reply_in(h, thread, 1)
    before = answer["content"]  # the fake edits its messages in place
    assert "Edinburgh" in before
    h.edit(question, "Margaret Hale trained as a librarian in Edinburgh, it says.")
    await h.fake.wait_for(
        lambda: "edited to ask nothing" in caplog.text or h.fake.messages[int(answer["id"])]["content"] != before,
        what="the edit to be handled",
    )
    assert h.fake.messages[int(answer["id"])]["content"] == before
    history = await h.bot.services.state.history(GUILD, thread)
    assert [t.content for t in history if t.role == "user"][-1] == "Where did Margaret Hale train?"
    h.edit(question, "Who appointed her?")  # edited into another question: answered again, in place
    await h.fake.wait_for(lambda: h.fake.messages[int(answer["id"])]["content"] != before, what="the new answer")


@pytest.mark.parametrize(
    ("previous", "message", "joined"),
    [
        ("who was the keeper", "after Thomas Reid?", True),
        ("what does the manual say about", "the tines?", True),
        ("who was the keeper", "in 1962", True),
        ("who was the keeper?", "after Thomas Reid?", False),  # the first was finished
        ("who was the keeper", "and when did she leave?", False),  # a question of its own
        ("who was the keeper", "thanks", False),
        ("Thomas Reid was a schoolmaster", "after the war?", False),  # the first asked nothing
    ],
)
def test_whether_a_message_finishes_the_question_before_it(previous, message, joined):
    assert continues(previous, message) is joined


async def test_a_question_split_over_two_quick_messages_is_asked_as_one(make_harness):
    """"who was the keeper", Enter, "after Thomas Reid?": the second message finishes the first, so the two
    are asked, and remembered for the follow-ups after them, as one; another member's fragment is asked
    alone. Before, "after Thomas Reid?" was searched and remembered alone."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    h.say(thread, "who was the keeper")
    await bot_reply_in(h, thread, 1)
    h.say(thread, "after Thomas Reid?")
    await bot_reply_in(h, thread, 2)
    turns = await h.fake.wait_for(lambda: remembered_turns(h.bot.services.state, thread, 6), what="the turns")
    assert turns[4].content == "who was the keeper after Thomas Reid?"
    h.say(thread, "who kept it")
    await bot_reply_in(h, thread, 3)
    h.say(thread, "after Margaret Hale?", user=BOB)  # someone else: not finishing alice's question
    await bot_reply_in(h, thread, 4)
    turns = await h.fake.wait_for(lambda: remembered_turns(h.bot.services.state, thread, 10), what="the turns")
    assert turns[8].content == "After Margaret Hale?" or turns[8].content == "after Margaret Hale?", turns[8]
