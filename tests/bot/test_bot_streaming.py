"""With an LLM, /ask and thread follow-ups show the answer while it is written: the reply is edited at
most once per interval with a cursor, goes on in a second message past Discord's limit without cutting a
marker or a word, survives a 429, and ends as the non-streamed answer renders, with sources and
buttons. Real discord.py against the fake Discord, the test LLM server streaming over HTTP."""

from __future__ import annotations

import re

import pytest

import bot.streaming as streaming
from bot.kb import kb_name
from bot.render import render_answer
from bot.streaming import CURSOR
from raptor_engine.llm import OpenAIAnswerer
from tests.bot.conftest import CHAN_A, GUILD, custom_ids, text_of
from tests.bot.test_bot_answers import ARCHIVE, bot_reply_in
from tests.bot.test_bot_flows import add_doc, ask
from tests.llm_server import FakeLLMServer
from tests.test_llm import FAST_BACKOFF, llm_settings

KB_A = kb_name(GUILD, CHAN_A)
INTERVAL = 0.3  # the edit interval in these tests (1 s in use), to keep them short
QUESTION = "Who was appointed keeper of the archive in 1962?"
ANSWER = (
    "In 1962 the town council appointed Margaret Hale as keeper of the archive [1]. She had trained as a "
    "librarian in Edinburgh and was the first woman to hold the post [1]. Under her care the archive "
    "gained a reading room and a fireproof vault for the oldest charters [2]."
)


def long_answer() -> str:
    """About 3,300 characters: two messages' worth, markers all through it."""
    sentences = [
        f"Sentence {i} tells of the archive's keepers and their many duties [{1 + i % 2}]." for i in range(48)
    ]
    return " ".join(sentences)


@pytest.fixture
async def llm(tmp_path, monkeypatch):
    monkeypatch.setattr(streaming, "EDIT_INTERVAL", INTERVAL)
    async with FakeLLMServer() as server:
        server.responder = lambda body: ANSWER if "numbered context blocks" in str(body) else "Summary."
        server.stream_at(100)
        yield server


async def streaming_bot(make_harness, server, tmp_path):
    answerer = OpenAIAnswerer(llm_settings(server, tmp_path / "llm"), backoff_base=FAST_BACKOFF)
    h = await make_harness(answerer=answerer)
    await add_doc(h, "archive.md", ARCHIVE)
    return h


def edits_of(h, token: str) -> list:
    """The successful calls that set the answer's original message (the first fill and every edit)."""
    return [
        c
        for c in h.fake.calls
        if c.method == "PATCH" and c.status == 200 and f"{token}/messages/@original" in c.path
    ]


async def plain_render(h, question: str) -> list:
    """What the non-streamed path shows for the same model output."""
    return render_answer(await h.engine.ask(KB_A, question))


async def test_ask_streams_into_the_reply_and_ends_as_the_plain_answer(make_harness, llm, tmp_path):
    h = await streaming_bot(make_harness, llm, tmp_path)
    token, replies = await ask(h, QUESTION)
    original = h.fake.original(token)
    versions = h.fake.versions[int(original["id"])]
    writing = [v for v in versions if v.endswith(CURSOR)]
    assert len(writing) >= 2, versions  # shown while written, with the cursor
    texts = [v.removesuffix(CURSOR) for v in writing]
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False))
    expected = await plain_render(h, QUESTION)
    assert len(replies) == 1 and replies[0]["content"] == expected[0].content
    assert CURSOR not in replies[0]["content"] and "Sources" in text_of(replies[0])
    assert [i.split(":")[1] for i in custom_ids(replies[0])] == ["ctx", "tree"]
    calls = edits_of(h, token)
    assert len(calls) == len(versions) - 1  # each version came from one edit
    gaps = [b.at - a.at for a, b in zip(calls, calls[1:], strict=False)]
    assert gaps and min(gaps) >= INTERVAL * 0.95, gaps  # never two edits within the interval
    assert len(h.bot.get_guild(GUILD).threads) == 1  # the thread opens on the streamed message


async def test_a_long_stream_goes_on_in_a_second_message_never_cutting_a_marker_or_word(
    make_harness, llm, tmp_path
):
    text = long_answer()
    llm.responder = lambda body: text if "numbered context blocks" in str(body) else "Summary."
    llm.stream_at(400)
    h = await streaming_bot(make_harness, llm, tmp_path)
    token, replies = await ask(h, QUESTION)
    assert len(replies) == 2
    expected = await plain_render(h, QUESTION)
    assert [r["content"] for r in replies] == [m.content for m in expected]
    assert "Sources" in text_of(replies[-1]) and custom_ids(replies[-1]) and not custom_ids(replies[0])
    for message in replies:
        for version in h.fake.versions[int(message["id"])]:
            shown = version.removesuffix(CURSOR)
            assert len(version) <= 2000
            assert not re.search(r"\[\d*$", shown), shown[-20:]  # no marker cut short
            assert not shown or shown.endswith((".", "]")) or version.endswith(CURSOR), shown[-20:]
    first, second = (r["content"] for r in replies)
    assert first.endswith(".") and re.match(r"Sentence \d+ ", second)  # cut between sentences


async def test_a_429_on_an_edit_is_waited_out_and_the_answer_still_ends_complete(make_harness, llm, tmp_path):
    h = await streaming_bot(make_harness, llm, tmp_path)
    h.fake.rate_limit_once("PATCH", r"messages/@original")
    _, replies = await ask(h, QUESTION)
    assert [c.status for c in h.fake.calls if c.method == "PATCH"].count(429) == 1
    assert replies[0]["content"] == (await plain_render(h, QUESTION))[0].content


async def test_a_follow_up_in_a_thread_streams_too(make_harness, llm, tmp_path):
    h = await streaming_bot(make_harness, llm, tmp_path)
    await ask(h, QUESTION)
    thread = next(t for t in h.bot.get_guild(GUILD).threads).id
    h.user_message(thread, "and what did she train as?", mention_bot=True)
    reply = await bot_reply_in(h, thread)
    versions = h.fake.versions[int(reply["id"])]
    assert any(v.endswith(CURSOR) for v in versions) and not reply["content"].endswith(CURSOR)
    assert "Margaret Hale" in reply["content"] and custom_ids(reply)


async def test_a_broken_stream_keeps_what_was_shown_with_a_note(make_harness, llm, tmp_path):
    h = await streaming_bot(make_harness, llm, tmp_path)
    llm.fail_next("truncated")
    _, replies = await ask(h, QUESTION)
    content = replies[0]["content"]
    assert content.startswith("In 1962 the town council") and "fireproof vault" not in content
    assert content.endswith("⚠️ The answer was cut off because the connection to the LLM backend broke.")
    assert "Sources" in text_of(replies[0])


async def test_markup_and_mentions_in_a_streamed_answer_stay_inert(make_harness, llm, tmp_path):
    llm.responder = lambda body: (
        "Margaret Hale **was** keeper @everyone <@123> [link](https://x.example) [1]."
        if "numbered context blocks" in str(body)
        else "Summary."
    )
    h = await streaming_bot(make_harness, llm, tmp_path)
    token, replies = await ask(h, QUESTION)
    for version in h.fake.versions[int(h.fake.original(token)["id"])]:
        assert "**was**" not in version and "@everyone" not in version.replace("\\@everyone", "")
        assert "<@123>" not in version


class Sent:
    """A message as StreamedReply sees one: it can be edited."""

    def __init__(self, log: list, content: str):
        self.log = log
        self.content = content
        log.append(("send", content))

    async def edit(self, **kwargs):
        self.content = kwargs.get("content") or ""
        self.log.append(("edit", self.content))
        return self


async def test_an_answer_finished_before_its_first_edit_is_sent_once_without_a_cursor():
    log: list = []

    async def send(content, embeds, view):
        return Sent(log, content)

    stream = streaming.StreamedReply(send, send, interval=0)
    await stream.show("Margaret Hale [1].")  # the whole answer at once (a server that would not stream)
    sent = await streaming.deliver(stream, [streaming.OutMessage(content="Margaret Hale [1].")], None, None)
    assert [m.content for m in sent] == ["Margaret Hale [1]."]
    assert all(CURSOR not in text for _, text in log) and [kind for kind, _ in log] == ["send"]


UNCITED = (
    "In 1962 the town council appointed Margaret Hale as keeper of the archive. "
    "The archive was later moved to a lighthouse on the moon."
)


async def test_an_answer_the_model_left_uncited_shows_matched_sources_and_its_unfound_sentence(
    make_harness, llm, tmp_path
):
    """The sources embed says which citations the support check matched and counts the sentence nothing
    supports; Show context marks the matched node; Show tree counts it among the stars."""
    h = await streaming_bot(make_harness, llm, tmp_path)
    llm.responder = lambda body: UNCITED if "numbered context blocks" in str(body) else "Summary."
    _, replies = await ask(h, QUESTION)
    answer = replies[-1]
    shown = text_of(answer)
    assert "moon \\[?\\]." in answer["content"]  # the inert mark, escaped as all answer text is
    assert "**[1]**" in shown and "*matched*" in shown
    assert "1 sentence not found in the documents (marked [?])" in answer["embeds"][-1]["footer"]["text"]

    context = next(i for i in custom_ids(answer) if i.startswith("raptor:ctx:"))
    page = (await h.replies_done(h.click(answer, context)))[0]
    assert page["embeds"][0]["description"].count("· **matched**") == 1

    tree = next(i for i in custom_ids(answer) if i.startswith("raptor:tree:"))
    reply = (await h.replies_done(h.click(answer, tree)))[0]
    assert "(1 cited, 1 of them matched by the check, drawn as stars)" in reply["content"]
