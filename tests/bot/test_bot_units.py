"""Pure parts of the bot: knowledge-base names, permissions, cooldown, the throttled progress editor."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import discord

from bot.adding import close_stale_statuses, stale_text
from bot.jobs import ThrottledEditor
from bot.kb import guild_prefix, kb_name, parse_kb_name
from bot.permissions import Cooldown, can_manage, cooldown_text, has_manager_role
from bot.uploads import Upload
from raptor_engine.types import Progress


def test_kb_names_round_trip_and_carry_the_guild():
    name = kb_name(300, 400)
    assert name == "guild-300-channel-400"
    assert parse_kb_name(name) == (300, 400)
    assert parse_kb_name("something-else") is None
    assert name.startswith(guild_prefix(300)) and not name.startswith(guild_prefix(30))


def role(rid: int, name: str) -> SimpleNamespace:
    return SimpleNamespace(id=rid, name=name)


def test_manage_messages_or_a_manager_role_may_manage():
    nobody = discord.Permissions.none()
    member = SimpleNamespace(roles=[role(1, "@everyone"), role(7, "KB Managers")])
    assert can_manage(discord.Permissions(manage_messages=True), SimpleNamespace(roles=[]), "", None)
    assert can_manage(discord.Permissions(administrator=True), SimpleNamespace(roles=[]), "", None)
    assert not can_manage(nobody, member, "", None)
    assert can_manage(nobody, member, "kb managers", None)  # by name, case-insensitive
    assert can_manage(nobody, member, "7", None)  # by id
    assert can_manage(nobody, member, "", 7)  # the guild's configured role
    assert not has_manager_role(member, "Admins", 8)


def test_cooldown_per_user():
    now = [100.0]
    cooldown = Cooldown(10, clock=lambda: now[0])
    assert cooldown.retry_after(1) == 0
    assert cooldown.retry_after(2) == 0  # another user is not affected
    now[0] = 104.0
    assert cooldown.retry_after(1) == 6.0
    assert cooldown_text(6.0) == "You're asking too quickly; try again in 6 s."
    now[0] = 110.5
    assert cooldown.retry_after(1) == 0
    assert Cooldown(0).retry_after(1) == 0


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_throttled_editor_shows_at_most_once_per_interval_and_the_latest_text():
    clock = [0.0]
    shown: list[tuple[float, str]] = []
    sleeps: list[float] = []
    gate = asyncio.Event()

    async def show(text: str) -> None:
        shown.append((clock[0], text))

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        await gate.wait()  # time passes only when the test says so
        gate.clear()
        clock[0] += seconds

    editor = ThrottledEditor(show, interval=1.0, clock=lambda: clock[0], sleep=sleep)
    editor.request("embed 1/10")
    await settle()
    assert shown == [(0.0, "embed 1/10")]  # the first update goes out at once
    clock[0] = 0.2
    for i in range(2, 9):
        editor.request(f"embed {i}/10")  # a burst while the interval has not passed
    await settle()
    assert sleeps == [0.8]  # waits out the rest of the second
    gate.set()
    await settle()
    assert shown[-1] == (1.0, "embed 8/10")  # intermediate texts dropped, latest shown
    assert len(shown) == 2
    clock[0] = 1.5
    finish = asyncio.create_task(editor.finish("done"))
    await settle()
    assert sleeps[-1] == 0.5  # even the final edit respects the interval
    gate.set()
    await asyncio.wait_for(finish, 5)
    assert shown[-1] == (2.0, "done")
    times = [t for t, _ in shown]
    assert all(b - a >= 1.0 for a, b in zip(times, times[1:], strict=False))


def test_a_file_stopped_by_its_build_limit_is_named_once_on_its_line():
    """The budget's sentence names the file; the line names it too: 'x was not added: x was not added'."""
    import pickle

    from bot.adding import failure_line
    from raptor_engine.ingest.budget import BuildBudget, BuildLimitError

    budget = BuildBudget("kestrel.md", seconds=60, memory_mb=512)
    for sentence in (budget.deadline_sentence(), budget.memory_sentence()):
        error = pickle.loads(pickle.dumps(BuildLimitError(sentence)))  # as it comes back from a worker
        line = failure_line("kestrel.md", error)
        assert line.count("was not added") == 1 and line.count("kestrel.md") == 1, line
        assert error.reason in line and str(error) == sentence


async def test_a_download_that_runs_past_the_sessions_timeout_asks_to_post_the_file_again():
    """aiohttp's total timeout raises TimeoutError, not ClientError: it must still be one sentence."""
    import aiohttp
    import pytest
    from aiohttp import web

    from bot.jobs import download
    from raptor_engine.errors import IngestError
    from tests.bot.local_http import server

    async def stall(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"partial")
        await asyncio.sleep(5)
        return response

    async with server({"/file": stall}) as (origin, _):
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=0.5)) as session:
            with pytest.raises(IngestError, match="could not be downloaded from Discord; post it again"):
                await download(session, f"{origin}/file", "slow.md", 10**6, origin)


def test_a_document_line_counts_in_words():
    """/kb list: '1 chunk · 1 layer' for a one-message thread, '1,200 chunks · 2 layers' otherwise."""
    from bot.commands import document_line

    one = SimpleNamespace(name="Ferry questions", size=61, chunks=1, layers=1, added_by="sync", added_at=None)
    assert " · 1 chunk · 1 layer · " in document_line(one)
    many = SimpleNamespace(name="kestrel.md", size=4000, chunks=1200, layers=2, added_by="alice", added_at=None)
    assert " · 1,200 chunks · 2 layers · " in document_line(many)


def test_an_added_files_line_says_what_was_skipped_when_it_was_read():
    """A subtitle file with damaged cues is added with the cues that parse: its line in Discord says how
    many were skipped (the engine's notices), and a file read whole says nothing more."""
    from bot.adding import result_line

    document = SimpleNamespace(name="meeting.srt")
    read_whole = SimpleNamespace(status="added", document=document, chunks=3, layers=2, nodes=5, seconds=1.0)
    assert result_line("meeting.srt", read_whole).endswith("5 nodes in 1.0 s.")
    damaged = SimpleNamespace(**vars(read_whole), notices=["3 cues skipped: their timing line could not be read"])
    assert result_line("meeting.srt", damaged).endswith(
        "5 nodes in 1.0 s. 3 cues skipped: their timing line could not be read."
    )


def test_a_status_message_a_restart_cut_short_keeps_its_outcomes_and_stops_spinning():
    cut = "<@100> Adding 3 file(s) to this channel's knowledge base…\n" + "\n".join(
        ["✅ **a.md** added: 4 chunks, 2 layers, 6 nodes in 0.2 s.", "⏳ **b.md**: cluster 0/240 · layer 1",
         "⏳ **c.txt** queued", "❌ **d.exe** has an unsupported file type (.exe)."]
    )  # fmt: skip
    assert stale_text(cut).split("\n") == [
        "<@100> ⏸️ The bot restarted before this finished; what was left is added in a new message below.",
        "✅ **a.md** added: 4 chunks, 2 layers, 6 nodes in 0.2 s.",
        "⏸️ **b.md** was interrupted by the restart.",
        "⏸️ **c.txt** was interrupted by the restart.",
        "❌ **d.exe** has an unsupported file type (.exe).",
    ]


def upload(uid: int, message_id: int, token: str = "", until: float = 0.0) -> Upload:
    return Upload(
        uid, "kb", f"f{uid}.md", "", None, "alice", 400, 100, "waiting", "u", 1, 0, message_id, token, until
    )


async def test_stale_status_messages_are_closed_once_each_through_the_channel_once_the_token_is_old():
    """Two uploads of one request share a message: it is edited once; an expired token is not used."""
    edits: list[tuple[int, str]] = []

    class Message:
        def __init__(self, mid: int):
            self.id, self.content = mid, f"Adding 2 file(s)…\n⏳ **f{mid}.md** queued"

        async def edit(self, content: str, **_: object) -> None:
            edits.append((self.id, content))

    async def fetch_message(mid: int) -> Message:
        return Message(mid)

    def no_webhook(token: str) -> discord.Webhook:
        raise AssertionError(f"an expired token was used: {token}")

    channel = SimpleNamespace(fetch_message=fetch_message)
    pending = [upload(1, 7, "old-token", 1.0), upload(2, 7, "old-token", 1.0), upload(3, 0)]
    await close_stale_statuses(pending, lambda cid: channel, no_webhook)
    assert edits == [(7, "⏸️ The bot restarted before this finished; what was left is added in a new message below.\n"
                          "⏸️ **f7.md** was interrupted by the restart.")]  # fmt: skip


def test_an_upload_waiting_for_another_process_says_why_in_its_status_line():
    waiting = Progress("wait", 0, 0, message="another upload to this knowledge base goes first")
    assert waiting.describe() == "waiting, another upload to this knowledge base goes first"
    assert Progress("embed", 40, 120).describe() == "embed 40/120"
    assert Progress("load", 0, 1, message="a.md").describe() == "load 0/1"
