"""What a member is told about how their question was searched: the "Searched as" line under an answer
is exactly the text the engine's retrieval searched (`Answer.searched_text`), never a cut or another
reading of it; a question longer than the engine searches (`MAX_QUESTION_CHARS`) is shortened the same
way wherever it is asked (a thread message, /ask, the CLI) and its answer says so, with the limit."""

from __future__ import annotations

import pytest

from raptor_engine.engine import MAX_QUESTION_CHARS, Engine
from tests.bot.test_bot_answers import ARCHIVE, bot_reply_in, open_archive_thread
from tests.bot.test_bot_flows import add_doc, ask

PASTE = "I have been reading through the archive's shelves all week and taking notes on every register. " * 26
LONG = (
    "Background, briefly: " + PASTE + "Where did Margaret Hale train as a librarian?"
)  # 2,536 characters, as the outside pass sent


def searched_shown(message: dict) -> str:
    """The "Searched as" line of a posted answer: in its footer, or, too long for it, its text's last line."""
    embeds = message.get("embeds") or []
    lines = [line for e in embeds for line in ((e.get("footer") or {}).get("text") or "").split("\n")]
    lines += [line for e in embeds for line in (e.get("description") or "").split("\n")]
    return next((line for line in lines if line.startswith("Searched as: ")), "")


@pytest.fixture
def searched(monkeypatch) -> list[str]:
    """Every query the engine's retrieval is given, in order."""
    queries: list[str] = []
    original = Engine.retrieve

    def recording(self, kb, query, **kwargs):
        queries.append(query)
        return original(self, kb, query, **kwargs)

    monkeypatch.setattr(Engine, "retrieve", recording)
    return queries


@pytest.mark.parametrize(
    "follow_ups",
    [
        # the file named in the question before is left out of what is searched, context included
        ["what does archive.md say about the vault?", "and the first keeper?"],
        # a long paste: its question is searched, not its opening and "(2,536 characters)"
        [LONG],
        # a long paste followed up: the context is the whole earlier question as searched, not cut
        [LONG, "and when did she leave?"],
    ],
    ids=["file-named", "long-paste", "after-a-long-paste"],
)
async def test_the_searched_line_of_a_follow_up_is_exactly_what_was_searched(
    make_harness, searched, follow_ups
):
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    for count, question in enumerate(follow_ups, 1):
        before = len(searched)
        h.say(thread, question)
        reply = await bot_reply_in(h, thread, count)
        [query] = searched[before:]
        shown = searched_shown(reply)
        assert shown == f"Searched as: {query}", (shown, query)


async def test_a_long_thread_question_is_shortened_and_the_answer_says_so(make_harness, searched):
    """2,536 characters in an answer's thread: before, cut to 2,000 and answered as the cut text, with
    nothing said about it."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    assert len(LONG) == 2536
    h.say(thread, LONG)
    reply = await bot_reply_in(h, thread)
    assert "Edinburgh" in reply["content"], reply["content"]
    assert (
        f"This question is 2,536 characters, more than the {MAX_QUESTION_CHARS:,} a question"
        in reply["content"]
    )
    assert searched_shown(reply) == f"Searched as: {searched[-1]}"


async def test_a_long_ask_is_taken_as_a_thread_message_is(make_harness, searched):
    """/ask takes what a Discord message holds, so the same paste is asked there, shortened and said."""
    h = await make_harness(message_content=True)
    option = next(
        o for o in h.bot.tree.get_command("ask").to_dict(h.bot.tree)["options"] if o["name"] == "question"
    )
    assert option["max_length"] >= len(LONG)
    await add_doc(h, "archive.md", ARCHIVE)
    _, replies = await ask(h, "Where did Margaret Hale train? " + PASTE)
    assert "This question is" in replies[0]["content"] and "shortened" in replies[0]["content"]
