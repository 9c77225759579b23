"""What the bot says when a member mentions it outside the threads it answers in.

Mentioned in a channel, the bot used to stay silent: a member who wrote "@raptor what is X?" or pasted a link
for it to read got nothing. It now answers with one sentence that points at the command doing what they
wanted. Only an explicit mention of the bot counts (not @everyone, @here or a role).
"""

from __future__ import annotations

import re

from raptor_engine.ingest.load import file_kinds

from .adding import Tally, is_supported

LINK = re.compile(r"(?i)\bhttps?://\S+")
MENTION = re.compile(r"<@[!&]?\d+>")
# A Markdown link's label ("[the rules](https://…)"): the link's own words, not a question's.
LABELLED_LINK = re.compile(r"\[[^\]\n]{0,200}\]\(\s*<?https?://[^)\s]+>?\s*\)", re.IGNORECASE)
# What joins links in a list of them: "and", "or", "plus", "&", commas, and a line's bullet or number
# ("- ", "• ", "1. ", "2)").
LINK_JOINERS = re.compile(r"(?im)\b(?:and|or|plus|also)\b|&|^\s*(?:[-*+•·‣◦]|\d{1,3}[.)])\s")

LINK_HINT = (
    "I can't read links: download the file and add it with `/kb add` (managers), or post it here as an "
    "attachment and use *Apps → Add to knowledge base* on that message."
)
FILES_HINT = (
    "To add these files, a manager can use *Apps → Add to knowledge base* on this message, or `/kb add`; "
    "to ask about them, use `/ask`."
)
# Files posted beside a follow-up in an answer thread of a channel without auto-ingest: nothing reads them, and
# a question asked beside them is answered from what is already here.
THREAD_FILES_HINT = (
    "I haven't added the files on this message (auto-ingest is off in this channel): a manager can add them "
    "with *Apps → Add to knowledge base* on it; until then I answer from the documents already here."
)
# Where `/ask` answers: in a text channel its answer opens a thread; in a thread or a forum post it
# answers there (no thread opens inside a thread).
OPENS_THREAD = "(my answer opens a thread where you can follow up by message)"
ANSWERS_HERE = "(I answer here)"


def ask_hint(where: str = OPENS_THREAD) -> str:
    """How to ask, saying truly where the answer goes (`OPENS_THREAD` or `ANSWERS_HERE`)."""
    return f"Ask me with `/ask` {where}; `/kb list` shows the documents I answer from."


ASK_HINT = ask_hint()


def mention_hint(content: str, filenames: list[str], tally: Tally | None, opens_thread: bool = True) -> str:
    """The one sentence for a mention outside an answer thread: about the files it carries, the link it
    holds, or how to ask. `tally`: what auto-ingest did with the files (None when it is off). Files
    auto-ingest took get a sentence only when words came with them (a question asked beside the files is
    not lost in silence), and it tells what became of them: added, already here, refused, or of a type
    the bot does not read. `opens_thread`: whether `/ask` here opens a thread (a text channel)."""
    where = OPENS_THREAD if opens_thread else ANSWERS_HERE
    if filenames and tally is None:
        if any(is_supported(name) for name in filenames):
            return FILES_HINT
        return unread_types(len(filenames), where)
    if filenames:
        return files_outcome(tally, where) if re.search(r"\w", MENTION.sub("", content)) else ""
    return LINK_HINT if LINK.search(content) else ask_hint(where)


def thread_files_hint(filenames: list[str], tally: Tally | None) -> str:
    """The sentence for files posted in an answer thread that auto-ingest did not look at (`tally` None: it
    is off), when any is of a type the bot reads; else nothing (the upload's status speaks for the rest)."""
    return THREAD_FILES_HINT if tally is None and any(is_supported(name) for name in filenames) else ""


def unread_types(files: int, where: str = OPENS_THREAD) -> str:
    what = "this file" if files == 1 else "these files"
    return f"I can't read {what}: I read {file_kinds()}; to ask about the documents already here, use `/ask` {where}."


def _were(count: int) -> str:
    return "was" if count == 1 else "were"


def files_outcome(tally: Tally, where: str = OPENS_THREAD) -> str:
    """What became of the files auto-ingest took, then where to ask: "I added this file; ...", "This file
    was already in this knowledge base, so nothing changed; ...", "I couldn't add ... (my reply above says
    why)", or, for a mix, each count ("Of these 3 files, 1 was added, 1 was already here and 1 could not
    be added ...")."""
    counts = (tally.added, tally.already, tally.not_added, tally.passed_over)
    what, them = ("this file", "it") if tally.files == 1 else ("these files", "them")
    about = them if tally.added or tally.already else "the documents already here"
    ask = f"to ask about {about}, use `/ask` {where}."
    if counts.count(0) < 3:
        verbs = (
            f"{_were(tally.added)} added",
            f"{_were(tally.already)} already here",
            "could not be added (my reply above says why)",
            f"{_were(tally.passed_over)} of a type I don't read",
        )
        parts = [f"{n} {verb}" for n, verb in zip(counts, verbs, strict=True) if n]
        return f"Of these {tally.files} files, {', '.join(parts[:-1])} and {parts[-1]}; {ask}"
    if tally.added:
        return f"I added {what}; {ask}"
    if tally.already:
        return f"{what.capitalize()} {_were(tally.files)} already in this knowledge base, so nothing changed; {ask}"
    if tally.not_added:
        return f"I couldn't add {what} (my reply above says why); {ask}"
    return unread_types(tally.files, where)


def only_links(question: str) -> bool:
    """A question that is links and nothing else: the bot reads no link, so searching its letters would
    quote whatever shares a word of the address. Links listed ("https://a and https://b", one a line, as
    bullets or numbered, comma-separated, as Markdown links with labels) are links and nothing else too."""
    text = LABELLED_LINK.sub(" https://x ", MENTION.sub("", question))
    if not LINK.search(text):
        return False
    return not re.search(r"\w", LINK_JOINERS.sub(" ", LINK.sub(" ", text)))
