"""What the bot says when a member mentions it outside the threads it answers in.

Mentioned in a channel, the bot used to stay silent: a member who wrote "@raptor what is X?" or pasted a link
for it to read got nothing. It now answers with one sentence that points at the command doing what they
wanted. Only an explicit mention of the bot counts (not @everyone, @here or a role).
"""

from __future__ import annotations

import re

LINK = re.compile(r"(?i)\bhttps?://\S+")

LINK_HINT = (
    "I can't read links: download the file and add it with `/kb add` (managers), or post it here as an "
    "attachment and use *Apps → Add to knowledge base* on that message."
)
FILES_HINT = (
    "To add these files, a manager can use *Apps → Add to knowledge base* on this message, or `/kb add`; "
    "to ask about them, use `/ask`."
)
ASK_HINT = (
    "Ask me with `/ask` (my answer opens a thread where you can follow up by message); `/kb list` shows the "
    "documents I answer from."
)


def mention_hint(content: str, has_files: bool, autoingest: bool) -> str:
    """The one sentence for a mention outside an answer thread: about the files it carries (unless
    auto-ingest adds them anyway), the link it holds, or how to ask."""
    if has_files and not autoingest:
        return FILES_HINT
    if LINK.search(content) and not has_files:
        return LINK_HINT
    return ASK_HINT if not has_files else ""
