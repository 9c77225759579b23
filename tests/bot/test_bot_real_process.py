"""The real bot process (`python -m bot`), driven from outside over the fake Discord's gateway
(tests/bot/real_bot.py): files posted and added with /kb add, /ask and the thread it opens, follow-ups
typed in the thread, one edited, a posted file's message deleted, and a restart in the middle."""

from __future__ import annotations

import re

from bot.adding import Tally
from bot.answering import EMPTY_KB, STILL_BUILDING, WORDLESS_QUESTION
from bot.client import DM_POINTER, THREAD_POINTER
from bot.hints import files_outcome
from bot.kb import kb_name
from raptor_engine.engine import Engine
from raptor_engine.query.followup import quotes_in
from raptor_tools.followup_onward import TALE, flat
from tests.bot.conftest import ALICE, BOB, BOT_ID, CHAN_A, CHAN_B, GUILD, custom_ids, text_of, user_payload
from tests.bot.real_bot import RealBot
from tests.bot.test_bot_answers import footer_of
from tests.bot.test_bot_busy_channel import kestrel_sections
from tests.bot.test_bot_mentions import replies_to
from tests.unhurried import unhurried_settings

MINUTES = """# Minutes of the allotment society, 3 May 2026

Present: Joan Petrie (chair), Amit Shah (treasurer), eleven members.

The society agreed to replace the shed on plot 14, which the storm of February flattened. The new shed
will be built by the members on 20 June, with timber paid for from the repair fund.

Amit Shah reported that the repair fund holds 812 pounds. The water troughs will be cleaned in July.
"""

MANUAL = """# The Hartwell rotavator manual

Before starting the rotavator, check the oil level with the dipstick under the red cap. Use SAE 30 oil.
To start it, set the choke, pull the cord firmly twice and open the throttle halfway.
Clean the tines after every use and store the machine in a dry shed.
"""


def quoted(text: str) -> list[str]:
    """The sentences an answer's quotes hold, each once, in its order."""
    return [s for quote in quotes_in(text) for s in re.split(r"(?<=[.!?])\s+", flat(quote)) if s]


def where(sentence: str) -> int:
    """Where a sentence of the tale stands in it."""
    return flat(TALE).index(sentence.lstrip("\u2026"))


def bot_answer_after(bot: RealBot, channel: int, message: dict) -> dict | None:
    """The bot's answer (a message with embeds) posted after the member's `message` in `channel`."""
    later = [m for m in bot.bot_messages(channel) if int(m["id"]) > int(message["id"]) and m["embeds"]]
    return later[0] if later else None


async def test_a_conversation_with_the_real_bot_process_across_a_restart(fake_api, tmp_path, embedder):
    bot = RealBot(fake_api, tmp_path, env={"RAPTOR_BUILD_WORKERS": "0"})  # builds in the bot's threads
    try:
        await bot.start()
        on = [{"name": "enabled", "type": 5, "value": True}]
        await bot.replies_done(bot.slash("kb", on, sub="autoingest"))
        posted = bot.say(CHAN_A, "minutes of Saturday", attachments=[fake_api.add_file("minutes.md", MINUTES.encode())])
        await fake_api.wait_for(
            lambda: any("✅ **minutes.md** added" in text_of(m) for m in bot.bot_messages(CHAN_A)), 240, "the post"
        )
        token = bot.kb_add(fake_api.add_file("manual.md", MANUAL.encode()))
        added = await bot.replies_done(token, lambda r: "Done" in text_of(r[0]), "the /kb add")
        assert "✅ **manual.md** added" in text_of(added[0])

        asked = bot.ask("When will the new shed be built?")
        thread = await bot.answer_thread(asked)
        assert "20 June" in text_of((await bot.replies_done(asked))[0])

        follow = bot.say(thread, "who chaired the meeting?")
        reply = await fake_api.wait_for(lambda: bot_answer_after(bot, thread, follow), 120, "the follow-up's answer")
        assert "Joan Petrie" in reply["content"] and "812" not in reply["content"]
        bot.edit(follow, "how much does the repair fund hold?")
        await fake_api.wait_for(
            lambda: "812" in fake_api.messages[int(reply["id"])]["content"], 120, "the edited follow-up's answer"
        )
        assert [m["id"] for m in bot.bot_messages(thread) if m["embeds"]] == [reply["id"]]  # edited, not added

        bot.delete(posted)  # the minutes leave with the message that posted them
        await bot.state.sent()
        await fake_api.wait_for(
            lambda: "removed document" in bot.log.read_text(), 120, "the posted file's document to go"
        )
        await bot.restart()
        again = bot.say(thread, "how do I start the rotavator?")
        after = await fake_api.wait_for(lambda: bot_answer_after(bot, thread, again), 240, "an answer after the restart")
        assert "choke" in after["content"] and not re.search(r"shed on plot|812", after["content"])
        assert await bot.stop() == 0, bot.log.read_text()[-3000:]
    finally:
        bot.close()
    engine = Engine(unhurried_settings(data_dir=bot.data_dir), embedder=embedder)
    try:
        assert [d.name for d in engine.documents(kb_name(GUILD, CHAN_A))] == ["manual.md"]
    finally:
        engine.close()


async def test_follow_ups_that_go_on_from_the_last_answer_in_the_real_bot_process(fake_api, tmp_path):
    """A member who trusts the bot with a story asks, then follows up in the answer's thread: "what happened
    before that?" quotes what comes before the answer's passage, "and before that?" further back, "who
    else?" someone the answers did not name, "what else did he do?" after "Who lent Oswin the money?"
    tells more of the lender (searched as asked), none repeating a quote; a question in Spanish is told
    the story is in English."""
    bot = RealBot(fake_api, tmp_path, env={"RAPTOR_BUILD_WORKERS": "0", "RAPTOR_QUESTIONS_PER_MINUTE": "30"})
    try:
        await bot.start()
        token = bot.kb_add(fake_api.add_file("tale.md", TALE.encode()))
        added = await bot.replies_done(token, lambda r: "Done" in text_of(r[0]), "the /kb add")
        assert "✅ **tale.md** added" in text_of(added[0])
        asked = bot.ask("Who took the mill?")
        thread = await bot.answer_thread(asked)
        first = text_of((await bot.replies_done(asked))[0])
        assert "Garrick took the mill" in first, first

        async def follow(question: str) -> tuple[str, str]:
            """The follow-up's answer text and its whole message (footer included)."""
            sent = bot.say(thread, question)
            reply = await fake_api.wait_for(lambda: bot_answer_after(bot, thread, sent), 120, f"'{question}'")
            return reply["content"], text_of(reply)

        anchor = where("Oswin could not pay, so Garrick took the mill.")
        back, _ = await follow("what happened before that?")
        further, _ = await follow("and before that?")
        assert quoted(back) and quoted(further), (back, further)
        assert all(where(s) < anchor for s in quoted(back)), back
        assert max(where(s) for s in quoted(further)) < min(where(s) for s in quoted(back)), further

        others, _ = await follow("who else?")
        assert quoted(others) and not set(quoted(others)) & set(quoted(back) + quoted(further)), others
        assert re.search(r"Brenna|countess|Haldor", others), others

        lent, _ = await follow("Who lent Oswin the money?")
        assert "Garrick lent him forty crowns" in lent, lent
        more, whole = await follow("what else did he do?")  # he: Garrick, whom the answer named, not Oswin
        assert "Searched as: What else did he do?" in whole, whole
        assert quoted(more) and not set(quoted(more)) & set(quoted(lent)), more
        assert all("Garrick" in s for s in quoted(more)), more

        spanish, _ = await follow("¿Quién tomó el molino del molinero?")
        assert spanish.startswith("The documents are in English and the question seems to be in Spanish"), spanish
        assert await bot.stop() == 0, bot.log.read_text()[-3000:]
    finally:
        bot.close()


async def test_a_busy_channel_with_the_real_bot_process(fake_api, tmp_path, embedder):
    """Members at once, as the real process sees them (botqa14): /ask sent right after another channel's
    first /kb add reads, privately, that the first document is on its way; a posted message of three files
    of which one is too large adds the two others under "Done: 2 files added and 1 not added"; the same file
    twice in one /kb add (once under another name) is added once, under "Already here: 2 files, nothing
    changed.", each copy's line naming the document already here."""
    bot = RealBot(fake_api, tmp_path, env={"RAPTOR_BUILD_WORKERS": "0"})
    try:
        await bot.start()
        first = bot.kb_add(fake_api.add_file("kestrels.md", kestrel_sections(400)), channel=CHAN_B)
        # The command counts the file before it defers; a question sent before that was asked before any upload.
        await fake_api.wait_for(lambda: fake_api.tokens[first].responded, 60, "the command to accept the file")
        asked = bot.ask("Where does kestrel 5 nest?", channel=CHAN_B)
        reply = (await bot.replies_done(asked))[0]
        assert text_of(reply) == STILL_BUILDING and reply["flags"] & 64, reply

        await bot.replies_done(bot.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
        files = [
            fake_api.add_file("minutes.md", MINUTES.encode()),
            fake_api.add_file("huge.txt", b"x", size=500_000_000),
            fake_api.add_file("manual.md", MANUAL.encode()),
        ]
        bot.say(CHAN_A, "Saturday's papers", attachments=files)
        done = await fake_api.wait_for(
            lambda: [m for m in bot.bot_messages(CHAN_A) if text_of(m).startswith("Done")], 240, "the posted files"
        )
        lines = text_of(done[0]).split("\n")
        assert lines[0] == "Done: 2 files added and 1 not added." and lines[1].startswith("❌ **huge.txt** is "), lines

        twice = bot.kb_add(*(fake_api.add_file(name, MINUTES.encode()) for name in ("minutes.md", "copy.md")))
        lines = text_of((await bot.replies_done(twice, lambda r: "Already here" in text_of(r[0])))[0]).split("\n")
        assert lines == [
            "Already here: 2 files, nothing changed.",
            "↩️ **minutes.md** is already in this knowledge base (same content); nothing changed.",
            "↩️ **copy.md** is already in this knowledge base as **minutes.md** (same content); nothing changed.",
        ], lines
        await bot.replies_done(first, lambda r: "Done" in text_of(r[0]))
        assert await bot.stop() == 0, bot.log.read_text()[-3000:]
    finally:
        bot.close()
    engine = Engine(unhurried_settings(data_dir=bot.data_dir), embedder=embedder)
    try:
        assert sorted(d.name for d in engine.documents(kb_name(GUILD, CHAN_A))) == ["manual.md", "minutes.md"]
        assert [d.name for d in engine.documents(kb_name(GUILD, CHAN_B))] == ["kestrels.md"]
    finally:
        engine.close()


REPORT_2019 = """# Harbour survey report 2019

Written by Dr. Ines Calloway for the harbour board.

The 2019 survey found the north pier unsafe because salt water had corroded its iron piles.
Calloway recommended closing the north pier to vehicles and repairing the piles within two years.
"""

REPORT_2021 = """# Harbour survey report 2021

Written by Tomas Reyes, the harbour engineer.

Reyes recommended dredging the inner basin because silt had reduced its depth to two metres.
The survey counted 230 moorings, and the waiting list for a mooring had 55 names.
"""


async def test_a_thread_whose_question_and_document_are_removed_with_the_real_bot_process(
    fake_api, tmp_path, embedder
):
    """botqa16: a member deletes a question in the thread (the bot deletes its answer and the next follow-up
    does not lean on it); a member without rights runs /kb remove in the thread (one sentence); a manager
    removes the report the thread cited (the follow-up says so once); afterwards the bot's records hold
    neither the report's name nor its text."""
    bot = RealBot(fake_api, tmp_path, env={"RAPTOR_BUILD_WORKERS": "0", "RAPTOR_QUESTIONS_PER_MINUTE": "30"})
    try:
        await bot.start()
        files = [fake_api.add_file(n, t.encode()) for n, t in (("r2019.md", REPORT_2019), ("r2021.md", REPORT_2021))]
        await bot.replies_done(bot.kb_add(*files), lambda r: "Done" in text_of(r[0]), "the /kb add")
        asked = bot.ask("What did the 2019 report recommend?")
        thread = await bot.answer_thread(asked)
        assert "closing the north pier" in text_of((await bot.replies_done(asked))[0])

        async def follow(question: str) -> tuple[dict, dict]:
            sent = bot.say(thread, question)
            return sent, await fake_api.wait_for(lambda: bot_answer_after(bot, thread, sent), 120, f"'{question}'")

        basin, answer = await follow("how deep was the inner basin?")
        assert "two metres" in answer["content"]
        bot.delete(basin)
        await fake_api.wait_for(lambda: int(answer["id"]) not in fake_api.messages, 120, "the answer's deletion")
        _, why = await follow("why?")
        assert "Searched as: Why? (context: What did the 2019 report recommend?)" in text_of(why), text_of(why)

        refused = bot.slash("kb", [{"name": "document", "type": 3, "value": "r2021.md"}], sub="remove", channel=thread, user=BOB)
        assert [text_of(r) for r in await bot.replies_done(refused)] == [
            "You need the Manage Messages permission in this channel to change its knowledge base."
        ]
        await follow("how many moorings were counted?")  # cites r2021.md
        removal = bot.slash("kb", [{"name": "document", "type": 3, "value": "r2021.md"}], sub="remove", channel=thread)
        prompt = (await bot.replies_done(removal))[0]
        bot.click(prompt, "raptor:confirm", channel=thread)
        await fake_api.wait_for(lambda: "Removed" in text_of(fake_api.messages[int(prompt["id"])]), 120, "the removal")
        _, after = await follow("and who wrote it?")
        notice = "⚠️ The document “r2021.md”, cited by an earlier answer in this thread, was removed"
        assert notice in after["content"], after["content"]
        _, later = await follow("what else?")
        assert "r2021.md" not in later["content"], later["content"]
        assert await bot.stop() == 0, bot.log.read_text()[-3000:]
    finally:
        bot.close()
    engine = Engine(unhurried_settings(data_dir=bot.data_dir), embedder=embedder)
    try:
        with engine.in_space(kb_name(GUILD, CHAN_A)):
            db = engine.store.db
            answers = db.execute("SELECT content, documents FROM bot_turns WHERE role = 'assistant'").fetchall()
            pages = db.execute("SELECT context_json FROM bot_answers").fetchall()
            questions = db.execute("SELECT content FROM bot_turns WHERE role = 'user' UNION ALL "
                                   "SELECT question FROM bot_answers").fetchall()
            builds = db.execute("SELECT document FROM builds").fetchall()
    finally:
        engine.close()
    # the answers and 'Show context' pages quote neither the removed report nor the deleted question's
    # answer; the questions (the members' own words) stay, less the deleted one
    held = [row for row in map(str, [*answers, *pages]) if re.search(r"r2021|Reyes|moorings|inner basin", row)]
    assert answers and pages and not held, held
    assert questions and not [q for q in questions if "inner basin" in q[0]], questions
    assert not [b for b in builds if b[0] == "r2021.md"]


async def test_small_messages_around_an_answer_with_the_real_bot_process(fake_api, tmp_path):
    """botqa18, played through the real process: the empty knowledge base's short sentence; a reaction typed
    in the thread gets nothing and "?" a short prompt; a follow-up under a spoiler is searched as its words,
    then edited to "👍" keeps its answer; a follow-up forwarded into the thread is answered; a reply to the
    answer in its channel is pointed to the thread; a question beside a file already here is told so."""
    from tests.bot.test_bot_small_messages import bot_messages_after, post  # it imports this module's texts

    bot = RealBot(fake_api, tmp_path, env={"RAPTOR_BUILD_WORKERS": "0", "RAPTOR_QUESTIONS_PER_MINUTE": "100"})
    try:
        await bot.start()
        assert text_of((await bot.replies_done(bot.ask("what oil does it take?")))[0]) == EMPTY_KB
        added = bot.kb_add(fake_api.add_file("minutes.md", MINUTES.encode()), fake_api.add_file("manual.md", MANUAL.encode()))
        await bot.replies_done(added, lambda r: "Done" in text_of(r[0]), "the /kb add")
        asked = bot.ask("When will the new shed be built?")
        thread = await bot.answer_thread(asked)

        reaction = post(bot, thread, "👍")
        post(bot, thread, "<:blobthink:123456789012345678>")
        lone = post(bot, thread, "?")
        spoiler = post(bot, thread, "||who is the treasurer?||")
        answer = await fake_api.wait_for(lambda: bot_answer_after(bot, thread, spoiler), 120, "the spoiler's answer")
        assert "Amit Shah (treasurer)" in answer["content"] and "||" not in footer_of(answer), footer_of(answer)
        said = [text_of(m) for m in bot_messages_after(bot, thread, reaction) if not m["embeds"]]
        assert said == [WORDLESS_QUESTION] and bot_answer_after(bot, thread, lone)["id"] == answer["id"], said

        bot.edit(spoiler, "👍")
        forwarded = post(
            bot, thread, "",
            message_reference={"type": 1, "message_id": "1", "channel_id": str(CHAN_A)},
            message_snapshots=[{"message": {
                "content": "who chaired the meeting?", "embeds": [], "attachments": [], "type": 0, "flags": 0,
                "mentions": [], "mention_roles": [], "components": [], "timestamp": answer["timestamp"],
                "edited_timestamp": None,
            }}],
        )
        chaired = await fake_api.wait_for(lambda: bot_answer_after(bot, thread, forwarded), 120, "the forward's answer")
        assert "Joan Petrie (chair)" in chaired["content"]
        await fake_api.wait_for(lambda: "edited to ask nothing" in bot.log.read_text(), 120, "the edit to be read")
        assert fake_api.messages[int(answer["id"])]["content"] == answer["content"]  # the edit left it

        reply = {"type": 19, "message_reference": {"type": 0, "message_id": str(thread), "channel_id": str(CHAN_A)}}
        replied = post(bot, CHAN_A, "and who paid for the timber?", mention=True, **reply)
        pointer = await fake_api.wait_for(lambda: bot_messages_after(bot, CHAN_A, replied), 120, "the pointer")
        assert [text_of(m) for m in pointer] == [THREAD_POINTER.format(thread=thread)]

        await bot.replies_done(bot.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
        beside = post(bot, CHAN_A, "what oil?", mention=True, attachments=[fake_api.add_file("manual.md", MANUAL.encode())])
        already = files_outcome(Tally(already=1))
        await fake_api.wait_for(
            lambda: already in [text_of(m) for m in bot_messages_after(bot, CHAN_A, beside)], 240, "the files' sentence"
        )
        assert await bot.stop() == 0, bot.log.read_text()[-3000:]
    finally:
        bot.close()


async def test_messages_nobody_had_sent_with_the_real_bot_process(fake_api, tmp_path, embedder):
    """botqa22, through the real process: a direct message gets the sentence saying where the bot answers;
    /ask of only the bot's mention is asked for words; a posted file whose message is deleted while it
    downloads is built, removed, and its line says so; Discord's RECONNECT in the middle of a conversation
    (the session resumed) loses no follow-up; a name typed into /kb remove in capitals removes it."""
    bot = RealBot(fake_api, tmp_path, env={"RAPTOR_BUILD_WORKERS": "0", "RAPTOR_QUESTIONS_PER_MINUTE": "100"})
    try:
        await bot.start()
        await bot.replies_done(bot.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
        token = bot.kb_add(fake_api.add_file("minutes.md", MINUTES.encode()))
        await bot.replies_done(token, lambda r: "Done" in text_of(r[0]), "the /kb add")

        dm = bot.direct_message("when will the shed be built?")
        assert await fake_api.wait_for(lambda: replies_to(bot, dm), 120, "the DM's reply") == [DM_POINTER]
        wordless = (await bot.replies_done(bot.ask(f"<@{BOT_ID}>")))[0]
        assert text_of(wordless) == WORDLESS_QUESTION and wordless["flags"] & 64, wordless

        survey = fake_api.add_file("survey.md", kestrel_sections(40))
        fake_api.held.add(survey["url"].rsplit("/cdn/", 1)[1])  # its download stalls until released
        posted = bot.say(CHAN_A, "the quarry survey", attachments=[survey])
        await fake_api.wait_for(lambda: fake_api.cdn_hits, 120, "the download to start")
        bot.delete(posted)
        await bot.state.sent()
        fake_api.release_held.set()
        line = "🗑️ **survey.md** was built and then removed: its message was deleted."
        await fake_api.wait_for(
            lambda: any(line in text_of(m) for m in bot.bot_messages(CHAN_A)), 240, "the survey's line"
        )

        asked = bot.ask("When will the new shed be built?")
        thread = await bot.answer_thread(asked)
        await bot.replies_done(asked)
        await fake_api.ask_to_reconnect(0)
        follow = bot.say(thread, "who chaired the meeting?")  # sent once the session is resumed
        reply = await fake_api.wait_for(lambda: bot_answer_after(bot, thread, follow), 120, "the follow-up's answer")
        assert "Joan Petrie" in reply["content"] and fake_api.resumes == [0], (reply["content"], fake_api.resumes)

        remove = (await bot.replies_done(bot.slash("kb", [{"name": "document", "type": 3, "value": " MINUTES.MD"}], sub="remove")))[0]
        assert "minutes.md" in text_of(remove) and "raptor:confirm" in custom_ids(remove), remove
        confirmed = await bot.replies_done(bot.click(remove, "raptor:confirm"), lambda r: "Removed" in text_of(r[0]))
        assert "minutes.md" in text_of(confirmed[0]), confirmed
        assert await bot.stop() == 0, bot.log.read_text()[-3000:]
    finally:
        bot.close()
    engine = Engine(unhurried_settings(data_dir=bot.data_dir), embedder=embedder)
    try:
        assert engine.documents(kb_name(GUILD, CHAN_A)) == []
    finally:
        engine.close()


async def test_members_sharing_a_thread_with_the_real_bot_process(fake_api, tmp_path):
    """botqa23, through the real process: two members asking in turn in one thread each go on from their own
    exchange; "can you make it shorter?" gets the sentence saying the bot cannot reshape an answer; a
    member's Discord reply to another member's question that asks nothing is left to them, and the
    follow-up after it leans on neither."""
    from raptor_engine.query.smalltalk import REPLIES, Act
    from tests.bot.test_bot_outside_pass23 import said

    bot = RealBot(fake_api, tmp_path, env={"RAPTOR_BUILD_WORKERS": "0", "RAPTOR_QUESTIONS_PER_MINUTE": "100"})
    try:
        await bot.start()
        added = bot.kb_add(fake_api.add_file("minutes.md", MINUTES.encode()), fake_api.add_file("manual.md", MANUAL.encode()))
        await bot.replies_done(added, lambda r: "Done" in text_of(r[0]), "the /kb add")
        asked = bot.ask("When will the new shed be built?")
        thread = await bot.answer_thread(asked)
        await bot.replies_done(asked)

        sent = [
            said(bot, thread, "what oil does the rotavator take?", BOB),
            said(bot, thread, "who is the treasurer?", ALICE),
            said(bot, thread, "and how do I start it?", BOB),
            said(bot, thread, "can you make it shorter?", ALICE),
        ]
        answers = [await fake_api.wait_for(lambda m=m: replies_to(bot, m), 120, "an answer") for m in sent]
        assert "set the choke" in answers[2][0] and "treasurer" not in answers[2][0].split("Searched as")[-1], answers[2]
        assert answers[3] == [REPLIES[Act.REWORD]], answers[3]

        to_alice = {
            "type": 19,
            "message_reference": {"message_id": sent[1]["id"], "channel_id": str(thread)},
            "referenced_message": dict(sent[1], author=user_payload(ALICE, "alice")),
            "mentions": [user_payload(ALICE, "alice")],
        }
        quiet = said(bot, thread, "I was there, it was Amit", BOB, **to_alice)
        fund = said(bot, thread, "how much does he hold in the fund?", ALICE)
        reply = await fake_api.wait_for(lambda: bot_answer_after(bot, thread, fund), 120, "the fund's answer")
        assert "812 pounds" in reply["content"] and "Amit Shah hold" in footer_of(reply), footer_of(reply)
        assert "I was there" not in footer_of(reply) and "start" not in footer_of(reply), footer_of(reply)
        assert replies_to(bot, quiet) == [], replies_to(bot, quiet)
        assert await bot.stop() == 0, bot.log.read_text()[-3000:]
    finally:
        bot.close()
