"""Buttons: 'Show context' with its pages, and confirm/cancel for destructive commands.

The context buttons are DynamicItems whose custom_id carries the stored answer's id and the page, so
they keep working after a restart and hold no state in memory. Each click re-checks that the answer
belongs to the knowledge base of the channel it is clicked in: a crafted custom_id cannot show another
channel's nodes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import discord

from .kb import kb_for_channel
from .pictures import ShowTreeButton
from .render import context_pages, node_uses
from .services import services_of

log = logging.getLogger(__name__)

CONFIRM_TIMEOUT_SECONDS = 120.0
GONE = "That context is no longer available (the answer was removed or belongs to another channel)."


async def _show_page(interaction: discord.Interaction, answer_id: int, page: int, *, edit: bool) -> None:
    stored = await services_of(interaction.client).state.answer(interaction.guild_id, answer_id)
    here = kb_for_channel(interaction.guild_id, interaction.channel)
    if stored is None or stored.kb != here:
        log.info("context %s refused in %s (answer kb %s)", answer_id, here, stored and stored.kb)
        await interaction.response.send_message(GONE, ephemeral=True)
        return
    uses = node_uses(stored.cited, stored.matched)
    pages = context_pages(
        stored.question, stored.nodes, stored.tokens_used, stored.budget, uses, hidden=stored.hidden
    )
    page = max(0, min(page, len(pages) - 1))
    view = pager_view(answer_id, page, len(pages))
    if edit:
        await interaction.response.edit_message(embed=pages[page], view=view)
    else:
        await interaction.response.send_message(embed=pages[page], view=view, ephemeral=True)


class ShowContextButton(discord.ui.DynamicItem[discord.ui.Button], template=r"raptor:ctx:(?P<answer>\d+)"):
    """On an answer: opens the retrieved nodes' text, privately, at page 1."""

    def __init__(self, answer_id: int):
        self.answer_id = answer_id
        super().__init__(
            discord.ui.Button(
                label="Show context", style=discord.ButtonStyle.secondary, custom_id=f"raptor:ctx:{answer_id}"
            )
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Button, match: re.Match[str], /
    ) -> ShowContextButton:
        return cls(int(match["answer"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        await _show_page(interaction, self.answer_id, 0, edit=False)


class ContextPageButton(
    discord.ui.DynamicItem[discord.ui.Button],
    template=r"raptor:ctxp:(?P<answer>\d+):(?P<page>\d+):(?P<dir>[pn])",
):
    """Previous/next on a context page: edits the private message in place."""

    def __init__(self, answer_id: int, page: int, direction: str, disabled: bool = False):
        self.answer_id = answer_id
        self.page = page
        label = "◀ Previous" if direction == "p" else "Next ▶"
        super().__init__(
            discord.ui.Button(
                label=label,
                style=discord.ButtonStyle.secondary,
                custom_id=f"raptor:ctxp:{answer_id}:{page}:{direction}",
                disabled=disabled,
            )
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Button, match: re.Match[str], /
    ) -> ContextPageButton:
        return cls(int(match["answer"]), int(match["page"]), match["dir"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await _show_page(interaction, self.answer_id, self.page, edit=True)


def answer_view(answer_id: int) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(ShowContextButton(answer_id))
    view.add_item(ShowTreeButton(answer_id))
    return view


def pager_view(answer_id: int, page: int, pages: int) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    if pages > 1:
        view.add_item(ContextPageButton(answer_id, max(page - 1, 0), "p", disabled=page == 0))
        view.add_item(ContextPageButton(answer_id, min(page + 1, pages - 1), "n", disabled=page >= pages - 1))
    return view


class ConfirmView(discord.ui.View):
    """Confirm/cancel for /kb remove and /kb clear; only the person who asked can press them."""

    def __init__(
        self, owner_id: int, on_confirm: Callable[[discord.Interaction], Awaitable[Any]], action: str
    ):
        super().__init__(timeout=CONFIRM_TIMEOUT_SECONDS)
        self.owner_id = owner_id
        self.on_confirm = on_confirm
        self.action = action

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id != self.owner_id:
            await interaction.response.send_message(
                "Only the person who asked can confirm this.", ephemeral=True
            )
            return False
        return True

    @discord.ui.button(label="Confirm", style=discord.ButtonStyle.danger, custom_id="raptor:confirm")
    async def confirm(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:
        self.stop()
        await interaction.response.edit_message(content=f"{self.action}…", view=None)
        await self.on_confirm(interaction)

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary, custom_id="raptor:cancel")
    async def cancel(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:
        self.stop()
        await interaction.response.edit_message(content="Cancelled; nothing was changed.", view=None)

    async def on_error(
        self, interaction: discord.Interaction, error: Exception, item: discord.ui.Item
    ) -> None:
        log.exception("confirm view failed (%s)", self.action, exc_info=error)
        try:
            await interaction.followup.send(f"{self.action} failed; the error was logged.", ephemeral=True)
        except discord.HTTPException:
            log.warning("could not report the confirm failure to the user")
