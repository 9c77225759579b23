"""A question asked in an answer's thread outlives a bot killed before answering it (bot/answering.py
`kept_until_handled`, `answer_left_questions`): it is kept in SQLite from its arrival, before it waits for
its thread's turn behind a build, and a bot started again on the same data folder answers it, after the
upload it left unfinished is built again. Before, it lived only in the killed process: nobody answered it.

The kill is played in-process: the first bot's message handlers are cancelled where they wait (nothing
after runs, as in a process that dies there), it is closed, and a second bot is started on its data."""

from __future__ import annotations

import asyncio
import signal
import sqlite3

from bot.answering import ASK_AGAIN
from raptor_engine.engine import Engine
from tests.bot.bot_samples import LIGHTHOUSE
from tests.bot.conftest import BOT_ID, CHAN_A, GUILD, thread_payload
from tests.bot.real_bot import RealBot
from tests.bot.test_bot_answers import ARCHIVE, FIRST_QUESTION, open_archive_thread
from tests.bot.test_bot_busy_channel import kestrel_sections
from tests.bot.test_bot_flows import GatedSummarizer, add_doc
from tests.bot.test_bot_real_process import MINUTES


def replies_to(h, thread: int, message: dict) -> list[dict]:
    """The bot's answers (its messages with sources) in the thread that reply to `message` (a file's status
    message replies to the message it came in too)."""
    return [
        m
        for m in h.fake.channel_messages(thread)
        if int(m["author"]["id"]) == BOT_ID
        and m["embeds"]
        and int((m.get("message_reference") or {}).get("message_id") or 0) == int(message["id"])
    ]


async def kept(h, channel: int, count: int) -> bool:
    return await h.bot.services.state.count("bot_questions", guild_id=GUILD, channel_id=channel) >= count


async def killed(h) -> None:
    """The first bot dies where it is: its message and command handlers stop where they wait, and it is closed."""
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task() and any(
            n in task.get_name() for n in ("on_message", "CommandTree")
        ):
            task.cancel()
    await asyncio.sleep(0)
    await h.bot.close()


async def test_questions_waiting_on_a_build_are_answered_after_a_kill(make_harness, embedder):
    summarizer = GatedSummarizer(embedder.count_tokens)
    summarizer.gate.set()
    h = await make_harness(message_content=True, summarizer=summarizer)
    thread = await open_archive_thread(h)
    autoingest = [{"name": "enabled", "type": 5, "value": True}]
    assert "**on**" in (await h.replies_done(h.slash("kb", autoingest, sub="autoingest")))[0]["content"]
    summarizer.gate.clear()
    summarizer.entered.clear()
    manual = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    beside = h.say(thread, "here is the manual: how often are the prisms cleaned?", attachments=[manual])
    await asyncio.wait_for(summarizer.entered.wait(), 120)  # its build holds the thread's turn
    after = h.say(thread, "and when did she leave?")  # waits for the thread's turn behind the build
    await h.fake.wait_for(lambda: kept(h, thread, 2), what="both questions kept")
    await killed(h)
    assert not replies_to(h, thread, beside) and not replies_to(h, thread, after)

    again = await make_harness(message_content=True)
    again.state.parse_thread_create(dict(thread_payload(thread, CHAN_A, "Who was appointed", owner=BOT_ID)))
    answer = await again.fake.wait_for(
        lambda: replies_to(again, thread, beside) or None, what="the first answer"
    )
    assert "every morning" in answer[0]["content"], answer[0]["content"]  # from the file built again
    answer = await again.fake.wait_for(
        lambda: replies_to(again, thread, after) or None, what="the second answer"
    )
    assert "1975" in answer[0]["content"], answer[0]["content"]
    await again.fake.wait_for(lambda: not_kept(again, thread), what="the questions let go")


async def not_kept(h, thread: int) -> bool:
    return not await kept(h, thread, 1)


async def test_an_ask_cut_short_by_a_kill_is_told_to_ask_again(make_harness, monkeypatch):
    """An /ask whose answer was being found when the bot died: its response said "thinking" until Discord
    gave up on it. Now the next start says, in that response, to ask again."""
    h = await make_harness(message_content=True)
    await add_doc(h, "archive.md", ARCHIVE)
    asked = asyncio.Event()
    original = Engine.ask

    async def stuck(self, *args, **kwargs):
        asked.set()
        await asyncio.Event().wait()  # the answer is still being found when the bot dies

    monkeypatch.setattr(Engine, "ask", stuck)
    token = h.ask(FIRST_QUESTION)
    await asyncio.wait_for(asked.wait(), 60)
    await h.fake.wait_for(lambda: kept(h, CHAN_A, 1), what="the question kept")
    await killed(h)
    assert not (h.fake.original(token) or {}).get("content")
    monkeypatch.setattr(Engine, "ask", original)  # the next bot answers as ever

    again = await make_harness(message_content=True)
    await again.fake.wait_for(
        lambda: (again.fake.original(token) or {}).get("content") == ASK_AGAIN, what="the ask again"
    )
    await again.fake.wait_for(lambda: not_kept(again, CHAN_A), what="the question let go")


def kept_in_file(bot: RealBot) -> int:
    """The questions the bot process keeps, read from its server's store file."""
    path = bot.data_dir / "guilds" / str(GUILD) / "raptor.db"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        if not db.execute("select 1 from sqlite_master where name = 'bot_questions'").fetchone():
            return 0
        return int(db.execute("select count(*) from bot_questions").fetchone()[0])


async def test_questions_waiting_on_a_build_survive_a_sigkill_of_the_real_bot_process(fake_api, tmp_path):
    """As the outside pass found it: `python -m bot` SIGKILLed while a file posted in an answer thread with a
    question builds, a follow-up waiting behind it; started again, it answers both."""
    bot = RealBot(fake_api, tmp_path, env={"RAPTOR_BUILD_WORKERS": "0"})
    try:
        await bot.start()
        on = [{"name": "enabled", "type": 5, "value": True}]
        await bot.replies_done(bot.slash("kb", on, sub="autoingest"))
        await bot.replies_done(
            bot.kb_add(fake_api.add_file("minutes.md", MINUTES.encode())),
            lambda r: "Done" in r[0]["content"],
            "the /kb add",
        )
        asked = bot.ask("When will the new shed be built?")
        thread = await bot.answer_thread(asked)
        survey = fake_api.add_file("kestrels.md", kestrel_sections(400))
        beside = bot.say(thread, "the survey: which ledge does kestrel 5 nest on?", attachments=[survey])
        after = bot.say(thread, "who chaired the meeting?")
        await fake_api.wait_for(lambda: kept_in_file(bot) >= 2, 240, "both questions kept")
        assert not replies_to(bot, thread, beside)  # killed while the survey builds
        await bot.restart(signal.SIGKILL)
        first = await fake_api.wait_for(
            lambda: replies_to(bot, thread, beside) or None, 480, "the first answer"
        )
        assert "ledge 35" in first[0]["content"], first[0]["content"]
        second = await fake_api.wait_for(
            lambda: replies_to(bot, thread, after) or None, 240, "the second answer"
        )
        assert "Joan Petrie" in second[0]["content"], second[0]["content"]
        await fake_api.wait_for(lambda: kept_in_file(bot) == 0, 60, "the questions let go")
    finally:
        bot.close()
