"""Issue 22 through the bot: a question is worked on off the event loop, so another channel's command
is answered while it runs, and a question past RAPTOR_QUESTION_TIMEOUT gets one sentence."""

from __future__ import annotations

import dataclasses

from tests.bot.bot_samples import LIGHTHOUSE
from tests.bot.conftest import CHAN_A, CHAN_B, text_of
from tests.bot.test_bot_flows import add_doc, ask
from tests.test_question_bounds import gate_the_question


async def test_a_question_being_answered_does_not_hold_up_another_channels_command(harness, monkeypatch):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE, channel=CHAN_A)
    released, outcomes = gate_the_question(monkeypatch)
    question = h.ask("How is the lighthouse lens cleaned?", channel=CHAN_A)
    listing = h.slash("kb", sub="list", channel=CHAN_B)
    replies = await h.replies_done(listing, what="/kb list in the other channel")
    assert "no documents yet" in text_of(replies[0])
    assert not h.fake.replies(question) or h.fake.original(question)["flags"] & 128  # still thinking
    released.set()
    answered = await h.replies_done(question, lambda r: "kestrel.md" in str(r), what="the answer")
    assert "From the documents" in str(answered)
    assert outcomes == [True]


async def test_a_question_past_its_deadline_gets_one_sentence(make_harness, bot_settings, monkeypatch):
    h = await make_harness(settings=dataclasses.replace(bot_settings, question_timeout=0.5))
    await add_doc(h, "kestrel.md", LIGHTHOUSE, channel=CHAN_A)
    released, _ = gate_the_question(monkeypatch)
    try:
        _, replies = await ask(h, "How is the lighthouse lens cleaned?", channel=CHAN_A)
    finally:
        released.set()
    text = text_of(replies[0])
    assert [m["flags"] & 64 for m in replies] == [64]  # only the asker sees it
    assert text.startswith("⚠️ Answering took longer than 0.5 seconds, so it was stopped")
    assert text.count(".") == 2  # "0.5" and the one full stop: one sentence
