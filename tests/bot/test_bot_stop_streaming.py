"""SIGTERM while an answer streams: a real `python -m bot` process, the fake Discord and the test LLM
server, whose reply pauses mid-stream until the test releases it (so the signal lands mid-answer by
construction, not by timing). The reply ends without its cursor, with the sentence that says why and
the sources of what was written; the bot exits 0."""

from __future__ import annotations

import signal

from bot.client import ANSWER_STOPPED
from bot.streaming import CURSOR
from tests.bot.conftest import ALICE, CHAN_A, GUILD, snowflake, text_of
from tests.bot.test_bot_answers import ARCHIVE
from tests.bot.test_bot_restart import connected, kb_add, start_bot
from tests.bot.test_bot_streaming import ANSWER, QUESTION
from tests.llm_server import FakeLLMServer


async def slash_ask(fake_api, question: str) -> str:
    """/ask in CHAN_A by Alice, over the gateway; its interaction token."""
    data = {
        "id": str(snowflake()),
        "name": "ask",
        "type": 1,
        "options": [{"name": "question", "type": 3, "value": question}],
    }
    channel = {"id": str(CHAN_A), "type": 0, "guild_id": str(GUILD), "name": "docs"}
    token, payload = fake_api.interaction(2, data, channel, ALICE)
    await fake_api.dispatch(GUILD, "INTERACTION_CREATE", payload)
    return token


async def test_sigterm_during_a_streamed_answer_ends_it_with_why_and_its_sources(fake_api, tmp_path):
    async with FakeLLMServer() as llm:
        llm.responder = lambda body: ANSWER if "numbered context blocks" in str(body) else "Summary."
        llm.hang_seconds = 900  # the paused reply waits for release(), whatever the machine's speed
        data_dir, log = tmp_path / "data", tmp_path / "bot.log"
        document = fake_api.add_file("archive.md", ARCHIVE.encode())
        bot = start_bot(fake_api, data_dir, log, {
            "OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAPTOR_BUILD_WORKERS": "0",
        })
        try:
            await connected(fake_api, bot, log)
            added = await kb_add(fake_api, document)
            await fake_api.wait_for(
                lambda: "Done" in (fake_api.original(added) or {}).get("content", ""), 300, "the document"
            )
            llm.pause_after = 12  # words: the answer shows its start, then waits
            token = await slash_ask(fake_api, QUESTION)
            await fake_api.wait_for(
                lambda: (fake_api.original(token) or {}).get("content", "").endswith(CURSOR), 300, "the stream"
            )
            bot.send_signal(signal.SIGTERM)
            await fake_api.wait_for(lambda: bot.poll() is not None, 300, "the bot to stop")
        finally:
            llm.release()
            if bot.poll() is None:
                bot.kill()
    assert bot.returncode == 0, log.read_text()[-3000:]
    final = fake_api.original(token)
    content = final["content"]
    assert CURSOR not in content, content
    assert content.startswith("In 1962 the town council") and "fireproof vault" not in content, content
    assert content.endswith(f"⚠️ {ANSWER_STOPPED}"), content
    assert "Sources" in text_of(final) and "archive.md" in text_of(final), text_of(final)
