"""Adding files: the build queue, download with a size cap, and one progress message per request.

The engine already serialises builds within a knowledge base; this layer adds what only the bot knows:
a cap on builds running at once across all channels, a bound on files waiting per channel, a progress
message edited at most once a second, and the fall-back to a plain channel message once the
interaction token (15 minutes) has expired or Discord says it is gone (10062).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import urllib.parse
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import discord

from raptor_engine.errors import IngestError, RaptorError, storage_error
from raptor_engine.ingest.load import safe_filename
from raptor_engine.types import Progress

from .render import CONTENT_LIMIT, inert, truncate
from .uploads import Source, UploadLog

log = logging.getLogger(__name__)

TOKEN_LIFETIME_SECONDS = 14 * 60 + 30  # Discord's interaction tokens last 15 minutes; keep a margin
EXPIRED_CODES = {10062, 10015, 50027}  # unknown interaction, unknown webhook, invalid webhook token
MAX_WAITING_PER_CHANNEL = 10
MIN_EDIT_INTERVAL_SECONDS = 1.0


class ShuttingDown(RaptorError):
    """The bot is stopping before the file's turn. A `kept` file is on record: the next start adds it."""

    def __init__(self, kept: bool):
        super().__init__(
            "waits: the bot is restarting and adds it when it is back."
            if kept
            else "The bot restarted before this file's turn; please add it again."
        )
        self.kept = kept


def as_told(error: Exception) -> Exception:
    """The error as its requester is told it: a full or read-only disk becomes its one sentence."""
    if isinstance(error, RaptorError):
        return error
    return storage_error(error) or error


def is_expired_token_error(error: BaseException) -> bool:
    return isinstance(error, discord.HTTPException) and error.code in EXPIRED_CODES


# ---------------------------------------------------------------------------------------------- one message


@dataclass(frozen=True)
class Shown:
    """Where a status message is, so a restarted bot can close it: its id and, for an interaction's
    response (which only its interaction token may edit), that token and when it stops working."""

    message_id: int
    token: str = ""
    until: float = 0.0  # wall-clock time (time.time()) after which the token is refused


class StatusMessage:
    """One message that shows a request's state, edited in place.

    Starts as the interaction's (deferred) response; when the token expires, or Discord reports it
    gone, it continues as a normal channel message that names the requester (without pinging).
    """

    def __init__(
        self,
        channel: discord.abc.Messageable | None,
        *,
        interaction: discord.Interaction | None = None,
        reply_to: discord.Message | None = None,
        requester_id: int | None = None,
        token_lifetime: float = TOKEN_LIFETIME_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.channel = channel
        self.interaction = interaction
        self.reply_to = reply_to
        self.requester_id = requester_id
        self.token_lifetime = token_lifetime
        self.clock = clock
        self.started = clock()
        self.token_expired = interaction is None
        self.message: discord.Message | None = None
        self.shown: Shown | None = None
        self.on_shown: Callable[[Shown], Awaitable[None]] | None = None  # told each time `shown` changes

    def token_usable(self) -> bool:
        return not self.token_expired and self.clock() - self.started < self.token_lifetime

    async def show(self, text: str) -> None:
        """Edit the message to `text`; never raises (a status that cannot be shown is only logged)."""
        text = truncate(text, CONTENT_LIMIT)
        if self.token_usable():
            assert self.interaction is not None
            try:
                message = await self.interaction.edit_original_response(content=text)
                left = self.token_lifetime - (self.clock() - self.started)
                await self._note(Shown(message.id, self.interaction.token, time.time() + left))
                return
            except discord.HTTPException as error:
                if not is_expired_token_error(error):
                    log.warning("could not edit the interaction response: %s", error)
                    return
                log.info("interaction token expired (%s); continuing in a channel message", error.code)
                self.token_expired = True
        elif self.interaction is not None and not self.token_expired:
            log.info(
                "interaction token older than %.0f s; continuing in a channel message", self.token_lifetime
            )
            self.token_expired = True
        await self._show_in_channel(text)

    async def _show_in_channel(self, text: str) -> None:
        if self.channel is None:
            log.warning("no channel to show a status in: %s", text[:120])
            return
        if self.requester_id is not None and self.reply_to is None:
            text = truncate(f"<@{self.requester_id}> {text}", CONTENT_LIMIT)
        try:
            if self.message is None:
                if self.reply_to is not None:
                    self.message = await self.reply_to.reply(text, mention_author=False)
                else:
                    self.message = await self.channel.send(text)
            else:
                await self.message.edit(content=text)
        except discord.HTTPException as error:
            log.warning("could not post a status message in the channel: %s", error)
            return
        await self._note(Shown(self.message.id))

    async def _note(self, shown: Shown) -> None:
        """Remember where the message is now, and tell `on_shown` when that changed (a new message, or
        the channel message that continues an interaction's response)."""
        old = self.shown
        if old is not None and (shown.message_id, shown.token) == (old.message_id, old.token):
            return
        self.shown = shown
        if self.on_shown is not None:
            try:
                await self.on_shown(shown)
            except Exception:
                log.exception("could not record where status message %s is", shown.message_id)


class ThrottledEditor:
    """Shows the latest text at most once per `interval`; intermediate texts are dropped, never queued.

    An async context manager: leaving it before `finish` (the work it shows was cancelled by a stopping
    bot, or failed) stops its task (`close`), which would otherwise edit on through a closed session."""

    def __init__(
        self,
        show: Callable[[str], Awaitable[None]],
        interval: float = MIN_EDIT_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ):
        self._show = show
        self.interval = interval
        self.clock = clock
        self.sleep = sleep
        self._latest: str | None = None
        self._shown: str | None = None
        self._last_at: float | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._finished = False
        self._showing = False  # an edit (or the first send) is on its way to Discord

    def request(self, text: str) -> None:
        """Ask for `text` to be shown soon (call on the event loop); ignored once `finish` has begun."""
        if self._finished:
            return
        self._latest = text
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _wait_for_slot(self) -> None:
        if self._last_at is not None:
            remaining = self._last_at + self.interval - self.clock()
            if remaining > 0:
                await self.sleep(remaining)

    async def _emit(self, text: str) -> None:
        self._last_at = self.clock()
        self._shown = text
        await self._show(text)

    async def _run(self) -> None:
        while not self._finished:
            await self._wake.wait()
            self._wake.clear()
            await self._wait_for_slot()
            text = self._latest
            if text is not None and text != self._shown:
                self._showing = True
                try:
                    await self._emit(text)
                finally:
                    self._showing = False

    async def finish(self, text: str) -> None:
        """Stop the updates and show `text` last, still respecting the interval.

        An edit already on its way is let through rather than cancelled: cut off, the first message
        of a channel fall-back could be posted twice, or an edit land after the final text."""
        self._finished = True
        task = self._task
        if task is not None and not task.done():
            if not self._showing:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._wait_for_slot()
        await self._emit(text)

    async def close(self) -> None:
        """Stop the updates without a last text: the task is cancelled, an edit on its way too (nothing is
        left to show it to), and awaited, so no task is left to fail once the bot's session is closed."""
        self._finished = True
        task = self._task
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():  # the caller itself is being cancelled: let that through
                raise
        except Exception:
            log.exception("a status message's updates failed")

    async def __aenter__(self) -> ThrottledEditor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def thread_safe(
    loop: asyncio.AbstractEventLoop, fn: Callable[[Progress], None]
) -> Callable[[Progress], None]:
    """Wrap a loop-side callback so the engine may call it from a worker thread."""

    def call(progress: Progress) -> None:
        try:
            loop.call_soon_threadsafe(fn, progress)
        except RuntimeError:  # loop closed during shutdown; the report is simply dropped
            pass

    return call


# ---------------------------------------------------------------------------------------------- the queue


class Promised:
    """Files a request accepted that have not reached `BuildJobs.run` yet (the command's deferral, the
    upload log's write, a batch's later files): counted as waiting from the moment they are accepted, so a
    question asked meanwhile reads that the first document is on its way and the per-channel waiting limit
    counts every file of every batch. A context manager; `hand_over` as each file enters `run`."""

    def __init__(self, counter: Counter[str], kb: str, files: int):
        self._counter = counter
        self.kb = kb
        self.left = files
        counter[kb] += files

    def hand_over(self) -> None:
        """One file goes to `run`, which counts it from now on."""
        if self.left > 0:
            self.left -= 1
            self._drop(1)

    def release(self) -> None:
        """The request ended (or failed before its files ran): whatever it still promised is dropped."""
        self._drop(self.left)
        self.left = 0

    def _drop(self, files: int) -> None:
        self._counter[self.kb] -= files
        if self._counter[self.kb] <= 0:
            del self._counter[self.kb]

    def __enter__(self) -> Promised:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


@dataclass
class QueueState:
    running: dict[str, str]  # kb -> file being built
    waiting: dict[str, int]  # kb -> files waiting
    limit: int


class BuildJobs:
    """Runs ingests: one at a time per channel (queued), at most `max_concurrent` across the bot."""

    def __init__(
        self,
        engine: Any,
        max_concurrent: int,
        max_waiting: int = MAX_WAITING_PER_CHANNEL,
        uploads: UploadLog | None = None,
    ):
        self.engine = engine
        self.uploads = uploads  # the durable record of each upload (bot/uploads.py); None keeps none
        self.max_concurrent = max(1, max_concurrent)
        self.max_waiting = max_waiting
        self._slots = asyncio.Semaphore(self.max_concurrent)
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: Counter[str] = Counter()
        self._promised: Counter[str] = Counter()  # accepted by a request, not yet in `run` (Promised)
        self._running: dict[str, str] = {}
        self._requests = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.closing = False
        self._stopping = asyncio.Event()  # set with `closing`: downloads in flight give up
        self._deletions: Counter[str] = Counter()  # how often each knowledge base was deleted (its channel went)

    def state(self) -> QueueState:
        waiting = self._waiting + self._promised  # a batch's later files too (a Counter sum keeps counts > 0)
        return QueueState(dict(self._running), dict(waiting), self.max_concurrent)

    def pending(self, kb: str) -> int:
        return self._waiting[kb] + self._promised[kb] + (1 if kb in self._running else 0)

    def promise(self, kb: str, files: int) -> Promised:
        """Count `files` a request accepted as waiting until each enters `run` (take it with no await
        between `refusal` and this call, so two requests cannot both pass the limit)."""
        return Promised(self._promised, kb, files)

    def refusal(self, kb: str, files: int) -> str | None:
        """Why new files cannot be queued now, or None when they can."""
        if self.closing:
            return "The bot is restarting; please add the file again in a minute."
        waiting = self._waiting[kb] + self._promised[kb]
        if waiting + files > self.max_waiting:
            return (
                f"This channel already has {waiting} file(s) waiting to be added "
                f"(limit {self.max_waiting}); try again when they are done."
            )
        return None

    def _busy(self) -> int:
        return sum(self._waiting.values()) + len(self._running) + self._requests

    @contextlib.asynccontextmanager
    async def track(self) -> AsyncIterator[None]:
        """Mark a whole request as in flight for `drain`: an add (its builds and final status edit), or
        an answer (a stopping bot ends it early, `Engine.stop_answers`, and waits for its last edit)."""
        self._requests += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._requests -= 1
            if self._busy() == 0:
                self._idle.set()

    async def accept(
        self, kb: str, sources: list[Source], added_by: str, origin: tuple[int | None, int | None]
    ) -> list[int | None]:
        """Record accepted files as waiting before they wait for their turn, so a bot killed meanwhile
        fetches them again on restart; one id per file (None: no record kept).

        A log that cannot be written does not refuse the files: they are built without a record."""
        if self.uploads is None:
            return [None] * len(sources)
        try:
            return list(await asyncio.to_thread(self.uploads.accept, kb, sources, added_by, *origin))
        except Exception:
            log.exception("could not record %d upload(s) for %s; building them unrecorded", len(sources), kb)
            return [None] * len(sources)

    async def run(
        self,
        kb: str,
        filename: str,
        fetch: Callable[[], Awaitable[bytes]],
        added_by: str,
        progress: Callable[[Progress], None],
        on_wait: Callable[[str], None],
        record: int | None = None,
        downloaded: bool = False,
        deletions: int | None = None,
    ) -> Any:
        """Queue, then download and ingest one file; returns the engine's IngestResult or raises.

        `record` is the upload's row in the log (from `accept`, or a resumed one); `downloaded` says the
        row already holds the bytes, else they are stored there once fetched. Any failure (download,
        storing the bytes on a full disk, the build) records it failed with the reason its requester is
        told; a bot stopping before its turn leaves it waiting for the next start.
        `deletions` is `deletion_count(kb)` when the file was accepted (default: now): a file accepted
        before its knowledge base was deleted is refused, not built into a new one."""
        lock = self._locks.setdefault(kb, asyncio.Lock())
        accepted = self._deletions[kb] if deletions is None else deletions
        self._waiting[kb] += 1
        self._idle.clear()
        started = False
        try:
            if lock.locked():
                on_wait(
                    f"waiting: another file is being added to this channel ({display_name(self._running.get(kb, '…'))})"
                )
            async with lock:
                if self._deletions[kb] != accepted:
                    gone = RaptorError("its channel was deleted.")
                    await self._record_outcome(record, "failed", str(gone))
                    raise gone
                if self._slots.locked():
                    on_wait(
                        f"waiting for a build slot ({len(self._running)} builds running, limit {self.max_concurrent})"
                    )
                async with self._slots:
                    if self.closing:
                        raise ShuttingDown(kept=record is not None)
                    self._waiting[kb] -= 1
                    started = True
                    self._running[kb] = filename
                    try:
                        data = await self._fetch_unless_stopping(fetch, record)
                        if not downloaded:
                            await self._store(record, data)
                        loop = asyncio.get_running_loop()
                        return await self._ingest(
                            record, kb, filename, data, added_by, thread_safe(loop, progress)
                        )
                    except ShuttingDown:
                        raise  # the record stays waiting: the next start downloads it again
                    except Exception as error:
                        told = as_told(error)
                        await self._record_outcome(record, "failed", str(told))
                        if told is error:
                            raise
                        raise told from error
                    finally:
                        self._running.pop(kb, None)
        finally:
            if not started:
                self._waiting[kb] -= 1
            if self._waiting[kb] <= 0:
                del self._waiting[kb]
            if self._busy() == 0:
                self._idle.set()

    def deletion_count(self, kb: str) -> int:
        return self._deletions[kb]

    @contextlib.asynccontextmanager
    async def withdrawn(self, kb: str) -> AsyncIterator[None]:
        """Hold a knowledge base while it is deleted: files accepted before are refused (and recorded
        so), and the block runs once its running build has committed, with no build of it starting
        before the block ends; so no build brings a deleted channel's knowledge base back."""
        self._deletions[kb] += 1
        async with self._locks.setdefault(kb, asyncio.Lock()):
            yield

    async def _fetch_unless_stopping(self, fetch: Callable[[], Awaitable[bytes]], record: int | None) -> bytes:
        """The file's bytes, unless the bot starts stopping first: a download from a slow or stalled CDN
        must not hold the stop up (a build may, up to the grace period: its work would be lost). The
        upload stays on record as waiting, so the next start downloads it again."""
        fetching = asyncio.ensure_future(fetch())
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({fetching, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not fetching.done():  # the bot is stopping, or this wait itself was cancelled
                fetching.cancel()
        if fetching.done():
            return fetching.result()
        log.info("download given up: the bot is stopping (upload %s stays waiting)", record)
        raise ShuttingDown(kept=record is not None)

    async def note_shown(self, records: list[int | None], shown: Shown) -> None:
        """Record where these uploads' status message is, for a restarted bot to close it."""
        ids = [record for record in records if record is not None]
        if self.uploads is not None and ids:
            await asyncio.to_thread(self.uploads.shown_at, ids, shown.message_id, shown.token, shown.until)

    async def _store(self, record: int | None, data: bytes) -> None:
        if self.uploads is not None and record is not None:
            await asyncio.to_thread(self.uploads.downloaded, record, data)

    async def _mark(self, record: int | None, status: str, error: str = "") -> None:
        if self.uploads is not None and record is not None:
            await asyncio.to_thread(self.uploads.mark, record, status, error)

    async def _record_outcome(self, record: int | None, status: str, told: str = "") -> None:
        """Record what the requester is told (done, or failed with the reason): a record left
        unfinished would be built at the next start after all. A record that cannot be written (the
        disk full even after the log's reserve) is logged: the outcome stands."""
        try:
            await self._mark(record, status, told)
        except Exception:
            log.exception("could not record upload %s as %s (%s)", record, status, told)

    async def _ingest(
        self,
        record: int | None,
        kb: str,
        filename: str,
        data: bytes,
        added_by: str,
        progress: Callable[[Progress], None],
    ) -> Any:
        """The engine's ingest, with the upload's record moved to running (its starts counted), then done
        (`run` records a failure). A build cut short by the bot stopping stays running, so the next start
        builds it again."""
        if self.uploads is not None and record is not None:
            await asyncio.to_thread(self.uploads.begin, record)
        result = await self.engine.ingest(kb, filename, data, added_by=added_by, progress=progress)
        await self._record_outcome(record, "done")
        return result

    async def drain(self, timeout: float | None) -> bool:
        """Refuse new work and wait for running builds to finish; True when all did within `timeout`."""
        self.closing = True
        self._stopping.set()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except TimeoutError:
            return False


# ---------------------------------------------------------------------------------------------- download


# Where Discord serves attachments (over https): an attachment's `url` is cdn.discordapp.com's; its
# `proxy_url` media.discordapp.net's.
DISCORD_CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def from_discord(url: str, rest_base: str | None = None) -> bool:
    """Whether `url` is an attachment link the bot may fetch: Discord's CDN over https, or the origin of the
    REST API the bot talks to (`discord.http.Route.BASE`: Discord's, or RAPTOR_DISCORD_API_BASE's proxy,
    or the tests' fake Discord, which serves the attachments it hands out). Nothing else: the link comes
    from a gateway event or from the upload log (uploads.db) a restart resumes, and a link to
    127.0.0.1 or a machine of the bot's network would make the bot fetch it and store what it answers."""
    try:
        scheme, host, port = _origin(url)
        if urllib.parse.urlsplit(url).username is not None:
            return False
        if scheme == "https" and host in DISCORD_CDN_HOSTS and port == 443:
            return True
        return bool(host) and (scheme, host, port) == _origin(rest_base or discord.http.Route.BASE)
    except ValueError:  # a port that is no number, a malformed address
        return False


async def download(
    session: aiohttp.ClientSession, url: str, name: str, max_bytes: int, rest_base: str | None = None
) -> bytes:
    """An attachment's bytes from Discord's CDN, read once; stops reading past `max_bytes` (the
    declared size may lie). Also fetches a resumed upload again, whose link may have expired. Only a link of
    Discord's (`from_discord`) is fetched, and a redirect is not followed (Discord's CDN answers with the
    file; a redirect could lead anywhere)."""
    if not from_discord(url, rest_base):
        log.warning("not downloading %r: its link %r is not Discord's", name, url[:300])
        raise IngestError(name, "has a link that is not Discord's, so it was not downloaded; post it again.")
    try:
        async with session.get(url, allow_redirects=False) as response:
            if response.status != 200:
                raise IngestError(
                    name, f"could not be downloaded from Discord (HTTP {response.status}); post it again."
                )
            data = bytearray()
            async for block in response.content.iter_chunked(64 * 1024):
                data.extend(block)
                if len(data) > max_bytes:
                    raise IngestError(name, f"is larger than the {max_bytes / 1048576:.1f} MB limit.")
            return bytes(data)
    except (aiohttp.ClientError, TimeoutError) as error:  # TimeoutError: the session's total timeout
        log.warning("download of %r failed: %s", name, error)
        raise IngestError(name, "could not be downloaded from Discord; post it again.") from error


def display_name(filename: str) -> str:
    """A file name as status lines show it: as the store keeps it (one line, no control, invisible or
    direction-changing character, no folders), shortened, then inert (no markdown, mention or link)."""
    try:
        shown = safe_filename(filename)
    except IngestError as error:  # no usable name at all: the engine's word for it
        shown = error.filename
    return inert(truncate(shown, 120))
