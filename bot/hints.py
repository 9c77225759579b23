"""What the bot says when a member mentions it outside the threads it answers in.

Mentioned in a channel, the bot used to stay silent: a member who wrote "@raptor what is X?" or pasted a link
for it to read got nothing. It now answers with one sentence that points at the command doing what they
wanted. Only an explicit mention of the bot counts (not @everyone, @here or a role).
"""

from __future__ import annotations

import re

LINK = re.compile(r"(?i)\bhttps?://\S+")
MENTION = re.compile(r"<@[!&]?\d+>")

LINK_HINT = (
    "I can't read links: download the file and add it with `/kb add` (managers), or post it here as an "
    "attachment and use *Apps → Add to knowledge base* on that message."
)
FILES_HINT = (
    "To add these files, a manager can use *Apps → Add to knowledge base* on this message, or `/kb add`; "
    "to ask about them, use `/ask`."
)
ADDING_ASK_HINT = (
    "I'm adding these files; to ask about them, use `/ask` once they are added (my answer opens a thread "
    "where you can follow up by message)."
)
ASK_HINT = (
    "Ask me with `/ask` (my answer opens a thread where you can follow up by message); `/kb list` shows the "
    "documents I answer from."
)


def mention_hint(content: str, has_files: bool, autoingest: bool) -> str:
    """The one sentence for a mention outside an answer thread: about the files it carries (when
    auto-ingest adds them, only if words came with them: a question asked beside the files is not lost
    in silence), the link it holds, or how to ask."""
    if has_files and not autoingest:
        return FILES_HINT
    if has_files:
        return ADDING_ASK_HINT if re.search(r"\w", MENTION.sub("", content)) else ""
    return LINK_HINT if LINK.search(content) else ASK_HINT


def only_links(question: str) -> bool:
    """A question that is links and nothing else: the bot reads no link, so searching its letters would
    quote whatever shares a word of the address."""
    return bool(LINK.search(question)) and not re.search(r"\w", LINK.sub("", MENTION.sub("", question)))
