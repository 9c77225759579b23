"""botqa26's outside pass (docs/BOT.md, last section), played with real discord.py objects against the fake
Discord API over the real engine; each test fails on the code before its fix."""

from __future__ import annotations

import asyncio
import re

from bot.hints import THREAD_FILES_HINT
from tests.bot.conftest import BOB, BOT_ID, CHAN_B, text_of, upload_finished
from tests.bot.test_bot_flows import KB_A, add_doc, ask
from tests.bot.test_bot_mentions import replies_to
from tests.bot.test_bot_outside_pass23 import bot_answer_after

HANDBOOK = """# Harrowgate Community Choir: members' handbook

Rehearsals are on Tuesday evenings from 7.30 pm in St Aldhelm's church hall on Fenwick Road.
The musical director is Priya Natarajan, who joined in 2019 after twelve years at the Leeds conservatoire.
Tomasz Wójcik runs the music library; scores are returned in the blue box by the piano.
"""

SPRING = """# Spring concert programme

The spring concert is on 9 May at the Corn Exchange, starting at 7 pm. The choir sings Fauré's Requiem
and three Gershwin songs; tickets cost twelve pounds from Siobhán Kelly.
"""


async def _choir_thread(h) -> int:
    """Auto-ingest on, the handbook added, "Who runs the music library?" asked: the answer's thread."""
    await h.replies_done(h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="autoingest"))
    await add_doc(h, "handbook.md", HANDBOOK)
    _, replies = await ask(h, "Who runs the music library?")
    assert "Tomasz Wójcik" in replies[0]["content"]
    return next(t for t in h.bot.get_guild(h.bot.guilds[0].id).threads).id


def _statuses(h, thread: int) -> list[dict]:
    return [
        m for m in h.fake.channel_messages(thread) if int(m["author"]["id"]) == BOT_ID and upload_finished(m)
    ]


async def test_a_question_posted_with_a_file_in_an_answer_thread_is_answered_from_that_file(make_harness):
    """Bob posts the spring programme in the answer's thread and asks beside it "when is the spring concert?".
    Before, the question was answered first, from the documents already there ("nothing … answers this"),
    and the file was added after."""
    h = await make_harness(message_content=True)
    thread = await _choir_thread(h)
    sent = h.say(
        thread,
        "here's the programme - when is the spring concert?",
        user=BOB,
        attachments=[h.fake.add_file("spring.md", SPRING.encode())],
    )
    reply = await h.fake.wait_for(
        lambda: bot_answer_after(h, thread, sent), what="the answer beside the file"
    )
    assert "9 May" in reply["content"], reply["content"]
    assert "✅ **spring.md** added" in text_of(_statuses(h, thread)[0])


async def test_files_posted_in_an_answer_thread_without_auto_ingest_are_said_to_be_unread(make_harness):
    """Auto-ingest off: Bob's programme posted in the thread with "when is the spring concert?" is told in one
    sentence that the file was not added (and by whom it can be), and the question is answered from what is
    here; the caption alone ("here's the programme …") gets the sentence and no answer. Before, the file was
    passed over in silence and the caption searched."""
    h = await make_harness(message_content=True)
    await add_doc(h, "handbook.md", HANDBOOK)
    await ask(h, "Who runs the music library?")
    thread = next(t for t in h.bot.get_guild(h.bot.guilds[0].id).threads).id
    asked = h.say(
        thread,
        "here's the programme - when is the spring concert?",
        user=BOB,
        attachments=[h.fake.add_file("spring.md", SPRING.encode())],
    )
    await h.fake.wait_for(lambda: bot_answer_after(h, thread, asked), what="the answer beside the file")
    assert replies_to(h, asked)[0] == THREAD_FILES_HINT
    caption = h.say(
        thread, "here's the programme", user=BOB, attachments=[h.fake.add_file("spring.md", SPRING.encode())]
    )
    await h.fake.wait_for(lambda: replies_to(h, caption), what="the sentence about the file")
    later = h.say(thread, "who runs the library?", user=BOB)
    await h.fake.wait_for(lambda: bot_answer_after(h, thread, later), what="the next follow-up's answer")
    assert replies_to(h, caption) == [THREAD_FILES_HINT]
    assert [d.name for d in h.engine.documents(KB_A)] == ["handbook.md"]


async def test_a_file_posted_with_a_caption_in_an_answer_thread_is_not_searched_as_a_question(make_harness):
    """ "here's the programme for the spring concert" with the file asks nothing: the upload's status answers
    it. Before, the caption was searched as a follow-up and answered with passages."""
    h = await make_harness(message_content=True)
    thread = await _choir_thread(h)
    sent = h.say(
        thread,
        "here's the programme for the spring concert",
        user=BOB,
        attachments=[h.fake.add_file("spring.md", SPRING.encode())],
    )
    await h.fake.wait_for(lambda: _statuses(h, thread), what="the upload's status")
    later = h.say(thread, "who sells the tickets?", user=BOB)
    reply = await h.fake.wait_for(
        lambda: bot_answer_after(h, thread, later), what="the next follow-up's answer"
    )
    assert "Siobhán Kelly" in reply["content"], reply["content"]
    await asyncio.sleep(0.5)
    assert bot_answer_after(h, thread, sent) is None


FIRST = ("Ngozi", "Gareth", "Hamish", "Siobhán", "Priya", "Tomasz", "Dervla", "Aoife", "Kwame", "Mei", "Lars")
LAST = ("Adeyemi", "Llewellyn", "Ross", "Kelly", "Natarajan", "Wójcik", "Quinn", "Byrne", "Mensah", "Lin")
DUTIES = ("tea urn", "door and float", "chair setting", "music stands", "raffle", "cloakroom")
DAYS = ("Tuesday", "Thursday", "Saturday")


def rota(rows: int) -> str:
    """A volunteers' rota of `rows` rows (a spreadsheet saved as CSV)."""
    lines = ["volunteer,duty,day,since"]
    for i in range(rows):
        name = f"{FIRST[i % len(FIRST)]} {LAST[(i * 7) % len(LAST)]} {i}"
        lines.append(f"{name},{DUTIES[(i * 5) % len(DUTIES)]},{DAYS[(i // 6) % len(DAYS)]},{2010 + i % 15}")
    return "\n".join(lines) + "\n"


async def test_which_rows_of_a_table_larger_than_the_context_gives_no_count_of_the_context_as_the_tables(
    make_harness,
):
    """ "Who is on tea urn duty on Thursday?" over a 240-row rota, of which the context holds a part: the
    answer said "11 of the 84 rows of rota.csv have duty tea urn and day Thursday" (the file has 240 rows
    and more of them match); it now says the context may not hold every row. A rota the context holds
    whole still gets its count. Such an answer, and a superlative's over a part of a table, listed its rows
    under "Closest passages (they do not answer the question)": the lead's "may not hold" read as saying the
    documents do not answer."""
    h = await make_harness()
    big = rota(240)
    await add_doc(h, "rota.csv", big)
    _, replies = await ask(h, "Who is on tea urn duty on Thursday?")
    content = replies[0]["content"]
    assert "the context may not hold every row of rota.csv" in content, content
    assert not re.search(r"\d+ of the \d+ rows", content), content
    # the rows found answer the question: their sources are not "the closest passages" (its "not" was read so)
    assert replies[0]["embeds"][0]["title"] == "Sources", replies[0]["embeds"][0]["title"]
    _, replies = await ask(h, "Who joined most recently?")
    assert "the context may not hold every row of rota.csv" in replies[0]["content"], replies[0]["content"]
    assert replies[0]["embeds"][0]["title"] == "Sources", replies[0]["embeds"][0]["title"]
    await add_doc(h, "small.csv", rota(30), channel=CHAN_B)
    _, replies = await ask(h, "Who is on tea urn duty on Thursday?", channel=CHAN_B)
    matching = sum(1 for line in rota(30).splitlines() if ",tea urn,Thursday," in line)
    assert f"{matching} of the 30 rows of small.csv" in replies[0]["content"], replies[0]["content"]


async def test_a_file_posted_again_with_new_content_is_quoted_for_what_it_changed(make_harness):
    """The handbook added, then added again under its name with rehearsals moved to Wednesday and the music
    library's line gone: both documents answer (the status says so), but "What night does the choir
    rehearse?" quoted the earlier file's "Tuesday evenings" alone (of two nearly alike sentences, the first
    in the context was kept). Now the later file's sentence is quoted; what only the earlier file says (the
    music library) is still quoted from it."""
    h = await make_harness()
    await add_doc(h, "handbook.md", HANDBOOK)
    moved = HANDBOOK.replace("Tuesday evenings", "Wednesday evenings").replace(
        "Tomasz Wójcik runs the music library; scores are returned in the blue box by the piano.\n", ""
    )
    [status] = await add_doc(h, "handbook.md", moved)
    assert "is still here too" in status["content"], status["content"]
    for question in ("What night does the choir rehearse?", "When are rehearsals?", "where do we rehearse"):
        _, replies = await ask(h, question)
        content = replies[0]["content"]
        assert "Wednesday evenings" in content and "Tuesday" not in content, (question, content)
    _, replies = await ask(h, "Who runs the music library?")
    assert "Tomasz Wójcik runs the music library" in replies[0]["content"], replies[0]["content"]


async def test_a_stopping_bot_answers_the_question_beside_a_file_it_was_adding(make_harness, embedder):
    """SIGTERM (the bot's `shutdown`) while the lighthouse manual posted in an answer thread is being built,
    with "what is the lens made of?" beside it: the stop waits for the build and then for the question's
    answer, from the manual. The answer comes after the build now, so the stop must wait for it too."""
    from tests.bot.bot_samples import LIGHTHOUSE
    from tests.bot.test_bot_flows import GatedSummarizer

    summarizer = GatedSummarizer(embedder.count_tokens)
    summarizer.gate.set()  # the handbook is built at once
    h = await make_harness(message_content=True, summarizer=summarizer)
    thread = await _choir_thread(h)
    summarizer.gate, summarizer.entered = asyncio.Event(), asyncio.Event()
    sent = h.say(
        thread,
        "the lighthouse manual - what is the lens made of?",
        user=BOB,
        attachments=[h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())],
    )
    await asyncio.wait_for(summarizer.entered.wait(), 120)
    stopping = asyncio.create_task(h.bot.shutdown())
    await h.fake.wait_for(lambda: h.bot.services.jobs.closing, what="the stop to begin")
    summarizer.gate.set()
    await asyncio.wait_for(stopping, 120)
    reply = bot_answer_after(h, thread, sent)
    assert reply is not None and "brass and hand-ground glass" in reply["content"], reply
