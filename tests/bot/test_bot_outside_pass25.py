"""botqa25's outside pass (docs/BOT.md, last section), played with the real bot process and with real
discord.py objects against the fake Discord API over the real engine; each test fails on the code before
its fix."""

from __future__ import annotations

import asyncio

from tests.bot.conftest import ALICE, BOB, GUILD
from tests.bot.real_bot import RealBot
from tests.bot.test_bot_answers import footer_of
from tests.bot.test_bot_outside_pass23 import bot_answer_after, minutes_thread
from tests.bot.test_bot_real_process import MANUAL, MINUTES
from tests.bot.test_bot_real_process import bot_answer_after as real_answer_after


async def test_members_sharing_a_thread_go_on_from_their_own_exchanges_across_a_restart(fake_api, tmp_path):
    """Bob asks about the rotavator and Alice about the treasurer, the bot restarts, then Bob writes "and
    how do I start it?" and Alice "how much does he hold in the fund?". Before, who asked which exchange was
    kept in the bot's memory only: after the restart Bob's "it" was read against Alice's exchange (the
    latest), "How do I start it? (context: Who is the treasurer? …)"."""
    from tests.bot.test_bot_outside_pass23 import said

    bot = RealBot(fake_api, tmp_path, env={"RAPTOR_BUILD_WORKERS": "0", "RAPTOR_QUESTIONS_PER_MINUTE": "100"})
    try:
        await bot.start()
        added = bot.kb_add(fake_api.add_file("minutes.md", MINUTES.encode()), fake_api.add_file("manual.md", MANUAL.encode()))
        await bot.replies_done(added, lambda r: "Done" in (r[0].get("content") or ""), "the /kb add")
        asked = bot.ask("When will the new shed be built?")
        thread = await bot.answer_thread(asked)
        await bot.replies_done(asked)
        for text, member in (("what oil does the rotavator take?", BOB), ("who is the treasurer?", ALICE)):
            sent = said(bot, thread, text, member)
            await fake_api.wait_for(lambda m=sent: real_answer_after(bot, thread, m), 120, "an answer")
        await bot.restart()
        start = said(bot, thread, "and how do I start it?", BOB)
        reply = await fake_api.wait_for(lambda: real_answer_after(bot, thread, start), 120, "Bob's answer")
        assert "set the choke" in reply["content"], reply["content"]
        assert "treasurer" not in footer_of(reply).lower(), footer_of(reply)
        fund = said(bot, thread, "how much does he hold in the fund?", ALICE)
        reply = await fake_api.wait_for(lambda: real_answer_after(bot, thread, fund), 120, "Alice's answer")
        assert "812 pounds" in reply["content"] and "Amit Shah hold" in footer_of(reply), footer_of(reply)
        assert await bot.stop() == 0, bot.log.read_text()[-3000:]
    finally:
        bot.close()


async def test_a_members_own_exchange_counts_only_while_it_is_recent(make_harness, monkeypatch):
    """Bob's own exchange is the one he goes on from while it is at most INTERLEAVED_SECONDS old; older, his
    follow-up reads the thread's latest exchange (Alice's). Small talk ("thanks") is no exchange of his."""
    import bot.answering as answering

    h = await make_harness(message_content=True)
    thread = await minutes_thread(h)
    state = h.bot.services.state
    sent = []
    for text, member in (("what oil does the rotavator take?", BOB), ("thanks", BOB), ("who is the treasurer?", ALICE)):
        sent.append(h.say(thread, text, user=member))
        await h.fake.wait_for(lambda m=sent[-1]: h.fake.channel_messages(thread)[-1]["id"] != m["id"], what="a reply")
    for _ in range(100):  # an answer is shown before its exchange is attached
        if len(await state.history(GUILD, thread)) >= 8:
            break
        await asyncio.sleep(0.05)
    own = await state.member_exchange(GUILD, thread, BOB)
    assert own == int(sent[0]["id"])  # his question, not his "thanks"
    assert await state.member_exchange(GUILD, thread, ALICE) is None  # hers is the latest
    monkeypatch.setattr(answering, "INTERLEAVED_SECONDS", -1)
    late = h.say(thread, "and how do I start it?", user=BOB)
    reply = await h.fake.wait_for(lambda: bot_answer_after(h, thread, late), what="Bob's late answer")
    assert "treasurer" in footer_of(reply).lower(), footer_of(reply)


async def _answered(h, thread: int, text: str, member: int = ALICE) -> dict:
    sent = h.say(thread, text, user=member)
    return await h.fake.wait_for(lambda: bot_answer_after(h, thread, sent), what=f"the answer to {text!r}")


async def test_confirming_the_other_one_and_when_after_a_table_through_the_bot(make_harness):
    """In an /ask thread over the minutes, the manual and a members' table (six questions: the limit a
    minute), "that's right?" after the
    treasurer's answer was searched as "That's right? (context: Who is the treasurer?)"; "and the other one?"
    after the shed's answer (the minutes) quoted both files; "and when?" after "who joined most recently?"
    was "Searched as: When was most recently joined?"."""
    from raptor_engine.query.verify import CHECKED
    from tests.bot.test_bot_flows import add_doc
    from tests.test_followup_outside_pass25 import MEMBERS

    h = await make_harness(message_content=True)
    thread = await minutes_thread(h)  # "When will the new shed be built?" (the minutes)
    await add_doc(h, "members.csv", MEMBERS)
    other = await _answered(h, thread, "and the other one?")
    assert "dry shed" in other["content"] and "20 June" not in other["content"], other["content"]
    assert "other one" not in footer_of(other), footer_of(other)
    await _answered(h, thread, "who is the treasurer?")
    confirmed = await _answered(h, thread, "that's right?")
    assert confirmed["content"].startswith(CHECKED) and "Amit Shah (treasurer)" in confirmed["content"], confirmed["content"]
    await _answered(h, thread, "who joined most recently?")
    when = await _answered(h, thread, "and when?")
    assert "Who joined most recently and when?" in footer_of(when), footer_of(when)
    assert when["content"].index("Lena Ross") < when["content"].index("Amit Shah"), when["content"]
