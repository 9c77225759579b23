"""Adding files from /kb add, the 'Add to knowledge base' message command and auto-ingest.

Each attachment is checked by name and size before anything is downloaded; accepted ones are then
recorded (bot/uploads.py: a bot killed before building them fetches them again on restart), queued,
downloaded once and handed to the engine, while one status message shows every file's line.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import discord

from raptor_engine.errors import IngestError, RaptorError
from raptor_engine.ingest.budget import BuildLimitError
from raptor_engine.ingest.load import SUPPORTED_EXTENSIONS, check_upload
from raptor_engine.types import Progress, counted

from .jobs import Promised, Shown, ShuttingDown, StatusMessage, ThrottledEditor, display_name, download
from .posted import remember_posted, remember_resumed
from .render import human_size, human_time, inert
from .services import Services
from .uploads import Post, Source, Upload

log = logging.getLogger(__name__)

# What the requester of an unfinished upload reads after a restart: (while resuming, added, not added).
# A file whose build had started is built again; one still waiting its turn was never started.
RESUMED_BUILD = (
    "The bot restarted while this file was being added; adding it again…",
    "Done (the bot restarted while this file was being added, so it was built again).",
    "Done (the bot restarted while this file was being added, so it was tried again).",
)
PROBLEM = "❌"  # how a file's line that was not added starts
POST_GONE = (
    "was built and then removed: the message it was posted in was deleted, or edited to drop it, while the "
    "bot was down."
)
RESUMED_WAITING = (
    "The bot restarted before this file's turn came; adding it now…",
    "Done (the bot restarted before this file's turn came, so it was added once the bot was back).",
    "Done (the bot restarted before this file's turn came, so it was tried once the bot was back).",
)


@dataclass
class Tally:
    """What became of the files one message carried, for the sentence that answers a question asked
    beside them (bot/hints.py): each file counted once."""

    added: int = 0
    already: int = 0  # the same content was in the knowledge base: nothing changed
    not_added: int = 0  # refused (type, size, the channel's limit, /kb forget-me) or failed
    passed_over: int = 0  # auto-ingest adds no file of a type the engine does not read (images)

    @property
    def files(self) -> int:
        return self.added + self.already + self.not_added + self.passed_over


@dataclass
class FileLine:
    name: str
    text: str


def screen(
    attachments: list[discord.Attachment], max_bytes: int
) -> tuple[list[discord.Attachment], list[str]]:
    """Split attachments into accepted ones and refusal lines, from their metadata alone."""
    accepted, refused = [], []
    for attachment in attachments:
        try:
            check_upload(attachment.filename, attachment.size, max_bytes)
        except IngestError as error:
            log.info("refused %r (%d bytes): %s", attachment.filename, attachment.size, error.reason)
            refused.append(f"❌ **{display_name(error.filename)}** {inert(error.reason)}")
        else:
            accepted.append(attachment)
    return accepted, refused


def is_supported(filename: str) -> bool:
    """Whether auto-ingest should try a file at all (images and the like are passed over silently)."""
    dot = filename.rfind(".")
    return dot >= 0 and filename[dot:].lower() in SUPPORTED_EXTENSIONS


def result_line(name: str, result: Any) -> str:
    shown = display_name(name)
    if getattr(result, "status", "added") == "duplicate":
        stored = result.document.name
        # a renamed copy: the name /kb list shows it under
        known = "" if stored == name else f" as **{display_name(stored)}**"
        return f"↩️ **{shown}** is already in this knowledge base{known} (same content); nothing changed."
    seconds = getattr(result, "seconds", 0.0) or 0.0
    line = (
        f"✅ **{shown}** added: {counted(result.chunks, 'chunk')}, {counted(result.layers, 'layer')}, "
        f"{counted(result.nodes, 'node')} in {seconds:.1f} s."
    )
    return line + "".join(f" {notice[:1].upper()}{notice[1:]}." for notice in getattr(result, "notices", []))


def namesake_note(earlier: Any) -> str:
    """After a file added beside a document of its name (an earlier version): both answer, so say so."""
    return (
        f" An earlier **{display_name(earlier.name)}** (added {human_time(earlier.added_at)}) is still here too: "
        "/kb remove it if this one replaces it."
    )


class BatchStatus:
    """The lines of one request's status message, with the throttled editor that shows them.

    Every edit, the first included, goes through the editor (at most one a second). A file's outcome
    line is final: a progress report that arrives after it (the engine's last one is delivered on a
    later turn of the event loop) is dropped instead of putting a ⏳ line back."""

    def __init__(
        self, status: StatusMessage, header: str, names: list[str], refused: list[str], interval: float
    ):
        self.header = header
        self.lines = [FileLine(n, f"⏳ **{display_name(n)}** queued") for n in names]
        self.refused = refused
        self.concluded: set[int] = set()
        self.status = status
        self.editor = ThrottledEditor(status.show, interval=interval)
        self.origin = origin_of(status)

    async def record_where(self, services: Services, records: list[int | None]) -> None:
        """Keep where this status message is with the uploads' records, now and whenever it moves (to a
        channel message once the token expires): a bot killed before they finish closes it on restart."""

        async def note(shown: Shown) -> None:
            await services.jobs.note_shown(records, shown)

        self.status.on_shown = note
        if self.status.shown is not None:
            await note(self.status.shown)

    def render(self) -> str:
        """The header, then the problems (files refused from their metadata, then files whose build
        failed), then the other files' lines in the order given: a member sees what went wrong first."""
        failed = [line.text for line in self.lines if line.text.startswith(PROBLEM)]
        others = [line.text for line in self.lines if not line.text.startswith(PROBLEM)]
        return "\n".join([self.header, *self.refused, *failed, *others])

    def show(self) -> None:
        self.editor.request(self.render())

    def set(self, index: int, text: str) -> None:
        """A file's progress; ignored once the file has its outcome line."""
        if index in self.concluded:
            return
        self.lines[index].text = text
        self.show()

    def conclude(self, index: int, text: str) -> None:
        """A file's outcome (added, duplicate, refused): its line from now on."""
        self.lines[index].text = text
        self.concluded.add(index)
        self.show()

    def progress(self, index: int) -> Any:
        name = display_name(self.lines[index].name)

        def on_progress(progress: Progress) -> None:
            self.set(index, f"⏳ **{name}**: {progress.describe()}")

        return on_progress

    async def finish(self, header: str) -> None:
        self.header = header
        await self.editor.finish(self.render())

    async def __aenter__(self) -> BatchStatus:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Left before `finish` (a stopping bot cancelled the build): the editor's updates stop with it."""
        await self.editor.close()


async def add_files(
    services: Services,
    kb: str,
    attachments: list[discord.Attachment],
    refused: list[str],
    added_by: str,
    status: StatusMessage,
    posts: Mapping[int, Post] | None = None,
    promised: Promised | None = None,
) -> Tally:
    """Queue and ingest accepted attachments one after another; returns what became of them (`refused`
    counted as not added). An
    attachment posted in a message (`posts`, by attachment id) is recorded with it, in the upload's record
    too: deleting the message removes its document (bot/posted.py), even one a restarted bot built.
    `promised`: the files' count taken when the request was accepted (taken here when None)."""
    posts = posts or {}
    with promised or services.jobs.promise(kb, len(attachments)) as promise:
        names = [a.filename for a in attachments]
        header = f"Adding {counted(len(names), 'file')} to this channel's knowledge base…"
        batch = BatchStatus(status, header, names, refused, services.status_interval)
        async with services.jobs.track(), batch:
            batch.show()
            sources = [Source(a.filename, a.url, a.size, posts.get(a.id)) for a in attachments]
            deletions = services.jobs.deletion_count(kb)  # the files are refused if the channel goes meanwhile
            records = await services.jobs.accept(kb, sources, added_by, batch.origin)
            await batch.record_where(services, records)
            tally = Tally(not_added=len(refused))
            for index, (attachment, record) in enumerate(zip(attachments, records, strict=True)):
                promise.hand_over()  # `run` counts it before anything is awaited
                status = await _add_one(
                    services, kb, attachment, index, added_by, batch, record, deletions, posts.get(attachment.id)
                )
                tally.added += status == "added"
                tally.already += status == "duplicate"
                tally.not_added += status is None
            await batch.finish(done_header(tally))
            return tally


def done_header(tally: Tally) -> str:
    """The finished upload's first line, saying what became of every file sent: a bare "Done." only when
    each was added, "Already here: …" when each was a copy of a document here, "Nothing added: …" when
    none went in, else the counts ("Done: 2 files added and 1 not added."). A refused file (its type or
    size) is never under a header that reads as if all went in, nor a copy under one that reads as a
    failure."""
    if tally.added == tally.files:
        return "Done."
    if tally.already == tally.files:
        return f"Already here: {counted(tally.already, 'file')}, nothing changed."
    counts = [
        (tally.added, "added"), (tally.already, "already here"), (tally.not_added + tally.passed_over, "not added")
    ]
    # "1 file added and 2 already here": the first count names what is counted
    parts = [f"{counted(n, 'file') if not i else f'{n:,}'} {what}" for i, (n, what) in enumerate(c for c in counts if c[0])]
    listed = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    if tally.added:
        return f"Done: {listed}."
    if not tally.already:
        return f"Nothing added: {counted(tally.files, 'file')} could not be added."
    return f"Nothing added: {listed}."


def origin_of(status: StatusMessage) -> tuple[int | None, int | None]:
    """(channel id, requester id) of a request: where a restarted bot reports a build it resumes."""
    requester = status.requester_id
    if requester is None and status.reply_to is not None:
        requester = status.reply_to.author.id
    return getattr(status.channel, "id", None), requester


async def _add_one(
    services: Services,
    kb: str,
    attachment: discord.Attachment,
    index: int,
    added_by: str,
    batch: BatchStatus,
    record: int | None,
    deletions: int,
    post: Post | None,
) -> str | None:
    """Download and ingest one attachment, writing its outcome on its line; "added", "duplicate" (the
    same content was here), or None when it was not added."""
    fetch = fetcher(services, batch, index, Source(attachment.filename, attachment.url, attachment.size))
    result = await _build_one(
        services, kb, attachment.filename, fetch, index, added_by, batch, record=record, deletions=deletions
    )
    if result is not None and result.status == "added" and post is not None:
        _, gone = await remember_posted(services, kb, post, result.document.sha256)
        if gone is not None:  # the member took the post back while it was being added
            batch.conclude(index, f"🗑️ **{display_name(attachment.filename)}** was built and then removed: {gone}.")
            return None
    return result.status if result is not None else None


def fetcher(
    services: Services, batch: BatchStatus, index: int, source: Source
) -> Callable[[], Awaitable[bytes]]:
    """Downloads `source` when its turn comes, showing that on the file's line."""
    name = display_name(source.filename)

    async def fetch() -> bytes:
        batch.set(index, f"⏳ **{name}**: downloading {human_size(source.size)}")
        return await download(services.cdn, source.url, source.filename, services.settings.max_file_bytes)

    return fetch


async def _build_one(
    services: Services,
    kb: str,
    filename: str,
    fetch: Callable[[], Awaitable[bytes]],
    index: int,
    added_by: str,
    batch: BatchStatus,
    **job: Any,
) -> Any:
    """Queue and ingest one file through the build jobs, writing its outcome on its line; the engine's
    result (its status "added" or "duplicate"), or None when it failed or was refused."""
    name = display_name(filename)
    try:
        result = await services.jobs.run(
            kb,
            filename,
            fetch,
            added_by,
            batch.progress(index),
            lambda text: batch.set(index, f"⏳ **{name}**: {text}"),
            **job,
        )
    except RaptorError as error:
        log.info("adding %r to %s failed: %s", filename, kb, error)
        batch.conclude(index, failure_line(name, error))
        return None
    except Exception:
        log.exception("adding %r to %s failed unexpectedly", filename, kb)
        batch.conclude(
            index, f"❌ **{name}** was not added: an unexpected error (logged). Nothing was stored."
        )
        return None
    log.info("added %r to %s: %s (%s)", filename, kb, result.status, "; ".join(map(str, result.notes)))
    line = result_line(filename, result)
    if result.status == "added":
        line += "".join(namesake_note(doc) for doc in await services.call(services.engine.namesakes, kb, result.document))
    batch.conclude(index, line)
    return result


def failure_line(name: str, error: RaptorError) -> str:
    """A file's line when it was not added; one kept for the bot's next start says so instead."""
    if isinstance(error, ShuttingDown) and error.kept:
        return f"⏸️ **{name}** {inert(str(error))}"
    if isinstance(error, IngestError):
        return f"❌ **{name}** {inert(error.reason)} Nothing was stored."
    if isinstance(error, BuildLimitError):  # its sentence names the file too: say it once
        return f"❌ **{name}** was not added: {inert(error.reason)} Nothing was stored."
    return f"❌ **{name}** was not added: {inert(str(error))} Nothing was stored."


async def resume_uploads(
    services: Services,
    pending: list[Upload],
    channel_for: Callable[[int], Any],
    webhook_for: Callable[[str], discord.Webhook] | None = None,
) -> int:
    """Build again each upload a previous run accepted and did not finish (`pending`, read before the bot
    connects), in its channel, telling its requester; returns how many were resumed. They count as waiting
    from the first step, so a question asked meanwhile reads that its channel's file is on its way; then
    the status messages the previous run left showing ⏳ are closed. `channel_for` maps a channel id to a
    messageable, `webhook_for` an interaction token to the webhook that edits its response."""
    with contextlib.ExitStack() as held:
        promises = [held.enter_context(services.jobs.promise(upload.kb, 1)) for upload in pending]
        await close_stale_statuses(pending, channel_for, webhook_for)
        await asyncio.gather(
            *(_resume_one(services, upload, channel_for, promise) for upload, promise in zip(pending, promises, strict=True))
        )
    return len(pending)


STALE_HEADER = "⏸️ The bot restarted before this finished; what was left is added in a new message below."
_WORKING_LINE = re.compile(r"⏳ (\*\*.*?\*\*)")
_MENTION_PREFIX = re.compile(r"<@\d+> ")


def stale_text(content: str) -> str:
    """A status message a restart cut short, closed: its header says so and each file's ⏳ line (not
    finished) says it was interrupted; lines with an outcome (✅, ❌, ↩️) stay as they were."""
    first, *rest = content.split("\n")
    mention = _MENTION_PREFIX.match(first)
    lines = [(mention.group(0) if mention else "") + STALE_HEADER]
    for line in rest:
        working = _WORKING_LINE.match(line)
        lines.append(f"⏸️ {working.group(1)} was interrupted by the restart." if working else line)
    return "\n".join(lines)


async def close_stale_statuses(
    pending: list[Upload],
    channel_for: Callable[[int], Any],
    webhook_for: Callable[[str], discord.Webhook] | None,
) -> None:
    """Edit each status message of the unfinished uploads (one per request) with `stale_text`."""
    first_of: dict[int, Upload] = {}
    for upload in pending:
        if upload.status_message_id and upload.channel_id is not None:
            first_of.setdefault(upload.status_message_id, upload)
    await asyncio.gather(*(_close_stale(upload, channel_for, webhook_for) for upload in first_of.values()))


async def _close_stale(
    upload: Upload, channel_for: Callable[[int], Any], webhook_for: Callable[[str], discord.Webhook] | None
) -> None:
    """One stale status message: through the interaction's webhook while its token works (only it may
    edit an interaction's response), else as the bot's channel message. Best effort: a failure is logged."""
    message_id = upload.status_message_id
    try:
        if upload.status_token and upload.status_until > time.time() and webhook_for is not None:
            webhook = webhook_for(upload.status_token)
            message: Any = await webhook.fetch_message(message_id)
            edit = functools.partial(webhook.edit_message, message_id)
        else:
            message = await channel_for(upload.channel_id).fetch_message(message_id)
            edit = message.edit
        closed = stale_text(message.content)
        if closed != message.content:
            await edit(content=closed, allowed_mentions=discord.AllowedMentions.none())
            log.info("closed status message %s, which the restart cut short", message_id)
    except discord.HTTPException as error:
        log.info("could not close status message %s after the restart: %s", message_id, error)


async def _resume_one(
    services: Services, upload: Upload, channel_for: Callable[[int], Any], promise: Promised
) -> None:
    """Build one unfinished upload again in its channel, naming its requester; one that was still
    waiting is downloaded again first (its link may have expired: the requester is asked to post it)."""
    log.info("resuming the build of %r in %s (upload %d was %s)", upload.filename, upload.kb, upload.id, upload.status)
    channel = channel_for(upload.channel_id) if upload.channel_id is not None else None
    status = StatusMessage(channel, requester_id=upload.requester_id, token_lifetime=services.token_lifetime)
    resuming, added_text, not_added_text = RESUMED_BUILD if upload.status == "running" else RESUMED_WAITING
    batch = BatchStatus(status, resuming, [upload.filename], [], services.status_interval)
    async with services.jobs.track(), batch:
        batch.show()
        await batch.record_where(services, [upload.id])
        promise.hand_over()  # `run` counts it before anything is awaited
        result = await _build_one(
            services,
            upload.kb,
            upload.filename,
            resumed_fetch(services, batch, upload),
            0,
            upload.added_by,
            batch,
            record=upload.id,
            downloaded=upload.data is not None,
        )
        document = result.document if result is not None and result.status == "added" else None
        if document is not None and upload.post is not None:
            if not await remember_resumed(services, upload.kb, upload.post, document.sha256, channel_for):
                batch.conclude(0, f"🗑️ **{display_name(upload.filename)}** {POST_GONE}")
                document = None
        await batch.finish(added_text if document is not None else not_added_text)


def given_up(upload: Upload) -> Callable[[], Awaitable[bytes]]:
    """A fetch that fails with the sentence for an upload started too often: the record is marked failed
    (as for a failed download) and the requester reads why."""

    async def fetch() -> bytes:
        log.warning("giving up %r in %s: its build was started %d times", upload.filename, upload.kb, upload.attempts)
        raise RaptorError(
            f"Its build was started {upload.attempts} times and never finished, so it was given up; post the "
            "file again."
        )

    return fetch


def resumed_fetch(services: Services, batch: BatchStatus, upload: Upload) -> Callable[[], Awaitable[bytes]]:
    """The bytes the record kept, or a fresh download from the upload's link when it had none yet; for an
    upload whose build was started RAPTOR_BUILD_ATTEMPTS times already, the sentence that gives it up."""
    if upload.attempts >= services.settings.build_attempts:
        return given_up(upload)
    kept = upload.data
    if kept is None:
        return fetcher(services, batch, 0, Source(upload.filename, upload.url, upload.size))

    async def fetch() -> bytes:
        return kept

    return fetch
