"""A follow-up sent as a Discord reply to an older message of the thread is read against that exchange,
not the latest one (fake Discord, real engine, no LLM)."""

from __future__ import annotations

import dataclasses

from tests.bot.test_bot_answers import bot_reply_in, footer_of, open_archive_thread, quotes_of


async def test_a_reply_to_an_older_answer_or_question_follows_that_exchange(make_harness, bot_settings):
    h = await make_harness(settings=dataclasses.replace(bot_settings, questions_per_minute=100))
    thread = await open_archive_thread(h)
    asked = h.user_message(thread, "Who computerised the catalogue?", mention_bot=True)
    computerised = await bot_reply_in(h, thread, 1)
    assert "David Orr" in quotes_of(computerised["content"])[0]
    h.user_message(thread, "Who was the first keeper?", mention_bot=True)
    first_keeper = await bot_reply_in(h, thread, 2)
    assert "Thomas Reid" in first_keeper["content"]

    # a plain follow-up leans on the latest exchange
    h.user_message(thread, "and when?", mention_bot=True)
    assert footer_of(await bot_reply_in(h, thread, 3)).startswith("Searched as: When was the first keeper?")

    # a reply to the older answer, and one to the member's own older question, lean on that exchange
    for count, older in enumerate((int(computerised["id"]), int(asked["id"])), start=4):
        h.user_message(thread, "and when?", mention_bot=True, reply_to=older)
        reply = await bot_reply_in(h, thread, count)
        assert footer_of(reply).startswith("Searched as: When was the catalogue computerised?"), footer_of(reply)
        assert "1985" in quotes_of(reply["content"])[0]

    # the reply's exchange is stored as the newest: a plain follow-up after it leans on it
    h.user_message(thread, "who?", mention_bot=True)
    latest = footer_of(await bot_reply_in(h, thread, 6))
    assert latest.startswith("Searched as: Who computerised the catalogue?"), latest
