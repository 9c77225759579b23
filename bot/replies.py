"""Replying to an interaction, with the fall-back Discord forces on long or late work.

An interaction must be acknowledged within 3 seconds and its token lives 15 minutes. When Discord
says it is gone (10062 unknown interaction, 10015 unknown webhook, 50027 invalid token) or the token
is too old, public replies continue as normal channel messages naming the requester; private
(ephemeral) ones cannot be delivered anywhere private, so they are logged instead of leaked.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable, Sequence

import discord

from raptor_engine.errors import is_damaged_database, storage_failure

from .jobs import TOKEN_LIFETIME_SECONDS, is_expired_token_error
from .render import CONTENT_LIMIT, OutMessage, inert, truncate

log = logging.getLogger(__name__)


Attachment = tuple[str, bytes]  # (file name, bytes): a fresh discord.File is made for each attempt


def _files(attachments: Sequence[Attachment]) -> list[discord.File]:
    """discord.py closes a File once sent, so a fall-back after a failed send needs new ones."""
    return [discord.File(io.BytesIO(data), filename=name) for name, data in attachments]


def _kwargs(
    content: str,
    embeds: Sequence[discord.Embed],
    view: discord.ui.View | None,
    attachments: Sequence[Attachment] = (),
) -> dict:
    out: dict = {}
    if content:
        out["content"] = content
    if embeds:
        out["embeds"] = list(embeds)
    if view is not None:
        out["view"] = view
    if attachments:
        out["files"] = _files(attachments)
    return out


class Replier:
    """Sends one command's replies: the first fills the deferred response, later ones are follow-ups."""

    def __init__(
        self,
        interaction: discord.Interaction,
        *,
        ephemeral: bool = False,
        token_lifetime: float = TOKEN_LIFETIME_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.interaction = interaction
        self.ephemeral = ephemeral
        self.token_lifetime = token_lifetime
        self.clock = clock
        self.started = clock()
        self.expired = False
        self.filled_original = False
        self.fallback_used = False

    def usable(self) -> bool:
        return not self.expired and self.clock() - self.started < self.token_lifetime

    async def defer(self) -> None:
        """Acknowledge now ('thinking…'); an already expired interaction switches to the fall-back."""
        try:
            await self.interaction.response.defer(thinking=True, ephemeral=self.ephemeral)
        except discord.HTTPException as error:
            if not is_expired_token_error(error):
                raise
            log.warning(
                "interaction %s expired before it was acknowledged (%s)", self.interaction.id, error.code
            )
            self.expired = True

    async def send(
        self,
        content: str = "",
        embeds: Sequence[discord.Embed] = (),
        view: discord.ui.View | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> discord.Message | None:
        """Send one message; returns it (None when it could only be logged)."""
        if self.usable():
            try:
                return await self._send_by_interaction(content, embeds, view, attachments)
            except discord.HTTPException as error:
                if not is_expired_token_error(error):
                    raise
                log.warning(
                    "interaction %s token gone (%s); falling back to the channel",
                    self.interaction.id,
                    error.code,
                )
                self.expired = True
        return await self._send_in_channel(content, embeds, view, attachments)

    async def refuse(self, text: str) -> None:
        """A sentence only the asker needs (nothing to answer from, a refusal, an error), sent privately:
        after a public 'thinking…' Discord cannot make that response private, so it is deleted and the
        sentence sent as a private follow-up. Once something public was shown (a streamed answer cut
        short), or when the deletion fails, the sentence goes where the reply stands."""
        response_pending = self.interaction.response.is_done() and not self.filled_original
        if self.ephemeral or not response_pending or not self.usable():
            await self.send(text)
            return
        try:
            await self.interaction.delete_original_response()
        except discord.HTTPException as error:
            log.info("could not withdraw the public response to %s (%s)", self.interaction.id, error)
            await self.send(text)
            return
        self.filled_original = True  # it is gone: what follows is a follow-up
        try:
            await self.interaction.followup.send(truncate(text, CONTENT_LIMIT), ephemeral=True)
        except discord.HTTPException as error:
            log.warning("could not tell the asker of %s %r: %s", self.interaction.id, text[:80], error)

    async def send_all(
        self,
        messages: list[OutMessage],
        view: discord.ui.View | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> list[discord.Message]:
        """Send rendered messages in order; `view` and `attachments` ride on the last one."""
        sent = []
        for i, message in enumerate(messages):
            last = i == len(messages) - 1
            result = await self.send(
                message.content, message.embeds, view if last else None, attachments if last else ()
            )
            if result is not None:
                sent.append(result)
        return sent

    async def _send_by_interaction(
        self,
        content: str,
        embeds: Sequence[discord.Embed],
        view: discord.ui.View | None,
        attachments: Sequence[Attachment],
    ) -> discord.Message | None:
        response = self.interaction.response
        if not response.is_done():
            callback = await response.send_message(
                ephemeral=self.ephemeral, **_kwargs(content, embeds, view, attachments)
            )
            resource = callback.resource
            return resource if isinstance(resource, discord.Message) else None
        if not self.filled_original:
            self.filled_original = True
            extra = {"attachments": _files(attachments)} if attachments else {}
            return await self.interaction.edit_original_response(
                content=content or None, embeds=list(embeds), view=view, **extra
            )
        return await self.interaction.followup.send(
            wait=True, ephemeral=self.ephemeral, **_kwargs(content, embeds, view, attachments)
        )

    async def _send_in_channel(
        self,
        content: str,
        embeds: Sequence[discord.Embed],
        view: discord.ui.View | None,
        attachments: Sequence[Attachment] = (),
    ) -> discord.Message | None:
        if self.ephemeral:
            log.warning(
                "a private reply to interaction %s could not be delivered (token expired)",
                self.interaction.id,
            )
            return None
        channel = self.interaction.channel
        if channel is None or not hasattr(channel, "send"):
            log.warning("no channel to fall back to for interaction %s", self.interaction.id)
            return None
        if not self.fallback_used:
            self.fallback_used = True
            content = truncate(f"<@{self.interaction.user.id}> {content}".rstrip(), CONTENT_LIMIT)
        try:
            return await channel.send(**_kwargs(content, embeds, view, attachments))  # type: ignore[union-attr]
        except discord.HTTPException as error:
            log.warning("fall-back channel message failed in %s: %s", getattr(channel, "id", "?"), error)
            return None


DAMAGED_STORE = (
    "This knowledge base is kept in a damaged database file, so it cannot be read; the bot's operator must "
    "restore that file from a backup (the bot's log names it)."
)


def failure_text(error: BaseException, fallback: str) -> str:
    """What a user reads for a failure no handler turned into a sentence. The data directory's own
    failures (a damaged database, a full or read-only disk) get their sentence, since trying again
    cannot help until the operator acts; anything else gets `fallback`. A damaged file's path and
    SQLite's words stay in the log: they mean nothing to members and show the host's layout."""
    if is_damaged_database(error):
        return f"⚠️ {DAMAGED_STORE}"
    sentence = storage_failure(error)
    return f"⚠️ {inert(sentence)}" if sentence is not None else f"⚠️ {fallback}"


async def reply_quietly(message: discord.Message, text: str) -> discord.Message | None:
    """A reply to a member's message that pings no one and never raises (a failure is logged); the reply,
    or None when it could not be posted."""
    try:
        return await message.reply(truncate(text, CONTENT_LIMIT), mention_author=False)
    except discord.HTTPException as error:
        log.warning("could not reply in %s: %s", message.channel.id, error)
        return None


async def tell(interaction: discord.Interaction, text: str, *, ephemeral: bool = True) -> None:
    """A short reply (refusals, confirmations) wherever the interaction stands; never raises."""
    try:
        if interaction.response.is_done():
            await interaction.followup.send(truncate(text, CONTENT_LIMIT), ephemeral=ephemeral)
        else:
            await interaction.response.send_message(truncate(text, CONTENT_LIMIT), ephemeral=ephemeral)
    except discord.HTTPException as error:
        log.warning("could not tell the user %r: %s", text[:80], error)
