"""Turning engine results into Discord messages that fit Discord's limits.

Discord refuses (HTTP 400) a message whose content exceeds 2,000 characters, an embed description over
4,096, or embeds totalling over 6,000 characters; so everything the bot shows is split here first, at
paragraph, line, sentence or word boundaries, never inside an [n] marker or a backslash escape.

Text the bot did not write (document text, file names, headings, questions, error details) goes through
`inert` first: Discord shows it as the characters it is, never as markdown, a masked link, a mention,
a timestamp, a custom emoji or a clickable URL.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import discord

from raptor_engine.ingest.load import chat_plain
from raptor_engine.query.answer import MARKER, describe_documents, neutralise_markers
from raptor_engine.query.support import MATCHED, describe_support, sources_title
from raptor_engine.types import Answer, Citation, ContextNode, MessageRef, pages_label

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


# ---------------------------------------------------------------------------------------------- inert text

# Every character Discord's markdown gives a meaning: emphasis, spoilers, code, masked links ([text](url)),
# block quotes, headings and subtext (-# ), mentions, channels, timestamps and custom emoji (<...>).
# A backslash before a punctuation character shows that character and hides the backslash.
_MARKDOWN_CHARACTER = re.compile(r"[\\*_~|`\[\]<>#]")
_EVERYONE = re.compile(r"@(?=(?:everyone|here)\b)")
_URL_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*):(?=//)")  # "https://" is not linked as "https\://"
_MENTION_SYNTAX = re.compile(r"<(?:@[!&]?|#|t:|a?:[\w~]+:|/[\w -]+:)[^<>]*>")
_MASKED_LINK = re.compile(r"\[([^\[\]\n]*)\]\([^()\n]*\)")
_PLAIN_NOISE = re.compile(r"[*_~|`>#\\]+")


def inert(text: str) -> str:
    """`text` escaped so Discord displays exactly its characters: no formatting, link, mention or emoji.

    Escapes add characters: escape before measuring or splitting for Discord's limits."""
    text = _MARKDOWN_CHARACTER.sub(lambda m: "\\" + m.group(0), text)
    text = _EVERYONE.sub(r"\\@", text)
    return _URL_SCHEME.sub(r"\1\\:", text)


def inert_answer(text: str) -> str:
    """An answer made inert except its own [n] markers (documents' numbers were neutralised before)."""
    parts = re.split(f"({MARKER.pattern})", text)
    return "".join(part if i % 3 == 1 else inert(part) for i, part in enumerate(parts) if i % 3 != 2)


def plain_question(text: str) -> str:
    """A member's message without Discord's markup, as the words to search, on one line: what the engine
    stores of a chat message (`chat_plain`), its code blocks' fences and language tags left out too, so
    a question typed in a code block, under a spoiler, quoted ("> who chaired it?") or with a masked link
    asks the same as typed plainly; its words (underscores inside them, "C#") are kept."""
    return " ".join(chat_plain(text, fences=False).split())


# A mention of a member (<@id>, <@!id>), a role (<@&id>) or a channel (<#id>); a timestamp (<t:unix:style>);
# the pings of everyone in a channel.
_MENTION = re.compile(r"<(@!?|@&|#)(\d{1,20})>")
_TIMESTAMP = re.compile(r"<t:(-?\d{1,20})(?::[tTdDfFR])?>")
_PING_ALL = re.compile(r"@(?:everyone|here)\b")
NameOf = Callable[[str, int], "str | None"]  # (kind: "@", "@&" or "#", id) -> the name the client shows


def spoken(text: str, name_of: NameOf) -> str:
    """`text` with its mentions as the client shows them, as a question's words: a member as "@name", a
    role as "@role", a channel as "#channel" (`name_of`; one it cannot name is left out, as the bot's
    own mention is), a timestamp as its UTC time; "@everyone" and "@here" (pings, not words) left out.
    A question searched "<@101> when was it founded?" as written."""

    def named(match: re.Match[str]) -> str:
        kind = "@" if match.group(1) == "@!" else match.group(1)
        name = name_of(kind, int(match.group(2)))
        return f"{'#' if kind == '#' else '@'}{name}" if name else ""

    def moment(match: re.Match[str]) -> str:
        try:
            return human_time(int(match.group(1)))
        except (OverflowError, OSError, ValueError):
            return ""

    return _PING_ALL.sub("", _TIMESTAMP.sub(moment, _MENTION.sub(named, text)))


# Spoiler bars around something (Discord's `||...||`, across lines too); bars in code or escaped are text.
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_SPOILER = re.compile(r"(?<!\\)\|\|(?=.*?\S.*?(?<!\\)\|\|)", re.S)
SPOILER = "||"


def asked_under_spoiler(text: str) -> bool:
    """Whether a member hid (some of) their question under a spoiler: its answer, which says what the
    question asks, is hidden too (`render_answer`)."""
    return bool(_SPOILER.search(_CODE.sub(" ", text)))


def spoiler(text: str) -> str:
    """Text (made inert before: no `||` of its own can close the spoiler) hidden until clicked."""
    return f"{SPOILER}{text}{SPOILER}" if text.strip() else text


def plain_name(text: str, limit: int) -> str:
    """A one-line name for places that show text without markdown (thread names): markdown characters,
    masked links, mentions and timestamps reduced to readable words, within `limit` characters."""
    text = _MASKED_LINK.sub(lambda m: m.group(1), text)
    text = _MENTION_SYNTAX.sub(lambda m: _mention_word(m.group(0)), text)
    text = _PLAIN_NOISE.sub(" ", text.replace("@everyone", "everyone").replace("@here", "here"))
    return truncate(" ".join(text.split()), limit)


def _mention_word(syntax: str) -> str:
    """What a mention, timestamp or emoji stands for, in a word ("<:wave:1>" -> ":wave:")."""
    if syntax.startswith(("<:", "<a:")):
        return ":" + syntax.split(":")[1] + ":"
    kinds = {"<@&": "@role", "<@": "@user", "<#": "channel", "<t:": "a date", "</": "/command"}
    return next(word for prefix, word in kinds.items() if syntax.startswith(prefix))


# ---------------------------------------------------------------------------------------------- splitting


def _best_cut(text: str, limit: int) -> int:
    """Where to end a piece of at most `limit` characters: the latest natural boundary past half-way;
    failing that, the latest space or inline code anywhere, so a word that fits a message is never cut."""
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
    at = _before_code(text, floor, limit)
    if at > 0:
        return at
    at = max(window.rfind(" ", 1, limit), window.rfind("\n", 1, limit), _before_code(text, 1, limit))
    if at > 0:  # a short piece rather than a word cut in two
        return at
    return _outside_escape(text, limit)


def _before_code(text: str, lowest: int, limit: int) -> int:
    """The start of the last run of backticks that begins in [lowest, limit): a cut before inline code
    (or a fence), never inside a run; -1 when there is none."""
    at = text.rfind("`", lowest, limit)
    while at > 0 and text[at - 1] == "`":
        at -= 1
    return at if at >= lowest else -1


def _outside_escape(text: str, cut: int) -> int:
    """`cut`, moved back one when it would separate a backslash from the character it escapes."""
    backslashes = len(text[:cut]) - len(text[:cut].rstrip("\\"))
    return cut - 1 if backslashes % 2 else cut


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
    return text if len(text) <= limit else text[: _outside_escape(text, limit - 1)].rstrip() + "…"


# ---------------------------------------------------------------------------------------------- sources


def layer_label(layer: int) -> str:
    return "L0 leaf" if layer == 0 else f"L{layer} summary"


def _document_name(name: str) -> str:
    return inert(truncate(name, 100))


_JUMP_LINK = re.compile(r"^https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/channels/\d+/\d+/\d+$")


def message_label(message: MessageRef, *, link: bool = True) -> str:
    """'message by NAME, DATE', linked to the message (a Discord jump link only; the name inert)."""
    label = f"message by {inert(truncate(message.author, 80))}, {human_time(message.created_at)}"
    return f"[{label}]({message.url})" if link and _JUMP_LINK.match(message.url) else label


def _where(
    document: str | None,
    pages: tuple[int | None, int | None],
    heading: tuple[str, ...],
    layer: int,
    leaf_count: int,
    drawn_from: tuple[tuple[str, int], ...] = (),
    message: MessageRef | None = None,
    link: bool = True,
) -> str:
    """The document (or, for a cross-document summary, the documents it draws on, most leaves first)
    and, for a leaf, its page(s) or section, or the message it holds (`link`: linked to it); for a
    summary, how many leaves it covers."""
    parts = [_document_name(document) if document else describe_documents(drawn_from, name=_document_name)]
    if layer == 0 and message is not None:
        parts.append(message_label(message, link=link))
    elif layer == 0:
        label = pages_label(*pages)
        if label is not None:
            parts.append(label)
        if heading:
            parts.append(inert(truncate(" › ".join(heading), 120)))
    else:
        parts.append(f"{leaf_count} leaves" if leaf_count != 1 else "1 leaf")
    return " · ".join(parts)


CITATION_CHARS = 400


def citation_line(c: Citation) -> str:
    """One source: its marker, layer, node and place; "matched" when the support check, not the model,
    found that the node says the sentence. A message's link is left out rather than cut when the line
    would be too long."""
    matched = " · *matched*" if c.kind == MATCHED else ""
    for link in (True, False):
        where = _where(
            c.document, (c.page, c.page_end), c.heading, c.layer, c.leaf_count, c.drawn_from, c.message, link
        )
        line = f"**[{c.marker}]** {layer_label(c.layer)} · node {c.node_id} · {where}"
        if len(line) + len(matched) <= CITATION_CHARS:
            break
    return truncate(line, CITATION_CHARS - len(matched)) + matched


WRONG_SENTENCE_CHARS = 200


def wrong_citation_lines(answer: Answer) -> list[str]:
    """A line for each marker the model put on a sentence its node does not say."""
    return [
        f"**[{w.marker}]** does not support “{inert(truncate(w.sentence, WRONG_SENTENCE_CHARS))}”"
        for w in answer.wrong_citations
    ]


FOOTER_OTHER_LINES = 300  # room kept in the footer for the support check's line and the context's line


def searched_in_footer(answer: Answer, hidden: bool = False) -> bool:
    """Whether the "Searched as" line (or the claims checked) goes in the footer: when there is one, it shows
    no spoiler (`hidden`: a footer cannot hide one), and it fits there whole. Otherwise it is the embed's last
    line of text (`sources_embeds`): it is never cut, so it shows exactly what was searched."""
    line = answer.searched_as
    return bool(line) and not hidden and len(line) + FOOTER_OTHER_LINES <= FOOTER_LIMIT


def context_footer(answer: Answer, hidden: bool = False) -> str:
    """What the answer stands on; first, when it fits there whole, exactly what was searched when that is
    not the question as asked (a follow-up's standalone question, a long message's questions; for 'is that
    true?', the claims that were checked: `searched_in_footer`)."""
    per_layer = " · ".join(f"L{layer}×{n}" for layer, n in answer.context.nodes_per_layer().items())
    ctx = answer.context
    text = (
        f"Context: {per_layer or 'no nodes'} · {ctx.tokens_used:,}/{ctx.budget:,} tokens · "
        f"{ctx.mode} · {answer.backend}"
    )
    if searched_in_footer(answer, hidden):
        text = f"{answer.searched_as}\n{text}"
    checked = describe_support(len(answer.unsupported), len(answer.wrong_citations))
    if checked:
        text = f"{checked}\n{text}"
    return truncate(text, FOOTER_LIMIT)


def sources_embeds(answer: Answer, hidden: bool = False) -> list[discord.Embed]:
    """The sources embed(s): one line per cited node, split over several embeds when long. `hidden` (a
    question asked under a spoiler): the wrong citations' sentences are under a spoiler. The searched line
    that does not go in the footer (`searched_in_footer`) ends the text, under a spoiler when `hidden`."""
    lines = [citation_line(c) for c in answer.citations] or ["The answer cites no passage."]
    wrong = wrong_citation_lines(answer)
    lines += [spoiler(line) for line in wrong] if hidden else wrong
    if answer.searched_as and not searched_in_footer(answer, hidden):
        searched = inert(answer.searched_as)
        lines.append(spoiler(searched) if hidden else searched)
    descriptions = split_text("\n".join(lines), DESCRIPTION_LIMIT)
    embeds = []
    for i, description in enumerate(descriptions):
        title = sources_title(answer) if i == 0 else f"{sources_title(answer)} (continued)"
        embeds.append(discord.Embed(title=title, description=description, colour=SOURCES_COLOUR))
    embeds[-1].set_footer(text=context_footer(answer, hidden))
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


def answer_pieces(text: str, limit: int, hidden: bool = False) -> list[str]:
    """Inert answer text in pieces of at most `limit` characters; `hidden`, each under its own spoiler (one
    cannot span two messages). The text holds no markup of its own: every `|` in it is escaped."""
    if not hidden:
        return split_text(text, limit)
    return [spoiler(piece) for piece in split_text(text, limit - 2 * len(SPOILER))]


def render_answer(answer: Answer, hidden: bool = False) -> list[OutMessage]:
    """The answer's text in ≤2,000-character messages, the sources embeds riding on the last of them;
    `hidden` (the question was asked under a spoiler): the text under spoilers, the sources usable."""
    text = inert_answer(answer.text) + (f"\n\n⚠️ {inert(answer.note)}" if answer.note else "")
    chunks = answer_pieces(text, CONTENT_LIMIT, hidden) or ["(The answer came back empty.)"]
    messages = [OutMessage(content=c) for c in chunks]
    groups = group_embeds(sources_embeds(answer, hidden))
    messages[-1].embeds = groups[0]
    messages.extend(OutMessage(embeds=g) for g in groups[1:])
    return messages


# ---------------------------------------------------------------------------------------------- context pages


def _node_block(position: int, node: ContextNode, use: str = "") -> str:
    used = f" · **{use}**" if use else ""
    for link in (True, False):  # a message's link is left out rather than cut
        where = _where(
            node.document,
            node.pages() or (node.page, None),
            node.heading,
            node.layer,
            node.leaf_count,
            node.drawn_from,
            node.message,
            link,
        )
        header = (
            f"**[{position}]** {layer_label(node.layer)} · node {node.node_id} · {where} · {node.tokens} tokens"
            + used
        )
        if len(header) <= CITATION_CHARS:
            break
    body = inert(truncate(reflow(neutralise_markers(node.text)), CONTEXT_NODE_CHARS))
    quoted = "\n".join("> " + line if line else ">" for line in body.splitlines())
    return f"{truncate(header, CITATION_CHARS)}\n{quoted}"


_LIST_LINE = re.compile(r"^(?:[-*•◦▪‣–]\s|\(?\d{1,3}[.)]\s|\(?[a-zA-Z][.)]\s)")
_SENTENCE_END = re.compile(r"[.!?:][\"”’)\]]?$")
SHORT_LINE = 0.8  # a sentence ending on a line this much shorter than the longest ends its paragraph


def reflow(text: str) -> str:
    """Text with the hard line breaks inside paragraphs (a PDF's line ends) joined into one line each;
    paragraph breaks (blank lines, or a sentence ending on a short line) and list lines stay."""
    blocks = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(b if _is_code(b) else _join_lines(b.splitlines()) for b in blocks if b.strip())


def _is_code(block: str) -> bool:
    """A fenced or indented code block, whose line breaks are its layout."""
    return FENCE in block or any(line.startswith(("    ", "\t")) for line in block.splitlines())


def _join_lines(raw_lines: list[str]) -> str:
    """One block's lines joined with spaces, except before a list item, after a list item unless the
    next line continues it (starts in lower case), and after a paragraph's short last line. A word
    hyphenated at a line end ("infor-" + "mation") is joined without a space."""
    lines = [line.strip() for line in raw_lines if line.strip()]
    width = max((len(line) for line in lines), default=0)
    out = lines[:1]
    for previous, line in zip(lines, lines[1:], strict=False):
        if _LIST_LINE.match(line) or (_LIST_LINE.match(previous) and not line[0].islower()):
            out.append("\n" + line)
        elif _SENTENCE_END.search(previous) and len(previous) < SHORT_LINE * width:
            out.append("\n\n" + line)
        elif previous.endswith("-") and previous[-2:-1].isalpha() and line[0].islower():
            out.append(line)
        else:
            out.append(" " + line)
    return "".join(out)


def node_uses(cited: Sequence[int], matched: Sequence[int]) -> dict[int, str]:
    """Node id -> how the answer cites it: "cited", or "matched" where the support check found it."""
    return {node_id: "cited" for node_id in cited} | {node_id: MATCHED for node_id in matched}


def context_pages(
    question: str,
    nodes: list[ContextNode],
    tokens_used: int,
    budget: int,
    uses: Mapping[int, str] | None = None,
    *,
    hidden: bool = False,
) -> list[discord.Embed]:
    """The retrieved nodes' text as pages (one embed each), in the context's order; the nodes the answer
    cites say so (`uses`, from `node_uses`). `hidden` (the question was asked under a spoiler, as its
    answer hides it): the title names no question, and each page opens with the question under a spoiler
    (a title shows none)."""
    uses = uses or {}
    blocks = [_node_block(i, node, uses.get(node.node_id, "")) for i, node in enumerate(nodes, start=1)]
    asked = spoiler(truncate(inert(truncate(question, 200)), 250)) + "\n\n" if hidden else ""
    title = "Context for a question asked under a spoiler" if hidden else f"Context for: {inert(truncate(question, 200))}"
    pages: list[list[str]] = [[]]
    size = len(asked)
    for block in blocks:
        if pages[-1] and size + len(block) + 2 > CONTEXT_PAGE_CHARS:
            pages.append([])
            size = len(asked)
        pages[-1].append(block)
        size += len(block) + 2
    total = len(pages)
    embeds = []
    for i, page in enumerate(pages, start=1):
        embed = discord.Embed(
            title=truncate(title, TITLE_LIMIT),
            description=asked + ("\n\n".join(page) or "No nodes were retrieved."),
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
