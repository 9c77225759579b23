"""botqa24 (docs/BOT.md, last section): acknowledgements that address nobody by mention or reply, and a
marked-up question's context, played with real discord.py objects against the fake Discord API over the
real engine; each test fails on the code before its fix."""

from __future__ import annotations

from tests.bot.conftest import ALICE, BOB, GUILD
from tests.bot.test_bot_answers import footer_of
from tests.bot.test_bot_mentions import replies_to
from tests.bot.test_bot_outside_pass23 import bot_answer_after, minutes_thread

SEARCHED = ("From the documents", "Nothing in the documents", "The documents say nothing")


async def test_acknowledgements_in_a_thread_search_nothing_and_are_no_follow_ups_context(make_harness):
    """"yes that's right, thanks Bob" and "that's what I thought" (no mention, no Discord reply) were
    searched and answered ("The documents say nothing about this"), and the next follow-up leaned on them;
    now each gets the short small-talk sentence at most, and "and who is the treasurer?" after them is
    answered as itself, while "ok, and who paid for it?" is still a question."""
    h = await make_harness(message_content=True)
    thread = await minutes_thread(h)
    turns = len(await h.bot.services.state.history(GUILD, thread))
    quiet = [h.say(thread, "yes that's right, thanks Bob", user=ALICE), h.say(thread, "that's what I thought", user=BOB)]
    asked = h.say(thread, "and who is the treasurer?", user=ALICE)
    answer = await h.fake.wait_for(lambda: bot_answer_after(h, thread, asked), what="the treasurer's answer")
    assert "Amit Shah (treasurer)" in answer["content"], answer["content"]
    assert "thanks" not in footer_of(answer).lower() and "thought" not in footer_of(answer), footer_of(answer)
    for message in quiet:
        assert not any(lead in text for text in replies_to(h, message) for lead in SEARCHED), replies_to(h, message)
    history = await h.bot.services.state.history(GUILD, thread)
    assert history[-2].content.lower().endswith("who is the treasurer?") and len(history) > turns, history


async def test_a_follow_up_after_a_question_holding_a_table_carries_plain_words(make_harness):
    """A question under a Markdown table kept its bars in the next follow-up's "Searched as" context."""
    h = await make_harness(message_content=True)
    thread = await minutes_thread(h)
    table = h.say(thread, "| plot | holder |\n|---|---|\n| 4 | Joan |\nwho chaired the meeting?", user=ALICE)
    await h.fake.wait_for(lambda: bot_answer_after(h, thread, table), what="the table's answer")
    then = h.say(thread, "and what did she say about the shed?", user=ALICE)
    answer = await h.fake.wait_for(lambda: bot_answer_after(h, thread, then), what="the follow-up's answer")
    footer = footer_of(answer)
    assert "|" not in footer and "---" not in footer, footer
