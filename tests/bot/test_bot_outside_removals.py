"""A removal made outside the bot, while it is down (`raptor forget` over its data directory, or any other
engine caller), reaches what the bot saved: the engine records it in the removal's own transaction and
the bot's next start redacts its 'Show context' pages and thread turns (storage/removals.py)."""

from __future__ import annotations

import asyncio

import pytest
from click.testing import CliRunner

import raptor_engine.cli as cli_module
from bot.state import REMOVED_DOCUMENT
from raptor_engine.engine import Engine
from tests.bot.bot_samples import SOURDOUGH
from tests.bot.conftest import GUILD, custom_ids
from tests.bot.test_bot_answers import ARCHIVE, FIRST_QUESTION
from tests.bot.test_bot_flows import KB_A, _turns, add_doc, ask

REMOVED = "Margaret Hale"  # in archive.md, and in the answer to FIRST_QUESTION


async def show_context(h, answer: dict) -> str:
    """The first page of an answer's 'Show context', as its embed's text."""
    button = next(i for i in custom_ids(answer) if i.startswith("raptor:ctx:"))
    page = (await h.replies_done(h.click(answer, button)))[0]
    return page["embeds"][0]["description"] if page["embeds"] else page["content"]


@pytest.mark.parametrize("remove", ["raptor forget", "Engine.clear"])
async def test_a_removal_made_while_the_bot_was_down_is_redacted_at_its_next_start(
    make_harness, bot_settings, embedder, monkeypatch, remove
):
    h = await make_harness()
    await add_doc(h, "archive.md", ARCHIVE)
    await add_doc(h, "bread.txt", SOURDOUGH)
    _, replies = await ask(h, FIRST_QUESTION)
    answer = replies[-1]
    assert REMOVED in replies[0]["content"]
    thread = next(t for t in h.bot.get_guild(GUILD).threads).id
    turns = await h.fake.wait_for(lambda: _turns(h, thread, 2), what="the thread's exchange to be stored")
    assert REMOVED in turns[1].content
    assert REMOVED in await show_context(h, answer)
    await h.bot.close()

    if remove == "raptor forget":  # the command line, over the bot's data directory
        monkeypatch.setattr(cli_module, "Engine", lambda settings: Engine(settings, embedder=embedder))
        argv = ["--data-dir", str(bot_settings.data_dir), "forget", "archive.md", "--kb", KB_A]
        result = await asyncio.to_thread(CliRunner().invoke, cli_module.cli, argv)
        assert result.exit_code == 0 and "Removed archive.md" in result.output, result.output
    else:  # any other engine caller, which knows nothing of the bot
        engine = Engine(bot_settings, embedder=embedder)
        try:
            assert await engine.clear(KB_A) == 2
        finally:
            engine.close()

    again = await make_harness()  # setup_hook finishes the recorded removal before connecting
    assert "archive.md" not in [d.name for d in again.engine.documents(KB_A)]
    page = await show_context(again, answer)
    assert REMOVED not in page and REMOVED_DOCUMENT in page
    turns = await again.bot.services.state.history(GUILD, thread)
    assert [t.content for t in turns] == [FIRST_QUESTION, REMOVED_DOCUMENT]
    path, _ = again.engine.spaces.files_of(KB_A)
    assert REMOVED.encode() not in path.read_bytes()  # scrubbed from the file, not only the rows


@pytest.mark.parametrize("first", ["Show context", "thread memory"])
async def test_a_removal_made_while_the_bot_runs_is_redacted_before_its_pages_are_shown(
    make_harness, bot_settings, embedder, monkeypatch, first
):
    """`raptor forget` while the bot runs: the next 'Show context' click, and the next follow-up's memory,
    finish the recorded removal first (each read first, so each read's own finishing is what is tested)."""
    h = await make_harness()
    await add_doc(h, "archive.md", ARCHIVE)
    await add_doc(h, "bread.txt", SOURDOUGH)
    _, replies = await ask(h, FIRST_QUESTION)
    answer = replies[-1]
    thread = next(t for t in h.bot.get_guild(GUILD).threads).id
    await h.fake.wait_for(lambda: _turns(h, thread, 2), what="the thread's exchange to be stored")
    monkeypatch.setattr(cli_module, "Engine", lambda settings: Engine(settings, embedder=embedder))
    argv = ["--data-dir", str(bot_settings.data_dir), "forget", "archive.md", "--kb", KB_A]
    result = await asyncio.to_thread(CliRunner().invoke, cli_module.cli, argv)
    assert result.exit_code == 0, result.output
    if first == "thread memory":
        turns = await h.bot.services.state.history(GUILD, thread)
        assert [t.content for t in turns] == [FIRST_QUESTION, REMOVED_DOCUMENT]
    page = await show_context(h, answer)
    assert REMOVED not in page and REMOVED_DOCUMENT in page
    turns = await h.bot.services.state.history(GUILD, thread)
    assert [t.content for t in turns] == [FIRST_QUESTION, REMOVED_DOCUMENT]
