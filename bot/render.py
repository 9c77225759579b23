"""Turning engine results into Discord messages that fit Discord's limits.

Discord refuses (HTTP 400) a message whose content exceeds 2,000 characters, an embed description over
4,096, or embeds totalling over 6,000 characters; so everything the bot shows is split here first, at
paragraph, line, sentence or word boundaries, never inside an [n] marker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import discord
from discord.utils import escape_markdown

from raptor_engine.types import Answer, Citation, ContextNode, pages_label

CONTENT_LIMIT = 2000
DESCRIPTION_LIMIT = 4096
TITLE_LIMIT = 256
FOOTER_LIMIT = 2048
EMBEDS_TOTAL_LIMIT = 6000
EMBEDS_PER_MESSAGE = 10
CONTEXT_NODE_CHARS = 1800  # one node's text on a 'Show context' page
CONTEXT_PAGE_CHARS = 3800  # leaves room for a page's headers under DESCRIPTION_LIMIT
SOURCES_COLOUR = discord.Colour.blurple()
FENCE = "```"


@dataclass
class OutMessage:
    """One Discord message to send: content (may be empty) and embeds within the per-message limits."""

    content: str = ""
    embeds: list[discord.Embed] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- splitting


def _best_cut(text: str, limit: int) -> int:
    """Where to end a piece of at most `limit` characters: the latest natural boundary past half-way."""
    window = text[: limit + 1]
    floor = limit // 2
    for sep in ("\n\n", "\n"):
        at = window.rfind(sep, floor, limit)
        if at > 0:
            return at
    for sep in (". ", "! ", "? ", "; "):
        at = window.rfind(sep, floor, limit)
        if at > 0:
            return at + 1
    at = window.rfind(" ", floor, limit)
    if at > 0:
        return at
    return limit


def _take(text: str, room: int) -> tuple[str, int]:
    """The next piece of at most `room` characters, and where the rest begins."""
    cut = _best_cut(text, room) if len(text) > room else len(text)
    return text[:cut].rstrip(), cut


def split_text(text: str, limit: int = CONTENT_LIMIT) -> list[str]:
    """Split `text` into pieces of at most `limit` characters, keeping code fences balanced."""
    if limit < 16:
        raise ValueError("limit too small to split sensibly")
    text = text.strip()
    pieces: list[str] = []
    prefix = ""  # reopens a code block that the previous piece had to close
    while text:
        room = limit - len(prefix)
        body, cut = _take(text, room)
        if (prefix + body).count(FENCE) % 2 == 1:  # a code block goes on: leave room to close it
            body, cut = _take(text, room - len(FENCE) - 1)
        piece = prefix + body
        prefix = ""
        if piece.count(FENCE) % 2 == 1:
            piece += "\n" + FENCE
            prefix = FENCE + "\n"
        pieces.append(piece)
        text = text[cut:].lstrip()
    return [p for p in pieces if p.strip()]


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# ---------------------------------------------------------------------------------------------- sources


def layer_label(layer: int) -> str:
    return "L0 leaf" if layer == 0 else f"L{layer} summary"


def _where(
    document: str | None,
    pages: tuple[int | None, int | None],
    heading: tuple[str, ...],
    layer: int,
    leaf_count: int,
) -> str:
    """The document and, for a leaf, its page(s) or section; for a summary, how many leaves it covers."""
    parts = [escape_markdown(document) if document else "all documents"]
    if layer == 0:
        label = pages_label(*pages)
        if label is not None:
            parts.append(label)
        if heading:
            parts.append(escape_markdown(truncate(" › ".join(heading), 120)))
    else:
        parts.append(f"{leaf_count} leaves" if leaf_count != 1 else "1 leaf")
    return " · ".join(parts)


def citation_line(c: Citation) -> str:
    where = _where(c.document, (c.page, c.page_end), c.heading, c.layer, c.leaf_count)
    return truncate(f"**[{c.marker}]** {layer_label(c.layer)} · node {c.node_id} · {where}", 400)


SEARCHED_CHARS = 400  # the rewritten question shown in the footer, at most


def context_footer(answer: Answer) -> str:
    """What the answer stands on; for a follow-up, first the standalone question that was searched."""
    per_layer = " · ".join(f"L{layer}×{n}" for layer, n in answer.context.nodes_per_layer().items())
    ctx = answer.context
    text = (
        f"Context: {per_layer or 'no nodes'} · {ctx.tokens_used:,}/{ctx.budget:,} tokens · "
        f"{ctx.mode} · {answer.backend}"
    )
    if answer.rewritten:
        text = f"Searched as: {truncate(answer.query, SEARCHED_CHARS)}\n{text}"
    return truncate(text, FOOTER_LIMIT)


def sources_embeds(answer: Answer) -> list[discord.Embed]:
    """The sources embed(s): one line per cited node, split over several embeds when long."""
    lines = [citation_line(c) for c in answer.citations] or ["The answer cites no passage."]
    descriptions = split_text("\n".join(lines), DESCRIPTION_LIMIT)
    embeds = []
    for i, description in enumerate(descriptions):
        title = "Sources" if i == 0 else "Sources (continued)"
        embeds.append(discord.Embed(title=title, description=description, colour=SOURCES_COLOUR))
    embeds[-1].set_footer(text=context_footer(answer))
    return embeds


def group_embeds(embeds: list[discord.Embed]) -> list[list[discord.Embed]]:
    """Embeds grouped so no message carries more than 10 or more than 6,000 characters of them."""
    groups: list[list[discord.Embed]] = [[]]
    total = 0
    for embed in embeds:
        size = len(embed)
        if groups[-1] and (total + size > EMBEDS_TOTAL_LIMIT or len(groups[-1]) >= EMBEDS_PER_MESSAGE):
            groups.append([])
            total = 0
        groups[-1].append(embed)
        total += size
    return [g for g in groups if g]


def render_answer(answer: Answer) -> list[OutMessage]:
    """The answer's text in ≤2,000-character messages, the sources embeds riding on the last of them."""
    chunks = split_text(answer.text) or ["(The answer came back empty.)"]
    messages = [OutMessage(content=c) for c in chunks]
    groups = group_embeds(sources_embeds(answer))
    messages[-1].embeds = groups[0]
    messages.extend(OutMessage(embeds=g) for g in groups[1:])
    return messages


# ---------------------------------------------------------------------------------------------- context pages


def _node_block(position: int, node: ContextNode) -> str:
    where = _where(
        node.document, node.pages() or (node.page, None), node.heading, node.layer, node.leaf_count
    )
    header = (
        f"**[{position}]** {layer_label(node.layer)} · node {node.node_id} · {where} · {node.tokens} tokens"
    )
    body = truncate(node.text.strip(), CONTEXT_NODE_CHARS).replace(FENCE, "`\u200b``")
    quoted = "\n".join("> " + line if line else ">" for line in body.splitlines())
    return f"{truncate(header, 400)}\n{quoted}"


def context_pages(
    question: str, nodes: list[ContextNode], tokens_used: int, budget: int
) -> list[discord.Embed]:
    """The retrieved nodes' text as pages (one embed each), numbered as the answer's [n] markers are."""
    blocks = [_node_block(i, node) for i, node in enumerate(nodes, start=1)]
    pages: list[list[str]] = [[]]
    size = 0
    for block in blocks:
        if pages[-1] and size + len(block) + 2 > CONTEXT_PAGE_CHARS:
            pages.append([])
            size = 0
        pages[-1].append(block)
        size += len(block) + 2
    total = len(pages)
    embeds = []
    for i, page in enumerate(pages, start=1):
        embed = discord.Embed(
            title=truncate(f"Context for: {question}", TITLE_LIMIT),
            description="\n\n".join(page) or "No nodes were retrieved.",
            colour=SOURCES_COLOUR,
        )
        embed.set_footer(text=f"Page {i}/{total} · {len(nodes)} nodes · {tokens_used:,}/{budget:,} tokens")
        embeds.append(embed)
    return embeds


# ---------------------------------------------------------------------------------------------- management views


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def human_time(value: Any) -> str:
    """A short UTC timestamp from whatever the store keeps (datetime, epoch seconds or ISO text)."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
    elif isinstance(value, int | float):
        moment = datetime.fromtimestamp(value, UTC)
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return value[:16]
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    else:
        return "unknown time"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def embeds_from_lines(title: str, lines: list[str], footer: str | None = None) -> list[OutMessage]:
    """A long list as embeds within the description limit, grouped into messages within the total."""
    descriptions = split_text("\n".join(lines), DESCRIPTION_LIMIT) or ["(empty)"]
    embeds = []
    for i, description in enumerate(descriptions):
        embed = discord.Embed(title=title if i == 0 else f"{title} (continued)", description=description)
        embeds.append(embed)
    if footer:
        embeds[-1].set_footer(text=truncate(footer, FOOTER_LIMIT))
    return [OutMessage(embeds=g) for g in group_embeds(embeds)]
