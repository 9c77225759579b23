"""The bot's edges a careful user meets, each through real discord.py against the fake Discord API:
'is that true?' after a long answer checks its later claims too and says which it did not check; a
killed bot leaves no status or answer edit running to fail through its closed session; a refusal is
posted once, whenever the bot is killed around posting it; a follow-up sent while the last answer's
exchange is not settled yet, in the same run or just after a restart, reads that answer."""

from __future__ import annotations

import asyncio
import gc
import re

import pytest

import bot.answering as answering
import bot.streaming as streaming
from bot.hints import LINK_HINT
from bot.jobs import MIN_EDIT_INTERVAL_SECONDS
from bot.kb import kb_name
from bot.state import BotState
from raptor_engine.llm import OpenAIAnswerer
from raptor_engine.query.verify import MAX_CLAIMS
from tests.bot.bot_samples import LIGHTHOUSE
from tests.bot.conftest import BOT_ID, CHAN_A, GUILD, text_of, thread_payload
from tests.bot.test_bot_answers import bot_reply_in, open_archive_thread
from tests.bot.test_bot_flows import GatedSummarizer, add_doc, ask
from tests.bot.test_bot_left_questions import kept, killed, not_kept
from tests.llm_server import FakeLLMServer
from tests.test_llm import FAST_BACKOFF, llm_settings

KB_A = kb_name(GUILD, CHAN_A)
# Facts far apart in meaning, each long enough that fourteen of them fill the 2,000 characters one search
# is given: searched joined and cut there, the later ones were never looked for.
FACTS = [
    ("bees", "The apiary behind the old schoolhouse kept forty hives of black bees, and its heather honey took first prize at the Perth show in 1911."),
    ("ferry", "The ferry across the firth was a steam paddler named Countess of Kellie that carried cattle, mail and passengers until the bridge opened in 1964."),
    ("organ", "The church organ was built by Henry Willis in 1882 with two manuals and eighteen stops, and its bellows were pumped by hand until 1930."),
    ("curling", "The curling pond below the manse froze hard enough for a bonspiel only in the winter of 1895, when teams walked in from three parishes."),
    ("whisky", "The distillery at the burn foot was licensed in 1824 and made a peated malt that was sold in stone jars to the Glasgow grocers."),
    ("telescope", "An amateur astronomer, the minister's daughter Jessie Laing, ground a ten-inch mirror for her telescope and discovered a comet in 1899."),
    ("railway", "The branch railway reached the village in 1872 on a viaduct of nine arches, and the last passenger train ran on a wet Saturday in 1951."),
    ("football", "The village football club was founded by quarrymen in 1889 and won the county cup twice, playing in blue shirts on the glebe field."),
    ("smallpox", "During the smallpox outbreak of 1871 the fever hospital on the moor took in nineteen patients, of whom fourteen recovered under Dr Grieve."),
    ("library", "The subscription library opened in 1797 above the tollhouse with three hundred volumes, most of them sermons, travels and farming manuals."),
    ("mill", "The meal mill on the lade ground oats for the whole glen, turning an overshot wheel of fourteen feet that was replaced with a turbine in 1908."),
    ("bridge", "The stone bridge over the river was paid for by a levy on every cart that crossed it, and its keystone bears the date 1786 and a thistle."),
    ("herring", "In the herring boom of the 1880s the harbour held sixty drifters, and gutting crews of women came from Lewis to work the curing yards."),
    ("school", "The parish school was rebuilt in 1876 after the Education Act, with a bell tower, two classrooms and a schoolmaster's house of red sandstone."),
    ("fire", "The great fire of 1843 began in a baker's oven on the Main Street and destroyed eleven thatched houses before the wind turned in the night."),
    ("choir", "The village choir sang Handel's Messiah in the town hall every Christmas from 1902, conducted by the blacksmith's son Andrew Tod."),
    ("orchard", "The walled orchard at the big house grew pears against its south wall, among them a russet variety that the gardener named after his wife."),
    ("poorhouse", "The combination poorhouse for the three parishes opened in 1861 and housed up to eighty paupers, who broke stones for the county roads."),
    ("weaving", "Handloom weavers in the cottages of the Weavers' Row made linen for the Dundee merchants until power looms ruined the trade around 1840."),
    ("war", "The war memorial on the green lists thirty-one names from the Great War, eleven of them from the same company of the Black Watch."),
    ("market", "The cattle market was held on the last Tuesday of every month from 1790, and drovers brought black cattle down the hill road from Atholl."),
    ("quarry", "The slate quarry on the north face employed ninety men at its height and shipped roofing slates from its own pier to Leith and Newcastle."),
    ("cinema", "The Picture House opened in 1928 in the old drill hall with a Wurlitzer and four hundred seats, and closed after a last showing in 1966."),
    ("flood", "The flood of August 1829 swept away the lower mill, drowned sixty sheep and left a watermark on the inn door that can still be seen today."),
    ("observatory", "A small magnetic observatory was set up on the hill in 1850 by the Royal Society, and its keeper read the instruments every two hours."),
    ("pipes", "The pipe band was formed in 1919 by returning soldiers and wore the hunting tartan, practising on winter nights in the gasworks shed."),
    ("gas", "The gasworks at the harbour lit the streets from 1858, burning coal brought by puffer, and the lamplighter went round at dusk with his pole."),
    ("ice", "The ice house in the woods was packed each January with blocks cut from the loch, and kept the laird's salmon fresh through the summer."),
]


def register() -> str:
    """A parish's notes, one section a fact and what the records say of it: several times the context
    budget, so a fact's passage is found only by a search for it (or one close to it)."""
    sections = [
        f"## The {topic}\n\n{fact} More about the {topic} is told in the parish records: letters, accounts and "
        f"the minutes of meetings about the {topic} were kept in the session house chest. Old people still "
        f"spoke of the {topic} when the records were gathered, and their memories are written down there too."
        for topic, fact in FACTS
    ]
    return "# Notes on the parish\n\n" + "\n\n".join(sections)


LONG_ANSWER = " ".join(f"{fact} [1]" for _, fact in FACTS)


async def test_is_that_true_after_a_long_answer_checks_its_later_claims_and_says_which_it_did_not(
    make_harness, tmp_path
):
    """Before, the claims were searched joined and cut to 2,000 characters, and only the first five were
    looked for: 'Yes: the documents say so.' of an answer whose other claims nobody checked."""
    async with FakeLLMServer() as server:
        server.responder = lambda body: LONG_ANSWER if "numbered context blocks" in str(body) else "Summary."
        answerer = OpenAIAnswerer(llm_settings(server, tmp_path / "llm"), backoff_base=FAST_BACKOFF)
        h = await make_harness(answerer=answerer)
        await add_doc(h, "parish.md", register())
        await ask(h, "What do the notes say of the parish?")
        thread = next(t for t in h.bot.get_guild(GUILD).threads).id
        h.user_message(thread, "is that true?", mention_bot=True)
        await bot_reply_in(h, thread)
        text = "\n".join(m["content"] for m in h.fake.channel_messages(thread) if int(m["author"]["id"]) == BOT_ID)
    assert len(" ".join(fact for _, fact in FACTS[:MAX_CLAIMS])) > 2000  # more than one search's worth
    unchecked = len(FACTS) - MAX_CLAIMS
    assert text.startswith(f"Yes for the last answer's first {MAX_CLAIMS} statements"), text[:300]
    assert f"I did not check its other {unchecked}." in text.split("\n")[0], text[:300]
    missing = [topic for topic, fact in FACTS[:MAX_CLAIMS] if fact[:40] not in text]
    assert not missing, missing
    assert not [topic for topic, fact in FACTS[MAX_CLAIMS:] if fact[:40] in text]


# ----------------------------------------------------------------- a killed bot's edits end with it


def edits_left() -> list[asyncio.Task]:
    """The status and answer edits still running (bot/jobs.py `ThrottledEditor`, bot/streaming.py)."""
    names = ("ThrottledEditor._run", "StreamedReply._edit_while_written")
    return [t for t in asyncio.all_tasks() if not t.done() and t.get_coro().__qualname__ in names]


async def test_a_bot_killed_during_a_build_leaves_no_status_edit_to_fail_through_its_closed_session(
    make_harness, embedder
):
    """Before, the build's status editor outlived its cancelled handler: it edited through the closed
    session and asyncio logged 'Task exception was never retrieved ... Session is closed'."""
    summarizer = GatedSummarizer(embedder.count_tokens)
    summarizer.gate.set()
    h = await make_harness(message_content=True, summarizer=summarizer)
    thread = await open_archive_thread(h)
    autoingest = [{"name": "enabled", "type": 5, "value": True}]
    await h.replies_done(h.slash("kb", autoingest, sub="autoingest"))
    summarizer.gate.clear()
    summarizer.entered.clear()
    h.say(thread, "here is the manual", attachments=[h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())])
    await asyncio.wait_for(summarizer.entered.wait(), 120)  # the build's status is shown meanwhile
    assert edits_left()
    failures: list[dict] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: failures.append(context))
    try:
        await killed(h)
        await asyncio.sleep(2 * MIN_EDIT_INTERVAL_SECONDS)  # an edit left running would be due by now
        assert not edits_left()
        gc.collect()  # a task that failed unseen is reported when it is collected
    finally:
        loop.set_exception_handler(None)
    assert not failures, [context.get("message") for context in failures]


async def test_a_streamed_answer_stops_editing_when_its_handler_is_cancelled():
    """A follow-up's handler cancelled (a bot stopping or killed) while its answer streams: the edit on its
    way is cancelled with it, not left to run through a closed session."""
    sending = asyncio.Event()
    cancelled = asyncio.Event()

    async def send(content, embeds, view):
        sending.set()
        try:
            await asyncio.Event().wait()  # Discord has not answered yet
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def handler() -> None:
        stream = streaming.StreamedReply(send, send, interval=0)
        await stream.show("Margaret Hale was appointed")
        await asyncio.Event().wait()  # the rest of the answer is being written

    task = asyncio.create_task(handler())
    await asyncio.wait_for(sending.wait(), 10)
    task.cancel()
    await asyncio.wait_for(cancelled.wait(), 10)
    await asyncio.sleep(0)
    assert not edits_left()


# ------------------------------------------------- a refusal posted once, whatever the moment of a kill


def replies_of_bot(h, thread: int, message: dict) -> list[dict]:
    """Every message of the bot's in the thread that replies to `message` (an answer or a refusal)."""
    return [
        m
        for m in h.fake.channel_messages(thread)
        if int(m["author"]["id"]) == BOT_ID
        and int((m.get("message_reference") or {}).get("message_id") or 0) == int(message["id"])
    ]


async def started_again(thread: int, make_harness):
    """A second bot on the first one's data, its answer thread in its cache: it handles what was left."""
    again = await make_harness(message_content=True)
    again.state.parse_thread_create(dict(thread_payload(thread, CHAN_A, "Who was appointed", owner=BOT_ID)))
    return again


async def killed_before(h, monkeypatch, owner: object, step: str, thread: int, content: str) -> dict:
    """The member sends `content` in the thread and the bot dies just before `owner.step` (a fault at that
    point: it waits for good, then the handlers are cancelled and the bot closed); the message."""
    reached = asyncio.Event()

    async def dies_here(*args):
        reached.set()
        await asyncio.Event().wait()

    real = getattr(owner, step)
    monkeypatch.setattr(owner, step, dies_here)
    message = h.say(thread, content)
    await asyncio.wait_for(reached.wait(), 60)
    await killed(h)
    monkeypatch.setattr(owner, step, real)
    return message


@pytest.mark.parametrize("step", ["question_done", "reply_posted"])
async def test_a_refusal_posted_just_before_a_kill_is_not_posted_again_by_the_next_start(
    make_harness, monkeypatch, step
):
    """Killed after it posted 'I can't read links' and before it let the message go (`question_done`), or
    before it noted the reply's id (`reply_posted`: the reply is found in the thread by its text): the next
    start answered the message again, a second reply to a message the member had been answered."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    links = await killed_before(h, monkeypatch, BotState, step, thread, "https://example.org/keepers.pdf")
    assert [m["content"] for m in replies_of_bot(h, thread, links)] == [LINK_HINT]

    again = await started_again(thread, make_harness)
    await again.fake.wait_for(lambda: not_kept(again, thread), what="the message let go")
    assert [m["content"] for m in replies_of_bot(again, thread, links)] == [LINK_HINT]


async def test_a_refusal_noted_but_never_posted_before_a_kill_is_posted_by_the_next_start(
    make_harness, monkeypatch
):
    """Killed after noting the refusal and before Discord had it: the next start replies, once."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    links = await killed_before(h, monkeypatch, answering, "reply_quietly", thread, "https://example.org/keepers.pdf")
    assert not replies_of_bot(h, thread, links)

    again = await started_again(thread, make_harness)
    await again.fake.wait_for(lambda: not_kept(again, thread), what="the message let go")
    assert [m["content"] for m in replies_of_bot(again, thread, links)] == [LINK_HINT]


# ------------------------------------------- a follow-up sent while the last answer is being settled


async def test_a_follow_up_sent_between_an_answer_posted_and_its_exchange_settled_reads_that_answer(
    make_harness, monkeypatch
):
    """The thread's turn holds the second follow-up until the first one's exchange is settled: 'when did
    he leave?' is read against 'who was the first keeper?' (Thomas Reid, 1948), not the answer before it
    (Margaret Hale, 1975)."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    posted, gate = asyncio.Event(), asyncio.Event()
    attach = BotState.attach_answer

    async def held(self, *args):  # the answer is posted; its exchange is not settled yet
        posted.set()
        await gate.wait()
        await attach(self, *args)

    monkeypatch.setattr(BotState, "attach_answer", held)
    first = h.say(thread, "who was the first keeper?")
    await asyncio.wait_for(posted.wait(), 60)
    assert "Thomas Reid" in replies_of_bot(h, thread, first)[0]["content"]
    second = h.say(thread, "when did he leave?")
    await h.fake.wait_for(lambda: kept(h, thread, 2), what="the second follow-up kept")
    gate.set()
    answer = await h.fake.wait_for(lambda: replies_of_bot(h, thread, second) or None, what="the second answer")
    assert searched_as(answer[0]).startswith("When did Thomas Reid leave"), answer[0]


async def test_a_follow_up_sent_at_a_restart_before_its_thread_is_settled_reads_the_answer_posted_before_the_kill(
    make_harness, monkeypatch
):
    """Killed between posting 'who was the first keeper?'s answer and settling its exchange; the next start
    settles such exchanges thread by thread. A follow-up in the thread before the start's settling reached
    it read the thread without that answer: 'when did he leave?' was answered about Margaret Hale."""
    h = await make_harness(message_content=True)
    thread = await open_archive_thread(h)
    first = await killed_before(h, monkeypatch, BotState, "attach_answer", thread, "who was the first keeper?")
    assert "Thomas Reid" in replies_of_bot(h, thread, first)[0]["content"]

    settling = asyncio.Event()
    pending = BotState.pending_exchanges

    async def late(self):  # the start's settling has not reached this thread yet
        await settling.wait()
        return await pending(self)

    monkeypatch.setattr(BotState, "pending_exchanges", late)
    again = await started_again(thread, make_harness)
    second = again.say(thread, "when did he leave?")
    answer = await again.fake.wait_for(lambda: replies_of_bot(again, thread, second) or None, what="the answer")
    settling.set()
    assert searched_as(answer[0]).startswith("When did Thomas Reid leave"), answer[0]
    await again.fake.wait_for(lambda: not_kept(again, thread), what="the questions let go")
    assert len(replies_of_bot(again, thread, first)) == 1  # answered once, before the kill


def searched_as(message: dict) -> str:
    """What the answer says it searched ('Searched as: …' under it)."""
    found = re.search(r"Searched as: ([^\n]*)", text_of(message))
    return found.group(1) if found else ""
