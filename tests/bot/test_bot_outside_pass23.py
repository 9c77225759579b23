"""botqa23's outside pass (docs/BOT.md, last section), played with real discord.py objects against the fake
Discord API over the real engine; each test fails on the code before its fix."""

from __future__ import annotations

import asyncio

import pytest

from bot.answering import follow_up_text_of
from tests.bot.conftest import ALICE, BOB, BOT_ID, GUILD, user_payload
from tests.bot.test_bot_answers import footer_of
from tests.bot.test_bot_flows import add_doc, ask
from tests.bot.test_bot_mentions import replies_to
from tests.bot.test_bot_real_process import MANUAL, MINUTES


def bot_answer_after(h, channel: int, message: dict) -> dict | None:
    """The bot's answer (a message with embeds) posted after the member's `message` in `channel`."""
    later = [
        m for m in h.fake.channel_messages(channel)
        if int(m["author"]["id"]) == BOT_ID and int(m["id"]) > int(message["id"]) and m["embeds"]
        and str((m.get("message_reference") or {}).get("message_id")) == message["id"]
    ]
    return later[0] if later else None


def said(h, channel: int, content: str, user: int, **fields) -> dict:
    """A member's message as Discord's MESSAGE_CREATE carries it, with further fields (a reply's reference
    and the message it replies to, mentions)."""
    message = h.fake.post(channel, content, user=user)
    message.update(fields)
    h.state.parse_message_create(dict(message))
    return message


async def minutes_thread(h) -> int:
    """The minutes and the rotavator manual added, "When will the new shed be built?" asked by Alice with
    /ask; the thread it opened."""
    await add_doc(h, "minutes.md", MINUTES)
    await add_doc(h, "manual.md", MANUAL)
    _, replies = await ask(h, "When will the new shed be built?")
    assert "20 June" in replies[0]["content"]
    return next(t for t in h.bot.get_guild(GUILD).threads).id


async def test_two_members_asking_in_turn_in_one_thread_each_go_on_from_their_own_exchange(make_harness):
    """Bob asks about the rotavator, Alice about the treasurer, then each follows up with a pronoun: Bob's
    "it" is the rotavator and Alice's "he" the treasurer. Before, each follow-up was read against the
    thread's latest exchange, the other member's: "How do I start it? (context: Who is the treasurer? …)"
    answered "Nothing in the documents clearly answers this", and Alice's was searched with Bob's question
    about starting the rotavator as its context."""
    h = await make_harness(message_content=True)
    thread = await minutes_thread(h)
    sent = [
        h.say(thread, "what oil does the rotavator take?", user=BOB),
        h.say(thread, "who is the treasurer?", user=ALICE),
        h.say(thread, "and how do I start it?", user=BOB),
        h.say(thread, "how much does he hold in the fund?", user=ALICE),
    ]
    answers = [await h.fake.wait_for(lambda m=m: bot_answer_after(h, thread, m), what="an answer") for m in sent]
    assert [int(a["message_reference"]["message_id"]) for a in answers] == [int(m["id"]) for m in sent]
    start, fund = answers[2], answers[3]
    assert "set the choke" in start["content"] and "Nothing in the documents" not in start["content"], start["content"]
    assert "treasurer" not in footer_of(start).lower(), footer_of(start)
    assert "812 pounds" in fund["content"] and "Amit Shah hold" in footer_of(fund), (fund["content"], footer_of(fund))
    assert "start" not in footer_of(fund).lower(), footer_of(fund)  # Bob's follow-up is not its context


async def test_a_member_who_has_not_asked_in_the_thread_goes_on_from_its_latest_exchange(make_harness):
    """Bob's first message in Alice's thread leans on the thread's latest exchange (Alice's), as before; so
    does Alice's follow-up right after her own question (her exchange is the latest)."""
    h = await make_harness(message_content=True)
    thread = await minutes_thread(h)
    treasurer = h.say(thread, "who is the treasurer?", user=ALICE)
    await h.fake.wait_for(lambda: bot_answer_after(h, thread, treasurer), what="the treasurer's answer")
    joined = h.say(thread, "how much does he hold in the fund?", user=BOB)
    fund = await h.fake.wait_for(lambda: bot_answer_after(h, thread, joined), what="Bob's answer")
    assert "812 pounds" in fund["content"], fund["content"]


async def test_members_talking_to_each_other_in_an_answer_thread_are_left_to_it(make_harness):
    """Bob's Discord reply to Alice's question ("I was there, it was Joan") and Alice's "@bob thanks, that
    helps" ask the bot nothing: no answer, and nothing the next follow-up leans on. Before, each was
    searched and answered ("Searched as: I was there, the meeting was Joan"), and the next follow-up read
    "(context: @bob thanks, that helps)". A question to a member, or one replying to a member's message,
    is still answered, as is a statement that addresses nobody."""
    h = await make_harness(message_content=True)
    thread = await minutes_thread(h)
    chaired = h.say(thread, "who chaired the meeting?", user=ALICE)
    await h.fake.wait_for(lambda: bot_answer_after(h, thread, chaired), what="the first answer")
    turns = len(await h.bot.services.state.history(GUILD, thread))
    to_alice = {
        "type": 19,
        "message_reference": {"message_id": chaired["id"], "channel_id": str(thread)},
        "referenced_message": dict(chaired, author=user_payload(ALICE, "alice")),
    }
    quiet = [
        said(h, thread, "I was there, it was Joan", BOB, **to_alice),
        said(h, thread, f"<@{BOB}> thanks, that helps", ALICE, mentions=[user_payload(BOB, "bob")]),
    ]
    asked = said(h, thread, "and who is the treasurer?", BOB, **to_alice)
    answer = await h.fake.wait_for(lambda: bot_answer_after(h, thread, asked), what="the treasurer's answer")
    assert "Amit Shah (treasurer)" in answer["content"] and "thanks" not in footer_of(answer), footer_of(answer)
    assert not [replies_to(h, message) for message in quiet if replies_to(h, message)]
    # the answer is shown before its exchange is attached (no longer pending): wait for it, not its message
    for _ in range(100):
        history = await h.bot.services.state.history(GUILD, thread)
        if len(history) >= turns + 2:
            break
        await asyncio.sleep(0.05)
    assert len(history) == turns + 2 and "thanks" not in " ".join(t.content for t in history), history


@pytest.mark.parametrize(
    ("typed", "asks"),
    [
        ("<@&350> when will the shed be built?", "when will the shed be built?"),
        ("@everyone <@&350>: who kept it?", "who kept it?"),
        (f"<@{BOT_ID}> <@&350>, who kept it?", "who kept it?"),
        ("can <@&350> add the charters?", "can @KB Managers add the charters?"),  # inside the question: a name
        ("who kept it? <@&350>", "who kept it? @KB Managers"),
        ("<@101> do you know when?", "@bob do you know when?"),  # a member stays (botqa20)
    ],
)
def test_roles_pinged_before_a_question_are_not_what_it_asks(typed, asks):
    names = {("@", 101): "bob", ("@&", 350): "KB Managers"}
    assert follow_up_text_of(typed, BOT_ID, lambda kind, i: names.get((kind, i))) == asks


async def test_a_follow_up_opening_with_a_roles_ping_is_answered_as_its_question(make_harness):
    """"@KB Managers when will the shed be built?" in the thread was searched with the role's name and read
    "Nothing in the documents clearly answers this" over the right sentence; now it is answered, and
    remembered, as the question."""
    h = await make_harness(message_content=True)
    thread = await minutes_thread(h)
    pinged = said(h, thread, "<@&350> when will the shed be built?", BOB, mention_roles=["350"])
    answer = await h.fake.wait_for(lambda: bot_answer_after(h, thread, pinged), what="the answer")
    assert answer["content"].startswith("From the documents:") and "20 June" in answer["content"], answer["content"]

    async def remembered() -> list:
        # the exchange is kept as pending while its answer is posted, and settled just after
        history = await h.bot.services.state.history(GUILD, thread)
        return history if len(history) >= 4 else []

    history = await h.fake.wait_for(remembered, what="the exchange remembered")
    assert history[-2].content == "when will the shed be built?", history
