"""Answering questions: /ask, and follow-up messages in the threads the bot opened.

All RAPTOR work is the engine's; this module picks the knowledge base and the conversation history,
renders the answer within Discord's limits, keeps the context for 'Show context', opens a thread on
a public answer and stores the thread's turns so follow-ups survive a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import re
import time
import unicodedata
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

import discord

from raptor_engine.engine import EmptyKnowledgeBaseError
from raptor_engine.errors import NotFoundError, RaptorError
from raptor_engine.ingest.load import file_kinds
from raptor_engine.query.asked import in_brief
from raptor_engine.query.followup import split_standalone
from raptor_engine.query.smalltalk import Act, asks, continues, small_talk_act
from raptor_engine.query.support import MATCHED
from raptor_engine.types import Answer, TextCallback, Turn

from .hints import LINK_HINT, only_links
from .kb import home_channel_id, kb_for_channel
from .permissions import cooldown_text
from .render import (
    CONTENT_LIMIT,
    NameOf,
    OutMessage,
    asked_under_spoiler,
    inert,
    inert_answer,
    plain_name,
    plain_question,
    render_answer,
    spoken,
    truncate,
)
from .replies import Replier, failure_text, reply_quietly, tell
from .services import Services
from .state import AskedExchange, CitedNodes, LeftQuestion, PendingExchange, ThreadRecord
from .streaming import StreamedReply, deliver, thread_senders
from .views import answer_view

log = logging.getLogger(__name__)


EMPTY_KB = (
    "This channel's knowledge base has no documents yet. Add one with `/kb add`, or right-click a message "
    f"with a file → Apps → **Add to knowledge base**; I read {file_kinds()}."
)
NO_KB = "Questions work in a server's text channels, threads and forum posts, not in DMs."
FAILED = "Something went wrong while answering; the error was logged. Please try again."
STILL_BUILDING = (
    "This channel's first document is still being added; ask again when its progress message says it is done."
)
THREAD_NAME_LIMIT = 100
SPOILER_THREAD = "Spoiler: follow-ups"  # a thread's name shows no spoiler: one asked under a spoiler is not named
# A follow-up of no words but a question mark ("?", "??", "🤔?"): a prompt as short as what it answers.
WORDLESS_QUESTION = "What would you like to know? Ask in words, for example “why?” or “when was that?”."
# What a message in a thread says when it asks nothing: an edit to one of these leaves its answer.
NOT_ASKING = frozenset({Act.UNCLEAR, Act.ACKNOWLEDGE, Act.GREET, Act.THANK, Act.FAREWELL})


def empty_text(services: Services, kb: str) -> str:
    """Why there is nothing to answer from: no documents yet, or the first one is still building."""
    return STILL_BUILDING if services.jobs.pending(kb) else EMPTY_KB


def thread_name(question: str) -> str:
    """The question as a thread name: one line, no markdown or mention syntax, within Discord's limit."""
    return plain_name(question, THREAD_NAME_LIMIT) or "Follow-up"


def question_refusal(services: Services, user_id: int, question: str) -> str | None:
    """Why this user may not ask right now (cooldown, then questions per minute), or None. A message
    that is not a question ('thanks!') searches nothing, so it neither waits nor uses up the limits;
    'where does it say that?' answers the last question again, so it counts like a question."""
    if small_talk_act(question) not in (None, Act.SOURCES):
        return None
    wait = services.cooldown.retry_after(user_id)
    if wait:
        return cooldown_text(wait)
    wait = services.question_limit.retry_after(user_id)
    if wait:
        return services.question_limit.message(wait)
    return None


async def ask_engine(
    services: Services,
    kb: str,
    question: str,
    mode: str,
    history: list[Turn],
    asked_by: str,
    on_text: TextCallback | None = None,
    follows: int | None = None,
) -> Answer | None:
    """The engine's answer from the last complete tree, or None when the knowledge base is empty.
    `on_text` shows an LLM's answer while it is written (see bot/streaming.py); `follows` is the exchange
    of `history` a reply follows up (the engine's)."""
    try:
        return await services.engine.ask(
            kb,
            question,
            mode=mode,
            budget=services.settings.budget,
            history=in_context(history),
            asked_by=asked_by,
            on_text=on_text,
            follows=follows,
        )
    except (EmptyKnowledgeBaseError, NotFoundError):
        return None


def in_context(history: list[Turn]) -> list[Turn]:
    """A thread's turns as a question is given them: a long question as what it asks (`in_brief`), so a
    pasted paragraph is not searched again as every later follow-up's context. What the thread stores
    stays as asked: an edit is compared with it."""
    return [dataclasses.replace(t, content=in_brief(t.content)) if t.role == "user" else t for t in history]


async def prepare(
    services: Services, kb: str, answer: Answer, asked_at: float | None = None, hidden: bool = False
) -> tuple[list[OutMessage], discord.ui.View | None]:
    """Rendered messages and the 'Show context' / 'Show tree' buttons for a stored copy of the context;
    a reply that searched nothing ('thanks!') is its text alone. `asked_at` (`time.time()` before the
    engine was asked): the stored copy loses the nodes a removal took since (`BotState.save_answer`).
    `hidden`: the question was asked under a spoiler, so the answer's text is under one too."""
    if not answer.has_context:
        return [OutMessage(content=inert_answer(answer.text))], None
    ctx = answer.context
    cited = [c.node_id for c in answer.citations]
    matched = [c.node_id for c in answer.citations if c.kind == MATCHED]
    answer_id = await services.state.save_answer(
        kb,
        answer.question,
        ctx.nodes,
        ctx.tokens_used,
        ctx.budget,
        cited=cited,
        matched=matched,
        since=asked_at,
        hidden=hidden,
    )
    return render_answer(answer, hidden), answer_view(answer_id)


REMOVED_NAME_CHARS = 100  # a removed document's name in the notice, at most
NAMES_SHOWN = 3  # names listed before "and N more"


def removed_notice(names: Sequence[str], *, cited: bool = True) -> str:
    """One sentence saying that documents this thread's earlier answers cited (`cited`), or drew on through
    a cross-document summary they cited, were removed since, so the member does not take the new answer for
    one from the same source. Names are one line each, shortened; the note is made inert when shown
    (`render_answer`)."""
    shown = [f"“{truncate(' '.join(n.split()), REMOVED_NAME_CHARS)}”" for n in names[:NAMES_SHOWN]]
    if len(names) > NAMES_SHOWN:
        shown.append(f"{len(names) - NAMES_SHOWN} more")
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
    one = len(names) == 1
    how = "cited by an earlier answer in this thread" if cited else "which an earlier answer in this thread drew on"
    return (
        f"The {'document' if one else 'documents'} {listed}, {how}, "
        f"{'was' if one else 'were'} removed from the knowledge base since; "
        "this answer comes from the documents that remain."
    )


async def note_removed(services: Services, record: ThreadRecord, answer: Answer) -> list[int]:
    """Put `removed_notice` before the answer's note when documents the thread's earlier answers cited, or
    drew on through a summary, were removed since (and no answer here said so yet); returns their ids, for
    the new turn's record to drop them."""
    if not answer.has_context:  # a reply to 'thanks!' searched nothing: the notice waits for an answer
        return []
    gone = await services.state.removed_cited(record.guild_id, record.thread_id, record.kb)
    if gone:
        notice = removed_notice([g.name for g in gone], cited=all(g.cited for g in gone))
        answer.note = " ".join(filter(None, [notice, answer.note]))
    return [g.id for g in gone]


def cited_nodes(answer: Answer, told: Sequence[int] = ()) -> CitedNodes | None:
    """What the answer's turn records of its sources (none for a reply that searched nothing)."""
    if not answer.has_context:
        return None
    own = [c.node_id for c in answer.citations if c.document is not None]  # not a cross-document summary
    return CitedNodes([c.node_id for c in answer.citations], told, of_documents=own)


def drew_on(answer: Answer) -> list[int]:
    """The chat messages an answer's context held: a deleted one takes the exchange with it."""
    return [n.message.message_id for n in answer.context.nodes if n.message] if answer.has_context else []


async def remember_exchange(
    services: Services,
    guild_id: int,
    thread_id: int,
    answer: Answer,
    asked_in: discord.Message | None = None,
    sent: Sequence[discord.Message] = (),
    *,
    as_searched: bool = False,
    told: Sequence[int] = (),
    pending: bool = False,
    opened: tuple[ThreadRecord, str] | None = None,
    asked_by: int | None = None,
) -> list[int]:
    """A thread's question and answer, the memory its follow-ups get, with the chat messages the answer drew
    on: a message deleted later takes the exchange with it (`BotState.finish_removals`). The question's
    message (`asked_in`; none for /ask) and the answer's (`sent`) are kept with them, so a follow-up that
    replies to either is read against this exchange. `as_searched` keeps the question as it was searched
    (its standalone rewrite) instead: a reply to an older exchange, which later follow-ups, reading the
    turns in order, would otherwise read against the exchange stored just before it. `told`: the removed
    documents the answer's note named (`note_removed`). `pending`: recorded before the answer is posted
    (`posting_remembered`); `opened`: the thread (and who opened it) recorded with it, for the opening
    exchange (`open_thread`). `asked_by`: the member who asked, kept on the question's turn when the answer
    searched the documents (small talk such as "thanks" is no exchange to go on from: `thread_history`).
    Returns the turns' row ids."""
    # The question as the engine read it: what it answered, and text SQLite can store (half a UTF-16 pair
    # from JSON cannot be: it failed the exchange after its answer was shown).
    question = split_standalone(answer.query).core if as_searched else answer.question
    turns = [Turn("user", question), Turn("assistant", answer.text)]
    posted = [[asked_in.id] if asked_in is not None else [], [m.id for m in sent]]
    cited = cited_nodes(answer, told)
    asker = asked_by if answer.has_context else None
    return await services.state.add_turns(
        guild_id, thread_id, turns, drew_on(answer), posted, cited, pending=pending, opened=opened, asked_by=asker
    )


async def posting_remembered(
    services: Services,
    guild_id: int,
    turn_ids: list[int],
    post: Callable[[], Awaitable[list[discord.Message]]],
    attach: Callable[[list[int]], Awaitable[None]] | None = None,
) -> list[discord.Message]:
    """Post an answer whose exchange was just recorded as pending (`remember_exchange`), then attach its
    messages to it: a bot killed between the two keeps the exchange, for the next start to settle
    (`settle_pending`). Posting that fails, or shows nothing, drops it: no member saw that answer.
    `attach`: how the posted messages' ids are attached (an edited question's exchange replaces its old one)."""
    try:
        sent = await post()
    except Exception:
        await services.state.drop_pending(guild_id, turn_ids)
        raise
    if sent and attach is not None:
        await attach([m.id for m in sent])
    elif sent:
        await services.state.attach_answer(guild_id, turn_ids, [m.id for m in sent])
    else:
        await services.state.drop_pending(guild_id, turn_ids)
    return sent


INTERLEAVED_SECONDS = 900  # a member's own exchange older than this is no longer the one they go on from
SETTLE_LOOKAHEAD = 50  # messages read after a pending exchange's question, looking for its answer


async def settle_pending(
    services: Services, channel_for: Callable[[int, int], Awaitable[Any | None]], bot_id: int
) -> tuple[int, int]:
    """At start: each exchange a stopped bot left pending (recorded, its answer maybe posted) is settled in
    the thread's turn. Its answer found in Discord (the bot's reply to the question, and the bot's messages
    right after it) is attached and the exchange kept; none found (never posted, deleted since, or asked
    with /ask, whose answer names no question message) drops it, so no follow-up leans on an answer no
    member saw. A thread Discord cannot be read from now keeps it pending for the next start. Returns how
    many were kept and dropped."""
    kept = dropped = 0
    for exchange in await services.state.pending_exchanges():
        record = exchange.record
        async with conversation_turn(record.thread_id):
            if not await services.state.still_pending(record.guild_id, exchange.turn_ids):
                continue  # settled meanwhile (a follow-up in its thread came first: `settle_thread`)
            channel = await channel_for(record.guild_id, record.thread_id)
            settled = await _settled(services, exchange, channel, bot_id)
            kept += settled is True
            dropped += settled is False
    return kept, dropped


async def settle_thread(services: Services, record: ThreadRecord, channel: Any, bot_id: int) -> None:
    """Before a question in a thread reads its history (the caller holds the thread's turn): the thread's
    exchanges a stopped bot left pending, settled as `settle_pending` settles them. A follow-up sent just
    after a restart, before the start's settling reached its thread, read the thread without the answer
    posted just before the kill, and was answered as if it had not been given."""
    for exchange in await services.state.pending_in_thread(record.guild_id, record.thread_id):
        await _settled(services, exchange, channel, bot_id)


async def _settled(services: Services, exchange: PendingExchange, channel: Any, bot_id: int) -> bool | None:
    """Settle one pending exchange (`settle_pending`) in its thread's turn: True when kept, False when
    dropped, None when Discord cannot say now (it stays pending)."""
    record = exchange.record
    opening = exchange.answer_message_ids  # posted before it was recorded: was its thread opened?
    if channel is None:  # a thread of another guild: no member of this one saw its answer (`channel_of_guild`)
        found: list[int] | None = []
    elif opening:
        found = await thread_opened(channel, opening)
    else:
        found = await posted_answer(channel, exchange.question_message_ids, bot_id)
    if found is None:
        return None
    edited = await _edited_exchange(services, record, exchange)
    if edited is not None and found:
        if await _shows_new_answer(services, record, channel, found, edited, exchange.turn_ids):
            await services.state.attach_replacement(record.guild_id, edited, exchange.turn_ids, found)
            return True
        await services.state.drop_pending(record.guild_id, exchange.turn_ids)
        return False
    if found:
        await services.state.attach_answer(record.guild_id, exchange.turn_ids, found)
        return True
    await services.state.drop_pending(record.guild_id, exchange.turn_ids, record.thread_id if opening else None)
    return False


async def _edited_exchange(services: Services, record: ThreadRecord, exchange: PendingExchange) -> AskedExchange | None:
    """The settled exchange a pending one would replace: its question's message was edited and answered
    again (`_follow_up`); None for a new question's exchange."""
    if not exchange.question_message_ids:
        return None
    return await services.state.asked_exchange(record.guild_id, record.thread_id, exchange.question_message_ids[0])


async def _shows_new_answer(
    services: Services, record: ThreadRecord, channel: Any, found: list[int], edited: AskedExchange, turn_ids: list[int]
) -> bool:
    """Whether the answer's messages (`found`; an edit keeps their ids) show the pending new answer rather
    than the old one: the answer whose words they share more of (the new one on a tie)."""
    shown: set[str] = set()
    for message_id in found:
        try:
            message = await channel.fetch_message(message_id)
        except discord.HTTPException:
            continue
        parts = [message.content or "", *(e.description or "" for e in message.embeds)]
        shown |= set(re.findall(r"\w+", " ".join(parts).lower()))
    new = (await services.state.turn_texts(record.guild_id, turn_ids[-1:]) or [""])[0]
    old = (await services.state.turn_texts(record.guild_id, [edited.answer_row]) or [""])[0] if edited.answer_row else ""

    def share(text: str) -> float:
        said = set(re.findall(r"\w+", text.lower()))
        return len(said & shown) / len(said) if said else 0.0

    return share(new) >= share(old)


async def thread_opened(thread: Any, answer_ids: list[int]) -> list[int] | None:
    """`answer_ids` when the thread of an /ask answer's opening exchange was opened (Discord can read it);
    [] when it never was (the bot stopped before opening it); None when Discord cannot say now."""
    try:
        async for _ in thread.history(limit=1):
            break
    except discord.NotFound:
        return []
    except discord.HTTPException as error:
        log.warning("cannot tell whether thread %s was opened (%s); left for the next start", getattr(thread, "id", "?"), error)
        return None
    return answer_ids


async def posted_answer(channel: Any, question_ids: Sequence[int], bot_id: int) -> list[int] | None:
    """The messages of the bot's answer to the question message (`question_ids`) in `channel`: its reply to
    the question, with the bot's messages after it up to anyone else's; [] when there is none (or no
    question message to look after); None when the thread cannot be read now."""
    if not question_ids:
        return []
    found: list[int] = []
    try:
        async for message in channel.history(limit=SETTLE_LOOKAHEAD, after=discord.Object(question_ids[0]), oldest_first=True):
            ours = message.author.id == bot_id
            reference = message.reference.message_id if message.reference is not None else None
            if not found and ours and reference in question_ids:
                found.append(message.id)
            elif found and ours and reference is None:
                found.append(message.id)  # the answer's next message
            elif found:
                break
    except discord.NotFound:
        return []  # the thread is gone: so is the answer
    except discord.HTTPException as error:
        log.warning("cannot look for the answer of a pending exchange in %s (%s); left for the next start", getattr(channel, "id", "?"), error)
        return None
    return found


async def thread_history(
    services: Services, record: ThreadRecord, message: discord.Message
) -> tuple[list[Turn], int | None]:
    """The turns a follow-up in the thread is given, and the exchange it follows up: the one holding the
    message it replies to (a Discord reply to an older question or answer), else its member's own latest
    exchange when others came after it and it is at most INTERLEAVED_SECONDS old (`member_exchange`: read
    from the stored turns, so a restart changes nothing), else the last (None)."""
    reference = message.reference
    if reference is not None and reference.message_id and reference.channel_id in (None, record.thread_id):
        found = await services.state.reply_history(record.guild_id, record.thread_id, reference.message_id)
        if found is not None:
            return found
    own = await services.state.member_exchange(record.guild_id, record.thread_id, message.author.id)
    if own is not None and (message.created_at - discord.utils.snowflake_time(own)).total_seconds() <= INTERLEAVED_SECONDS:
        found = await services.state.reply_history(record.guild_id, record.thread_id, own)
        if found is not None and found[1] < sum(1 for turn in found[0] if turn.role == "user") - 1:
            log.info("follow-up %s goes on from its member's exchange, not the latest", message.id)
            return found
    return await services.state.history(record.guild_id, record.thread_id), None


def ask_refusal(services: Services, user_id: int, typed: str, asked: str) -> str | None:
    """Why /ask does not search `typed` (read as `asked`: its words without markup or the bot's mention),
    or None: links only, nothing but emoji, marks or the bot's mention (said privately, as a follow-up's
    "?" is: searching no words quotes passages at random), then the cooldown and the question limit."""
    if only_links(typed):
        return LINK_HINT
    if wordless(asked):
        return WORDLESS_QUESTION
    return question_refusal(services, user_id, asked)


async def handle_ask(
    services: Services, interaction: discord.Interaction, question: str, mode: str, private: bool
) -> None:
    """/ask: defer, answer with sources, open a thread on a public answer in a text channel (not on a
    reply to small talk such as 'hello'). A stopping bot waits for it (`BuildJobs.track`). Asked in a
    thread, it takes its turn in the thread's conversation (`conversation_turn`)."""
    channel = interaction.channel
    turn = conversation_turn(channel.id) if isinstance(channel, discord.Thread) else contextlib.nullcontext()
    async with ask_kept(services, interaction), services.jobs.track(), turn:
        await _ask(services, interaction, question, mode, private)


async def _ask(
    services: Services, interaction: discord.Interaction, question: str, mode: str, private: bool
) -> None:
    me = interaction.client.user
    asked = follow_up_text_of(question, me.id if me else 0, lambda kind, i: guild_name(interaction.guild, kind, i))
    refusal = ask_refusal(services, interaction.user.id, question, asked)
    if refusal:
        await tell(interaction, refusal)
        return
    replier = Replier(interaction, ephemeral=private, token_lifetime=services.token_lifetime)
    await replier.defer()
    kb = kb_for_channel(interaction.guild_id, interaction.channel)
    if kb is None:
        await replier.send(NO_KB)
        return
    channel = interaction.channel
    record = (
        await services.state.thread(channel.guild.id, channel.id)
        if isinstance(channel, discord.Thread)
        else None
    )
    if record is not None:
        await settle_thread(services, record, channel, me.id if me else 0)
    history = await services.state.history(record.guild_id, record.thread_id) if record else []
    hidden = asked_under_spoiler(question)
    question = asked  # a question over the engine's limit is shortened there, and its answer says so
    stream = StreamedReply(replier.send, replier.send, hidden=hidden)
    asked_at = time.time()
    try:
        answer = await ask_engine(services, kb, question, mode, history, str(interaction.user), stream.show)
    except RaptorError as error:
        log.warning("ask in %s refused: %s", kb, error)
        await stream.stop()
        await replier.refuse(f"⚠️ {inert(str(error))}")
        return
    except Exception as error:
        log.exception("ask in %s failed", kb)
        await stream.stop()
        await replier.refuse(failure_text(error, FAILED))
        return
    if answer is None:
        await replier.refuse(empty_text(services, kb))
        return
    told = await note_removed(services, record, answer) if record is not None else []
    messages, view = await prepare(services, kb, answer, asked_at, hidden)
    def post() -> Awaitable[list[discord.Message]]:
        return deliver(stream, messages, view, replier.send_all)

    if record is not None and not private:  # only its asker saw a private one: no follow-up may lean on it
        turn_ids = await remember_exchange(
            services, record.guild_id, record.thread_id, answer, told=told, pending=True, asked_by=interaction.user.id
        )
        sent = await posting_remembered(services, record.guild_id, turn_ids, post)
    else:
        sent = await post()
    log.info("answered in %s (%d messages, %d citations)", kb, len(messages), len(answer.citations))
    if record is None and not private and sent and answer.has_context and isinstance(channel, discord.TextChannel):
        await open_thread(services, interaction, channel, sent, kb, SPOILER_THREAD if hidden else question, answer)


NO_THREAD_PERMISSION = "I couldn't open a thread for follow-ups here: I need the Create Public Threads permission."


async def open_thread(
    services: Services,
    interaction: discord.Interaction,
    channel: discord.TextChannel,
    sent: list[discord.Message],
    kb: str,
    question: str,
    answer: Answer,
) -> None:
    """A public thread on the answer (`sent`, its first message opening it) for follow-ups
    (WebhookMessage.create_thread cannot do this)."""
    if not interaction.app_permissions.create_public_threads:
        await tell(interaction, NO_THREAD_PERMISSION)
        return
    # A thread started from a message has that message's id: the thread and its opening exchange are
    # recorded (pending) before it is opened and attached after, so a bot stopped in between settles them
    # at its next start (`settle_pending`: kept when the thread is there, else dropped).
    record = ThreadRecord(sent[0].id, kb, channel.guild.id, channel.id)
    async with conversation_turn(record.thread_id):  # a follow-up sent at once reads the opening exchange
        turn_ids = await remember_exchange(
            services,
            record.guild_id,
            record.thread_id,
            answer,
            sent=sent,
            pending=True,
            opened=(record, str(interaction.user)),
            asked_by=interaction.user.id,
        )
        thread = await _opened_thread(services, interaction, channel, sent[0], question, turn_ids, record)
        if thread is not None:
            await services.state.attach_answer(record.guild_id, turn_ids, [m.id for m in sent])


async def _opened_thread(
    services: Services,
    interaction: discord.Interaction,
    channel: discord.TextChannel,
    starter: discord.Message,
    question: str,
    turn_ids: list[int],
    record: ThreadRecord,
) -> discord.Thread | None:
    """The thread opened on the answer's first message (`starter`); None, its pending record dropped and
    the member told, when Discord refuses it."""
    try:
        thread = await channel.create_thread(name=thread_name(question), message=starter, auto_archive_duration=1440)
    except discord.Forbidden:
        log.warning("no permission to open a thread in %s", channel.id)
        told = NO_THREAD_PERMISSION
    except discord.HTTPException as error:
        log.warning("could not open a thread in %s: %s", channel.id, error)
        told = "I couldn't open a thread for follow-ups; ask again with /ask."
    else:
        if thread.id == record.thread_id:
            return thread
        log.warning("thread %s opened on message %s has another id", thread.id, starter.id)
        told = "I couldn't open a thread for follow-ups; ask again with /ask."
    await services.state.drop_pending(record.guild_id, turn_ids, record.thread_id)
    await tell(interaction, told)
    return None


def follow_up_text(message: discord.Message, bot_id: int) -> str:
    """The question in a thread message, without the bot's mention; a message forwarded into the thread
    with no words of its own asks what the forwarded message says."""
    return follow_up_text_of(message.content or forwarded_text(message), bot_id, names_in(message))


def names_in(message: discord.Message) -> NameOf:
    """The names of what a message mentions (its members, roles and channels, then the server's), for
    `spoken`."""
    known: dict[tuple[str, int], str] = {("@", u.id): u.display_name for u in message.mentions}
    known |= {("@&", r.id): r.name for r in message.role_mentions}
    known |= {("#", c.id): c.name for c in message.channel_mentions}
    return lambda kind, i: known.get((kind, i)) or guild_name(message.guild, kind, i)


def guild_name(guild: discord.Guild | None, kind: str, item_id: int) -> str | None:
    """A mentioned member's, role's or channel's name from the server's cache, or None."""
    if guild is None:
        return None
    found: Any = {"@": guild.get_member, "@&": guild.get_role, "#": guild.get_channel_or_thread}[kind](item_id)
    return getattr(found, "display_name", None) or getattr(found, "name", None)


def forwarded_text(message: discord.Message) -> str:
    """The text of the message a member forwarded (Discord's forward carries a snapshot of it)."""
    return "\n".join(snapshot.content for snapshot in getattr(message, "message_snapshots", []) if snapshot.content)


def follow_up_text_of(content: str | None, bot_id: int, name_of: NameOf | None = None) -> str:
    """`follow_up_text` of a message's content: its words without Discord's markup (a question in a code
    block or under a spoiler asks what it says), its mentions as the client shows them (`spoken`)."""
    text = _GROUPS_FIRST.sub(" ", re.sub(rf"<@!?{bot_id}>", " ", content or ""))
    return plain_question(spoken(text, name_of or (lambda kind, i: None)))


# Roles pinged before the question's first word ("@KB Managers when will the shed be built?", "@here
# <@&350>: …") say whom the message is sent to, not what it asks: searched, the role's name drew other
# passages ("Nothing in the documents clearly answers this"). A role inside the question is a name.
_GROUPS_FIRST = re.compile(r"^(?:\s*(?:<@&\d{1,20}>|@everyone\b|@here\b)[,:]?)+")


def talks_to_a_member(message: discord.Message, bot_id: int) -> bool:
    """Whether a thread message is addressed to another member: a Discord reply to their message, or a
    mention of them. Such a message that asks nothing ("I was there, it was Joan", "@bob thanks, that
    helps") is the members' own conversation, not a follow-up for the bot."""
    others = {u.id for u in message.mentions if not u.bot} - {bot_id, message.author.id}
    replied = message.reference.resolved if message.reference is not None else None
    if isinstance(replied, discord.Message) and not replied.author.bot and replied.author.id != message.author.id:
        others.add(replied.author.id)
    return bool(others)


def wordless(text: str) -> bool:
    """A message of emoji, punctuation or symbols only ("👍", "...", "?"): nothing to search for."""
    return not re.search(r"\w", text)


def asks_nothing(text: str) -> bool:
    """A message that is no question: wordless, or small talk ("ok", "thanks", "huh?")."""
    return wordless(text) or small_talk_act(text) in NOT_ASKING


async def handle_follow_up(
    services: Services,
    me: discord.abc.User,
    message: discord.Message,
    record: ThreadRecord,
    *,
    in_turn: bool = False,
    limits: bool = True,
) -> None:
    """A message in a thread the bot (`me`) opened: answer with the thread's turns and the parent's tree.
    A stopping bot waits for it (`BuildJobs.track`); the thread's earlier follow-up is answered first
    (`in_turn`: the caller holds the thread's `conversation_turn`, taken when the message arrived).
    `limits`: as `_follow_up`'s."""
    turn = contextlib.nullcontext() if in_turn else conversation_turn(record.thread_id)
    async with services.jobs.track(), turn:
        await _follow_up(services, me, message, record, limits=limits)


# The lock of each thread whose follow-up is being answered (gone with its last holder).
_CONVERSATIONS: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()


def conversation_turn(thread_id: int) -> asyncio.Lock:
    """One follow-up of a thread at a time, so each reads the turns the one before it stored: two sent
    quickly (or by two members) would otherwise both lean on the exchange before them."""
    lock = _CONVERSATIONS.get(thread_id)
    if lock is None:
        lock = _CONVERSATIONS[thread_id] = asyncio.Lock()
    return lock


ASK_AGAIN = "The bot restarted before it could answer this question; please ask it again."


async def _kept(services: Services, guild_id: int, key: int, note: Awaitable[None]) -> bool:
    """`note` (a `BotState.note_question`); False (logged) when the question could not be kept."""
    try:
        await note
    except Exception:
        log.exception("could not keep question %s until it is answered", key)
        return False
    return True


@contextlib.asynccontextmanager
async def _kept_while(services: Services, guild_id: int, key: int, note: Awaitable[None]) -> AsyncIterator[None]:
    """Around a question's handling: kept in SQLite (`note`) from its arrival until it was handled, answered
    or not. The write starts before anything is awaited, so a question waiting for its thread's turn
    behind a build is kept too. A bot killed or stopped meanwhile (the handling cancelled) leaves it kept,
    for its next start (`answer_left_questions`)."""
    noted = asyncio.ensure_future(_kept(services, guild_id, key, note))
    try:
        with _replies_noted(key, noted):
            yield
    except asyncio.CancelledError:
        raise
    except BaseException:
        await _question_handled(services, guild_id, key, noted)
        raise
    await _question_handled(services, guild_id, key, noted)


# The questions being handled that are kept in SQLite, by message id, with whether their keeping worked:
# a reply that ends one's handling is noted in its row (`final_reply`).
_KEPT_NOW: dict[int, Awaitable[bool]] = {}


@contextlib.contextmanager
def _replies_noted(key: int, noted: Awaitable[bool]) -> Iterator[None]:
    """While a kept question (`key`) is handled, `final_reply` notes its reply in the question's row."""
    _KEPT_NOW[key] = noted
    try:
        yield
    finally:
        if _KEPT_NOW.get(key) is noted:
            del _KEPT_NOW[key]


def reply_digest(text: str) -> str:
    """A digest of a reply's text as Discord shows it: what a restart compares, without keeping the text."""
    return hashlib.sha256(text.strip().encode()).hexdigest()[:32]


async def final_reply(services: Services, message: discord.Message, text: str) -> None:
    """A reply that ends a member's question's handling without an exchange (a refusal, a failure). For a
    question kept in SQLite, the reply is noted in its row before it is posted and its id once it is, so
    a bot killed before the question is let go does not answer it again (`_was_replied`)."""
    shown = truncate(text, CONTENT_LIMIT)
    noted = _KEPT_NOW.get(message.id)
    kept = noted is not None and await noted
    guild_id = message.guild.id if message.guild is not None else 0
    if kept:
        await services.state.reply_intended(guild_id, message.id, reply_digest(shown))
    sent = await reply_quietly(message, shown)
    if kept and sent is not None:
        await services.state.reply_posted(guild_id, message.id, sent.id)


def kept_until_handled(services: Services, message: discord.Message) -> contextlib.AbstractAsyncContextManager[None]:
    """`_kept_while` for a member's message in an answer thread: a restart answers it."""
    guild_id = message.channel.guild.id
    note = services.state.note_question(guild_id, message.channel.id, message.id)
    return _kept_while(services, guild_id, message.id, note)


def ask_kept(services: Services, interaction: discord.Interaction) -> contextlib.AbstractAsyncContextManager[None]:
    """`_kept_while` for an /ask, with its token while Discord honours it: a restart tells its member, in its
    response, to ask again (a new answer cannot be posted in it without the question)."""
    guild_id = interaction.guild_id or 0
    until = time.time() + services.token_lifetime
    note = services.state.note_question(guild_id, interaction.channel_id or 0, interaction.id, interaction.token, until)
    return _kept_while(services, guild_id, interaction.id, note)


async def _question_handled(services: Services, guild_id: int, key: int, noted: Awaitable[bool]) -> None:
    """The kept question leaves SQLite: it was handled."""
    if not await noted:
        return
    try:
        await services.state.question_done(guild_id, key)
    except Exception:
        log.exception("could not mark question %s as handled; a restart may answer it again", key)


async def answer_left_questions(
    services: Services,
    channel_for: Callable[[int, int], Awaitable[Any | None]],
    me: discord.abc.User,
    webhook_for: Callable[[str], discord.Webhook],
) -> int:
    """At start, once the exchanges left pending are settled and the uploads left unfinished are built
    again: each question a stopped bot had kept but not finished handling (`kept_until_handled`,
    `ask_kept`). A thread message is answered now, in its thread's turn, as it would have been, its files
    left to the resumed uploads; one deleted since, or already answered (its exchange stored), is let go;
    one Discord cannot read now stays for the next start. An /ask still "thinking" is told to ask again
    (`ASK_AGAIN`) while its token works. Returns how many were answered or told."""
    answered = 0
    for left in await services.state.left_questions():
        if left.token is not None:
            answered += await _told_to_ask_again(webhook_for, left)
        elif left.record is not None:
            channel = await channel_for(left.guild_id, left.channel_id)
            message = await _left_message(channel, left.message_id) if channel is not None else None
            if message is False:
                continue  # not readable now: the next start tries again
            if message is not None and await _answer_left(services, me, left, message):
                answered += 1
        await services.state.question_done(left.guild_id, left.message_id)
    return answered


async def _answer_left(services: Services, me: discord.abc.User, left: LeftQuestion, message: discord.Message) -> bool:
    """Answer a thread message a stopped bot left, unless it was answered or replied to; whether it was
    answered now. Its files are the resumed uploads': words beside them that ask nothing are their caption
    (`_thread_message`). Its reply, if it ends in one, is noted as the first run's was (`final_reply`)."""
    record = left.record
    assert record is not None
    if await _was_answered(services, record, message) or await _was_replied(me, left, message):
        return False
    if message.attachments and not asks(follow_up_text(message, me.id)):
        return False
    kept = asyncio.get_running_loop().create_future()
    kept.set_result(True)
    with _replies_noted(left.message_id, kept):
        await handle_follow_up(services, me, message, record, limits=False)
    return True


async def _was_replied(me: discord.abc.User, left: LeftQuestion, message: discord.Message) -> bool:
    """Whether the stopped bot's handling of the message ended in a reply it posted (`final_reply`): one
    noted as posted, or one noted as about to be that Discord shows, replying to it with that text. When
    Discord cannot say, it is taken as posted: the member saw the reply, or nothing, rather than two."""
    if left.reply_id is not None:
        return True
    if left.reply_digest is None:
        return False
    try:
        async for later in message.channel.history(limit=SETTLE_LOOKAHEAD, after=message, oldest_first=True):
            replied = later.reference is not None and later.reference.message_id == message.id
            if later.author.id == me.id and replied and reply_digest(later.content) == left.reply_digest:
                return True
    except discord.HTTPException as error:
        log.warning("cannot look for the reply to message %s left unanswered (%s); taken as posted", message.id, error)
        return True
    return False


async def _told_to_ask_again(webhook_for: Callable[[str], discord.Webhook], left: LeftQuestion) -> int:
    """An /ask a stopped bot left: its response, still "thinking" (nothing in it), says to ask again; 1 when
    it was told. Its token expired, or its response shows something (the answer, a refusal): nothing."""
    if left.token is None or left.token_until <= time.time():
        return 0
    webhook = webhook_for(left.token)
    try:
        shown = await webhook.fetch_message("@original")  # type: ignore[arg-type]  # the path Discord names it by
        if shown.content or shown.embeds:
            return 0
        await webhook.edit_message("@original", content=ASK_AGAIN)  # type: ignore[arg-type]
    except discord.HTTPException as error:
        log.info("could not tell the /ask %s left unanswered to ask again: %s", left.message_id, error)
        return 0
    return 1


async def _left_message(channel: Any, message_id: int) -> discord.Message | None | bool:
    """The kept message as Discord has it now; None when it (or its thread) is gone; False when Discord
    cannot say now."""
    try:
        return await channel.fetch_message(message_id)
    except discord.NotFound:
        return None
    except discord.HTTPException as error:
        log.warning("cannot read message %s left unanswered (%s); left for the next start", message_id, error)
        return False


async def _was_answered(services: Services, record: ThreadRecord, message: discord.Message) -> bool:
    """Whether the bot answered the message before it stopped: its exchange is stored (an answer's, small
    talk's too). A reply of the bot's is no sign: a file's status message replies to the message it came in."""
    return await services.state.asked_exchange(record.guild_id, record.thread_id, message.id) is not None


async def handle_deleted_questions(
    services: Services, thread: discord.Thread | discord.PartialMessageable, record: ThreadRecord, message_ids: set[int]
) -> int:
    """Members deleted their questions in a thread the bot opened: each one's exchange leaves the thread's
    memory (a later follow-up does not lean on it) and the bot deletes its answer, which repeats the
    question ("Searched as: ..."). Taken in the thread's turn, so a question deleted while it is being
    answered goes once its answer is stored. Returns how many answer messages were deleted."""
    async with services.jobs.track(), conversation_turn(record.thread_id):
        answers = await services.state.forget_questions(record.guild_id, record.thread_id, message_ids)
        deleted = 0
        for message_id in answers:
            try:
                message = await thread.fetch_message(message_id)
                # its 'Show context' pages quote the question too: gone before the message, so no one sees
                # the answer gone while its page stays
                if saved := saved_answer_ids(message):
                    await services.state.forget_answers(record.kb, saved)
                await message.delete()
                deleted += 1
            except discord.NotFound:
                pass  # deleted already
            except discord.HTTPException as error:
                log.warning("could not delete answer %s of a deleted question in %s: %s", message_id, thread.id, error)
    return deleted


UNKNOWN_CHANNEL = 10003  # Discord's error code: the thread itself is gone
UNKNOWN_MESSAGE = 10008  # ... the message is gone; any other 404 (no code: a proxy's page) tells nothing


async def reconcile_questions(services: Services, channel_for: Callable[[int, int], Awaitable[Any | None]]) -> int:
    """At start: questions members deleted while the bot was down leave their threads' memory with their
    answers, as `handle_deleted_questions` takes them when the deletion is seen. Bounded: the most recently
    active threads only (`BotState.recent_questions`), one message fetch per question their follow-ups are
    given, one at a time (discord.py waits out rate limits). Discord's "Unknown Message" is a deleted
    question ("Unknown Channel": the thread is forgotten); any other failure, a 404 without either code
    included, passes the thread over, logged. Returns how many questions were found deleted."""
    deleted = 0
    for record, message_ids in await services.state.recent_questions():
        channel = await channel_for(record.guild_id, record.thread_id)
        if channel is None:  # not a thread of the guild whose store names it: nothing there is read or deleted
            continue
        gone: set[int] = set()
        for message_id in message_ids:
            try:
                await channel.fetch_message(message_id)
            except discord.NotFound as error:
                if error.code == UNKNOWN_CHANNEL:
                    await services.state.forget_thread(record.guild_id, record.thread_id)
                    log.info("thread %s was deleted while the bot was down; forgotten", record.thread_id)
                    gone.clear()
                    break
                if error.code != UNKNOWN_MESSAGE:
                    log.warning("cannot check the questions of thread %s (%s); left as they are", record.thread_id, error)
                    break
                gone.add(message_id)
            except discord.HTTPException as error:
                log.warning("cannot check the questions of thread %s (%s); left as they are", record.thread_id, error)
                break
        if gone:
            await handle_deleted_questions(services, channel, record, gone)
            deleted += len(gone)
    return deleted


_CONTEXT_BUTTON = re.compile(r"^raptor:ctx:(\d+)$")


def saved_answer_ids(message: discord.Message) -> set[int]:
    """The saved answers ('Show context') an answer message's buttons open."""
    ids: set[int] = set()
    for row in message.components:
        for item in getattr(row, "children", ()):
            match = _CONTEXT_BUTTON.match(getattr(item, "custom_id", None) or "")
            if match:
                ids.add(int(match.group(1)))
    return ids


async def handle_edited_follow_up(
    services: Services, me: discord.abc.User, message: discord.Message, record: ThreadRecord, before: str | None
) -> None:
    """A member edited a message in a thread the bot opened (`before`: its text before, when the bot had
    it). A question the bot answered is answered again as edited, in the old answer's messages (edited
    in place, as bots that answer commands re-run an edited one: the thread keeps one answer per
    question, beside the question as it now reads), and its exchange in the thread's memory is replaced;
    a message the bot never answered (asked while it was down, or refused) is answered as a new
    follow-up. An edit that leaves the question's words as they were (an embed shown, a pin) does
    nothing."""
    question = follow_up_text(message, me.id)
    if not question or (before is not None and follow_up_text_of(before, me.id, names_in(message)) == question):
        return
    async with services.jobs.track(), conversation_turn(record.thread_id):
        exchange = await services.state.asked_exchange(record.guild_id, record.thread_id, message.id)
        if exchange is not None and exchange.question == question:
            return
        if exchange is not None and (asks_nothing(question) or (asks(exchange.question) and not asks(question))):
            # edited to "👍", "thanks" or a statement ("she trained in Edinburgh."): the question it asked
            # was answered, and others may have read the answer; it stays, with its exchange in the memory
            log.info("follow-up %s edited to ask nothing; its answer is left as it was", message.id)
            return
        await _follow_up(services, me, message, record, exchange)


async def adopt_answer(stream: StreamedReply, channel: discord.abc.Messageable, message_ids: list[int]) -> None:
    """The old answer's messages that are still there become the stream's: the new answer edits them."""
    found = []
    for message_id in message_ids:
        try:
            found.append(await channel.fetch_message(message_id))
        except discord.HTTPException as error:  # deleted meanwhile: the answer goes on in new messages
            log.info("the answer message %s to edit is gone: %s", message_id, error)
    stream.adopt(found)


async def _follow_up(
    services: Services,
    me: discord.abc.User,
    message: discord.Message,
    record: ThreadRecord,
    edited: AskedExchange | None = None,
    *,
    limits: bool = True,
) -> None:
    """Answer a follow-up; `edited`: the exchange of a question edited since, answered again in its
    answer's messages and put back in its place in the thread's memory. `limits`: the cooldown and the
    questions per minute apply (not to a question a stopped bot left unanswered: it was asked long ago)."""
    mentioned = me in message.mentions
    question = follow_up_text(message, me.id)
    if not question:
        if mentioned:
            await final_reply(services, message, "Ask your follow-up question after mentioning me.")
        return  # without the message-content intent Discord sends no text unless the bot is mentioned
    if wordless(question):  # a reaction typed as a message ("👍", "🤔", "..."): nothing to answer
        if "?" in unicodedata.normalize("NFKC", question):
            await final_reply(services, message, WORDLESS_QUESTION)
        return
    if not mentioned and talks_to_a_member(message, me.id) and not asks(question):
        log.info("message %s in thread %s talks to another member: not answered", message.id, record.thread_id)
        return
    limited = question_refusal(services, message.author.id, question) if limits else None
    refusal = LINK_HINT if only_links(question) else limited
    if refusal:
        await final_reply(services, message, refusal)
        return
    kb = record.kb
    if kb != kb_for_channel(message.guild.id if message.guild else None, message.channel):
        log.warning(
            "thread %s is recorded for %s but sits in channel %s",
            record.thread_id,
            kb,
            home_channel_id(message.channel),
        )
        return
    if edited is None and message.reference is None:
        question = await finished_question(services, record, message, question)
    hidden = asked_under_spoiler(message.content or forwarded_text(message))
    if edited is None:
        await settle_thread(services, record, message.channel, me.id)
        history, follows = await thread_history(services, record, message)
    else:
        history, follows = edited.history, None
    stream = StreamedReply(*thread_senders(message), hidden=hidden)
    if edited is not None:
        await adopt_answer(stream, message.channel, edited.answer_message_ids)
    asked_at = time.time()
    try:
        async with message.channel.typing():
            answer = await ask_engine(
                services, kb, question, "collapsed", history, str(message.author), stream.show, follows
            )
    except RaptorError as error:
        log.warning("follow-up in %s refused: %s", kb, error)
        await stream.stop()
        await final_reply(services, message, f"⚠️ {inert(str(error))}")
        return
    except Exception as error:
        log.exception("follow-up in %s failed", kb)
        await stream.stop()
        await final_reply(services, message, failure_text(error, FAILED))
        return
    if answer is None:
        await final_reply(services, message, empty_text(services, kb))
        return
    told = await note_removed(services, record, answer)
    messages, view = await prepare(services, kb, answer, asked_at, hidden)
    def post() -> Awaitable[list[discord.Message]]:
        return deliver(stream, messages, view, stream.send_all)

    if edited is None:
        await _post_follow_up(services, record, message, answer, post, follows=follows, told=told)
        return
    # recorded pending, posted, then put in the old exchange's place: a bot stopped in between settles it
    turn_ids = await remember_exchange(services, record.guild_id, record.thread_id, answer, message, told=told, pending=True)

    async def replace(posted: list[int]) -> None:
        await services.state.attach_replacement(record.guild_id, edited, turn_ids, posted)

    try:
        await posting_remembered(services, record.guild_id, turn_ids, post, replace)
    except discord.HTTPException as error:  # no Send Messages in Threads any more, a locked thread
        log.warning("could not answer in thread %s: %s", record.thread_id, error)
        return  # the member never saw this answer: the old exchange stays
    log.info("edited follow-up answered again in thread %s (%s)", record.thread_id, kb)


SPLIT_SECONDS = 30  # a member's message this soon after their unfinished question may finish it


async def finished_question(services: Services, record: ThreadRecord, message: discord.Message, text: str) -> str:
    """`text`, or the thread's last question and `text` as one, when `text` finishes it (`continues`:
    "who was the keeper" then "after Thomas Reid?") and the same member sent both within SPLIT_SECONDS:
    the second half alone asks something else ("after Thomas Reid?" asked about Reid)."""
    last = await services.state.last_question(record.guild_id, record.thread_id)
    if last is None or not continues(last[0], text):
        return text
    sent_at = discord.utils.snowflake_time(last[1][0])
    if (message.created_at - sent_at).total_seconds() > SPLIT_SECONDS:
        return text
    try:
        earlier = await message.channel.fetch_message(last[1][0])
    except discord.HTTPException:
        return text  # deleted meanwhile: nothing to finish
    if earlier.author.id != message.author.id:
        return text
    log.info("follow-up %s finishes the question %s before it", message.id, earlier.id)
    return f"{last[0]} {text}"


async def _post_follow_up(
    services: Services,
    record: ThreadRecord,
    message: discord.Message,
    answer: Answer,
    post: Callable[[], Awaitable[list[discord.Message]]],
    *,
    follows: int | None,
    told: Sequence[int],
) -> None:
    """A new follow-up's answer: its exchange recorded (pending), then posted and attached
    (`posting_remembered`)."""
    turn_ids = await remember_exchange(
        services,
        record.guild_id,
        record.thread_id,
        answer,
        message,
        as_searched=follows is not None,
        told=told,
        pending=True,
        asked_by=message.author.id,
    )
    try:
        await posting_remembered(services, record.guild_id, turn_ids, post)
    except discord.HTTPException as error:  # no Send Messages in Threads any more, a locked thread
        log.warning("could not answer in thread %s: %s", record.thread_id, error)
        return  # the member never saw this answer: its exchange was dropped
    log.info("follow-up answered in thread %s (%s)", record.thread_id, record.kb)
