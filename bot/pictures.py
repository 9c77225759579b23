"""Pictures of a channel's RAPTOR tree: `/kb tree` attaches the whole tree, and each answer's
**Show tree** button sends the person who clicks it, privately, the tree with that answer's context
nodes highlighted (cited ones distinct) and their paths to the top.

Drawing takes up to a few seconds on a big tree, so it runs in a worker thread after the interaction
is deferred. The button is a DynamicItem whose custom_id carries the stored answer's id, like
'Show context', so it keeps working after a restart; each click re-checks that the answer belongs
to the knowledge base of the channel it is clicked in.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Sequence
from typing import Any

import discord

from raptor_engine.engine import EmptyKnowledgeBaseError, TreePicture

from .kb import kb_for_channel
from .render import human_size
from .replies import Attachment, Replier
from .services import Services, services_of

log = logging.getLogger(__name__)

TREE_FILE = "raptor-tree.png"
DISCORD_FILE_LIMIT = 8 * 1024 * 1024  # the smallest attachment limit Discord has given bots
GONE = "That answer's tree is no longer available (the answer was removed or belongs to another channel)."
NO_TREE = "This channel's knowledge base has no documents any more, so there is no tree to show."
NOT_DRAWN = "The picture of the tree could not be drawn; the error was logged."


async def draw(services: Services, kb: str, **options: Any) -> TreePicture:
    """The engine's picture, drawn in a worker thread so the event loop keeps serving Discord."""
    return await asyncio.to_thread(functools.partial(services.engine.tree_picture, kb, **options))


def channel_title(interaction: discord.Interaction) -> str | None:
    """'#docs' for the picture's title instead of the knowledge base's internal name."""
    channel = interaction.channel
    parent = getattr(channel, "parent", None) if isinstance(channel, discord.Thread) else None
    name = getattr(parent or channel, "name", None)
    return f"#{name}" if name else None


def size_refusal(interaction: discord.Interaction, picture: TreePicture) -> str | None:
    """Why the picture cannot be attached here (over Discord's limit), or None."""
    limit = min(getattr(interaction, "filesize_limit", 0) or DISCORD_FILE_LIMIT, DISCORD_FILE_LIMIT)
    if len(picture.png) <= limit:
        return None
    log.warning("tree picture of %s bytes is over the %s-byte attachment limit", len(picture.png), limit)
    return (
        f"The picture of this tree is {human_size(len(picture.png))}, over Discord's "
        f"{human_size(limit)} limit for attachments."
    )


async def tree_attachment(
    services: Services, interaction: discord.Interaction, kb: str
) -> tuple[list[Attachment], str | None]:
    """`/kb tree`'s picture of the whole tree, or no attachment and one sentence saying why."""
    try:
        picture = await draw(services, kb, name=channel_title(interaction))
    except EmptyKnowledgeBaseError:
        return [], NO_TREE
    except Exception:
        log.exception("drawing the tree of %s failed", kb)
        return [], NOT_DRAWN
    refusal = size_refusal(interaction, picture)
    return ([], refusal) if refusal else ([(TREE_FILE, picture.png)], None)


def highlight_text(picture: TreePicture, matched: Sequence[int] = ()) -> str:
    """What the private picture shows: how many of the answer's nodes, how many cited (and of those, how
    many the support check matched rather than the model cited), any gone."""
    used, gone = len(picture.highlighted), len(picture.missing)
    found = len(set(matched) & set(picture.cited))
    of_them = f", {found} of them matched by the check" if found else ""
    text = (
        f"The tree with the {used} node{'s' if used != 1 else ''} this answer drew on highlighted "
        f"({len(picture.cited)} cited{of_them}, drawn as stars) and their paths to the top."
    )
    if gone:
        verb = "are" if gone != 1 else "is"
        text += f" {gone} of its nodes {verb} no longer in the tree (documents were added or removed since)."
    return text


async def show_answer_tree(interaction: discord.Interaction, answer_id: int) -> None:
    """The Show tree click: the stored answer's context highlighted in this channel's tree, privately."""
    services = services_of(interaction.client)
    stored = await services.state.answer(interaction.guild_id, answer_id)
    here = kb_for_channel(interaction.guild_id, interaction.channel)
    if stored is None or stored.kb != here:
        log.info("tree for answer %s refused in %s (answer kb %s)", answer_id, here, stored and stored.kb)
        await interaction.response.send_message(GONE, ephemeral=True)
        return
    replier = Replier(interaction, ephemeral=True, token_lifetime=services.token_lifetime)
    await replier.defer()
    try:
        picture = await draw(
            services,
            stored.kb,
            highlight=[n.node_id for n in stored.nodes],
            cited=stored.cited,
            caption="" if stored.hidden else stored.question,  # a picture shows no spoiler
            name=channel_title(interaction),
        )
    except EmptyKnowledgeBaseError:
        await replier.send(NO_TREE)
        return
    except Exception:
        log.exception("drawing the tree for answer %s failed", answer_id)
        await replier.send(NOT_DRAWN)
        return
    refusal = size_refusal(interaction, picture)
    if refusal:
        await replier.send(refusal)
        return
    await replier.send(highlight_text(picture, stored.matched), attachments=[(TREE_FILE, picture.png)])
    log.info("sent the tree of answer %s (%d nodes highlighted)", answer_id, len(picture.highlighted))


class ShowTreeButton(discord.ui.DynamicItem[discord.ui.Button], template=r"raptor:tree:(?P<answer>\d+)"):
    """On an answer: the tree with that answer's nodes highlighted, sent privately to whoever clicks."""

    def __init__(self, answer_id: int):
        self.answer_id = answer_id
        super().__init__(
            discord.ui.Button(
                label="Show tree", style=discord.ButtonStyle.secondary, custom_id=f"raptor:tree:{answer_id}"
            )
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Button, match: re.Match[str], /
    ) -> ShowTreeButton:
        return cls(int(match["answer"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        await show_answer_tree(interaction, self.answer_id)
