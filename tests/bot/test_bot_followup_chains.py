"""A multi-turn chain of follow-ups in one thread, through the bot's real flows (fake Discord, real
engine, no LLM): 'what came next' goes on in reading order, 'r u sure?' shows the claims it checked (not
a searched question), a bare 'when?' after it asks about what the last answer quoted, 'ok thanks'
searches nothing, and a correction asks the last real question again about what was meant."""

from __future__ import annotations

import dataclasses

from raptor_engine.query.followup import CONTEXT_OPEN
from raptor_engine.query.verify import CHECKED
from tests.bot.conftest import GUILD
from tests.bot.test_bot_answers import bot_reply_in, footer_of, quotes_of
from tests.bot.test_bot_flows import add_doc, ask
from tests.test_followup_chains import CANAL


def flat(text: str) -> str:
    return " ".join(text.split())


async def test_a_thread_chain_of_next_check_when_thanks_and_a_correction(make_harness, bot_settings):
    h = await make_harness(settings=dataclasses.replace(bot_settings, questions_per_minute=100))
    await add_doc(h, "canal.md", CANAL)
    _, replies = await ask(h, "What happened in 1862?")
    assert "railway" in replies[0]["content"]
    thread = next(t for t in h.bot.get_guild(GUILD).threads).id

    h.user_message(thread, "what came next", mention_bot=True)
    following = quotes_of((await bot_reply_in(h, thread, 1))["content"])
    places = [flat(CANAL).index(quote) for quote in following]
    assert places and places == sorted(places), following
    assert places[0] > flat(CANAL).index("In 1862 a railway opened"), following

    h.user_message(thread, "r u sure?", mention_bot=True)
    checked = await bot_reply_in(h, thread, 2)
    assert checked["content"].startswith(CHECKED), checked["content"]
    footer = footer_of(checked)
    assert footer.startswith(f"Checked against the documents: \u201c{following[0]}"), footer
    assert "Searched as" not in footer

    h.user_message(thread, "when?", mention_bot=True)
    when = footer_of(await bot_reply_in(h, thread, 3))
    assert when.startswith(f"Searched as: When?{CONTEXT_OPEN}{following[0]}"), when

    h.user_message(thread, "ok thanks", mention_bot=True)
    thanks = await h.fake.wait_for(
        lambda: next((m for m in h.fake.channel_messages(thread) if "welcome" in m["content"]), None),
        what="the reply to thanks",
    )
    assert not thanks["embeds"]  # nothing searched, nothing cited

    h.user_message(thread, "When did the railway open?", mention_bot=True)
    assert "1862" in quotes_of((await bot_reply_in(h, thread, 4))["content"])[0]
    h.user_message(thread, "no, i meant the canal", mention_bot=True)
    corrected = await bot_reply_in(h, thread, 5)
    assert footer_of(corrected).startswith("Searched as: When did the canal open?"), footer_of(corrected)
    assert any("1796" in quote for quote in quotes_of(corrected["content"])), corrected["content"]
