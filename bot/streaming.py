"""An LLM answer shown in Discord while the model writes it (llmcord-style): the reply is edited with the
text so far and a cursor, at most once a second, and the last edit carries the finished answer with
its sources embed, footer and buttons.

Discord rate-limits message edits per channel; a 429 is waited out by discord.py itself (it sleeps the
Retry-After it is told and sends again), and the next edit comes no sooner than a second after the last.
Text longer than one message goes on in a second one, cut where `render.split_text` cuts (a paragraph,
line, sentence or word boundary, never inside an [n] marker or an escape). Text is made inert as every
answer is (`render.inert_answer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import discord

from .render import CONTENT_LIMIT, OutMessage, answer_pieces, inert_answer
from .replies import _kwargs as message_kwargs

log = logging.getLogger(__name__)

EDIT_INTERVAL = 1.0  # seconds between two edits (or sends) of a streamed answer, at least
CURSOR = " ▌"

# Sends one new message (content, embeds, view); None when it could not be delivered.
Send = Callable[[str, Sequence[discord.Embed], "discord.ui.View | None"], Awaitable["discord.Message | None"]]


def streaming_pieces(text: str, hidden: bool = False) -> list[str]:
    """The text so far as message contents, the last with the cursor; each within Discord's limit, and
    under a spoiler when `hidden` (the question was)."""
    pieces = answer_pieces(inert_answer(text), CONTENT_LIMIT - len(CURSOR), hidden) or [""]
    pieces[-1] += CURSOR
    return pieces


class StreamedReply:
    """One answer's messages while it streams. `show` is the engine's `on_text`; `finish` puts the
    finished answer in place; `stop` ends the edits when the question failed. The edits end with the
    task that made the reply too (`_owner`): a handler cancelled by a stopping or killed bot would
    otherwise leave them to fail through the closed session, their error never retrieved."""

    def __init__(
        self,
        send_first: Send,
        send_more: Send,
        *,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        hidden: bool = False,
    ):
        self.send_first = send_first
        self.hidden = hidden  # the question was asked under a spoiler: so is the text shown
        self.send_more = send_more
        self.interval = EDIT_INTERVAL if interval is None else interval
        self.clock = clock
        self.sent: list[discord.Message] = []
        self.contents: list[str] = []
        self.failed = False  # a message could not be sent or edited: the rest goes the plain way
        self._latest = ""
        self._changed = asyncio.Event()
        self._editing = asyncio.Lock()
        self._last_call = float("-inf")
        self._task: asyncio.Task[None] | None = None
        self._owner = _running_task()  # the handler answering: the edits do not outlive it

    def adopt(self, messages: Sequence[discord.Message]) -> None:
        """Messages already showing an earlier answer (to a question edited since): this answer is put in
        them, edited in place, as a streamed one is."""
        self.sent = list(messages)
        self.contents = [m.content for m in messages]

    @property
    def started(self) -> bool:
        """Whether the answer streamed (shown, or about to be); one that never did is sent as before."""
        return (self._task is not None or bool(self.sent)) and not self.failed

    async def show(self, text: str) -> None:
        """The text so far (the engine's `on_text`): shown by the next edit, never waits for Discord."""
        self._latest = text
        self._changed.set()
        if self._task is None and not self.failed:
            self._task = asyncio.create_task(self._edit_while_written())
            if self._owner is not None:
                self._owner.add_done_callback(self._owner_done)

    def _owner_done(self, _: object) -> None:
        """The handler that made the reply ended (answered, failed or cancelled): no edit is left running."""
        if self._task is not None:
            self._task.cancel()

    async def _edit_while_written(self) -> None:
        while not self.failed:
            await self._changed.wait()
            async with self._editing:
                self._changed.clear()
                await self._wait_turn()
                await self._put(streaming_pieces(self._latest, self.hidden))

    async def _wait_turn(self) -> None:
        """Sleep until a second has passed since the last edit or send."""
        delay = self._last_call + self.interval - self.clock()
        if delay > 0:
            await asyncio.sleep(delay)

    async def _put(self, pieces: list[str], outs: Sequence[OutMessage] = (), view: discord.ui.View | None = None):
        """Edit the messages whose content changed and send the ones that are new; with `outs` (the
        finished answer) every message gets its embeds and the last the buttons."""
        final = bool(outs)
        try:
            for i, content in enumerate(pieces):
                embeds = list(outs[i].embeds) if final else []
                last_view = view if final and i == len(pieces) - 1 else None
                if i < len(self.sent):
                    if content == self.contents[i] and not (final and (embeds or last_view)):
                        continue
                    kwargs: dict = {"content": content or None}
                    if final:
                        kwargs.update(embeds=embeds, view=last_view)
                    self.sent[i] = await self.sent[i].edit(**kwargs) or self.sent[i]
                    self.contents[i] = content
                else:
                    send = self.send_first if not self.sent else self.send_more
                    message = await send(content, embeds, last_view)
                    if message is None:
                        self.failed = True
                        return
                    self.sent.append(message)
                    self.contents.append(content)
                self._last_call = self.clock()
        except discord.HTTPException as error:
            log.warning("could not show the answer as it was written: %s", error)
            self.failed = True

    async def finish(self, messages: list[OutMessage], view: discord.ui.View | None) -> list[discord.Message]:
        """Put the finished answer (as `render_answer` renders it) in the streamed messages' place: the
        same messages edited, more sent, spare ones deleted. Returns the answer's messages."""
        async with self._editing:
            await self._stop_editing()
            await self._wait_turn()
            await self._put([m.content for m in messages], messages, view)
        for spare in self.sent[len(messages) :]:
            with contextlib.suppress(discord.HTTPException):
                await spare.delete()
        return self.sent[: len(messages)]

    async def send_all(self, messages: list[OutMessage], view: discord.ui.View | None) -> list[discord.Message]:
        """The answer sent the plain way (nothing streamed): the first message, then the rest."""
        sent = []
        for i, out in enumerate(messages):
            send = self.send_first if i == 0 else self.send_more
            message = await send(out.content, out.embeds, view if i == len(messages) - 1 else None)
            if message is not None:
                sent.append(message)
        return sent

    async def stop(self) -> None:
        """The question failed: no more edits, and the shown text loses its cursor."""
        async with self._editing:
            await self._stop_editing()
            if self.started:
                await self._put([p.removesuffix(CURSOR) for p in self.contents])

    async def _stop_editing(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


def _running_task() -> asyncio.Task[Any] | None:
    """The task running now; None outside the event loop (a reply made in a test's plain function)."""
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


def thread_senders(message: discord.Message) -> tuple[Send, Send]:
    """How an answer to a message in a thread is sent: a reply to it, then messages in the thread."""

    async def first(content: str, embeds: Sequence[discord.Embed], view: discord.ui.View | None):
        return await message.reply(mention_author=False, **message_kwargs(content, embeds, view))

    async def more(content: str, embeds: Sequence[discord.Embed], view: discord.ui.View | None):
        return await message.channel.send(**message_kwargs(content, embeds, view))

    return first, more


async def deliver(
    stream: StreamedReply,
    messages: list[OutMessage],
    view: discord.ui.View | None,
    send_all: Callable[[list[OutMessage], discord.ui.View | None], Awaitable[list[discord.Message]]],
) -> list[discord.Message]:
    """The finished answer: in place of what was streamed, or sent by `send_all` as before when nothing
    was (an extractive answer, a reply to 'thanks!', a stream Discord would not take)."""
    if stream.started:
        return await stream.finish(messages, view)
    if stream.sent:
        log.warning("the streamed answer could not be finished in place; sending it anew")
    return await send_all(messages, view)
