"""The bot's own tables in real SQLite: what must survive a restart, what deleting a channel removes, and
that each server's rows live in that server's store file (leaving it deletes one directory)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot import state as state_module
from bot.state import BotState, MessageImport, PostedFile, ThreadRecord
from raptor_engine import Settings
from raptor_engine.storage.spaces import Spaces
from raptor_engine.types import ContextNode, Turn

KB = "guild-1-channel-2"


def node(i: int) -> ContextNode:
    return ContextNode(
        node_id=i,
        layer=i % 2,
        document="a.md",
        score=0.5,
        text=f"text {i}",
        tokens=3,
        leaf_count=1,
        page=2,
        heading=("H",),
    )


def open_state(data: Path, **settings: object) -> tuple[Spaces, BotState]:
    spaces = Spaces(Settings(data_dir=data, **settings))
    return spaces, BotState(spaces)


def bot_rows(db_path: Path) -> dict[str, int]:
    """Rows in each bot_* table of one SQLite file (none: the file has no bot tables)."""
    conn = sqlite3.connect(db_path)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'bot\\_%' ESCAPE '\\'"
            )
        ]
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    finally:
        conn.close()


async def test_threads_turns_settings_and_answers_survive_a_restart(tmp_path):
    spaces, first = open_state(tmp_path)
    await first.add_thread(ThreadRecord(55, KB, 1, 2), opened_by="alice")
    await first.add_turns(1, 55, [Turn("user", "q1"), Turn("assistant", "a1")])
    await first.set_autoingest(KB, 1, 2, True, "alice")
    await first.set_manager_role(1, 77, "alice")
    answer_id = await first.save_answer(KB, "q1", [node(1), node(2)], 6, 2000, cited=[1, 2], matched=[2])
    first.close()
    spaces.close()

    spaces, again = open_state(tmp_path)
    assert await again.thread(1, 55) == ThreadRecord(55, KB, 1, 2)
    assert await again.history(1, 55) == [Turn("user", "q1"), Turn("assistant", "a1")]
    assert await again.autoingest_enabled(KB)
    assert not await again.autoingest_enabled("guild-1-channel-3")
    assert await again.manager_role_id(1) == 77
    stored = await again.answer(1, answer_id)
    assert stored is not None and stored.nodes == [node(1), node(2)] and stored.budget == 2000
    assert (stored.cited, stored.matched) == ([1, 2], [2])
    assert await again.answer(None, answer_id) is None  # no server, no answers
    await again.set_manager_role(1, None, "alice")
    assert await again.manager_role_id(1) is None
    again.close()
    spaces.close()


async def test_history_is_bounded_in_order_and_keeps_the_opening_exchange(tmp_path):
    spaces, state = open_state(tmp_path)
    await state.add_turns(1, 9, [Turn("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(30)])
    history = await state.history(1, 9)
    recent = [f"m{i}" for i in range(30 - state_module.MAX_HISTORY_TURNS + 2, 30)]
    assert [t.content for t in history] == ["m0", "m1", *recent]
    assert [t.content for t in await state.history(1, 9, limit=2)] == ["m28", "m29"]
    await state.add_turns(1, 8, [Turn("user", "q"), Turn("assistant", "a")])
    assert [t.content for t in await state.history(1, 8)] == ["q", "a"]  # the opening is not repeated
    spaces.close()


async def test_deleting_a_knowledge_base_removes_only_its_records(tmp_path):
    spaces, state = open_state(tmp_path)
    for thread, kb in ((1, "guild-1-channel-2"), (2, "guild-1-channel-3")):
        await state.add_thread(ThreadRecord(thread, kb, 1, int(kb[-1])), opened_by="a")
        await state.add_turns(1, thread, [Turn("user", "q")])
        await state.save_answer(kb, "q", [node(1)], 3, 10)
        await state.set_autoingest(kb, 1, int(kb[-1]), True, "a")
    await state.delete_kb("guild-1-channel-2")
    assert await state.thread(1, 1) is None and await state.history(1, 1) == []
    assert await state.count("bot_answers", guild_id=1, kb="guild-1-channel-2") == 0
    assert not await state.autoingest_enabled("guild-1-channel-2")
    assert await state.thread(1, 2) is not None
    assert await state.count("bot_answers", guild_id=1, kb="guild-1-channel-3") == 1
    await state.forget_thread(1, 2)
    assert await state.thread(1, 2) is None
    spaces.close()


async def test_old_answer_contexts_are_pruned(tmp_path, monkeypatch):
    monkeypatch.setattr(state_module, "MAX_ANSWERS_PER_KB", 3)
    spaces, state = open_state(tmp_path)
    ids = [await state.save_answer(KB, f"q{i}", [node(i)], 3, 10) for i in range(6)]
    assert await state.count("bot_answers", guild_id=1, kb=KB) == 3
    assert await state.answer(1, ids[0]) is None and (await state.answer(1, ids[-1])).question == "q5"
    spaces.close()


async def fill_guild(state: BotState, guild: int) -> None:
    kb = f"guild-{guild}-channel-{guild + 1}"
    await state.set_autoingest(kb, guild, guild + 1, True, "a")
    await state.set_manager_role(guild, 500 + guild, "a")
    await state.add_thread(ThreadRecord(guild * 10, kb, guild, guild + 1), opened_by="a")
    await state.add_turns(guild, guild * 10, [Turn("user", f"q{guild}"), Turn("assistant", f"a{guild}")])
    await state.save_answer(kb, f"q{guild}", [node(guild)], 3, 10)
    await state.set_sync(kb, guild, guild + 1, True, "a")
    await state.forget_me(guild, 900 + guild)
    await state.start_import(MessageImport(0, kb, guild, guild + 1, guild + 1, 1, "a", 100, None, "running"))
    await state.add_posted_file(PostedFile(kb, guild + 1, guild * 100, guild * 100 + 1, "ab" * 32, 900))
    await state.note_question(guild, guild * 10, guild * 100 + 2)  # a question not yet answered


async def test_each_server_keeps_its_rows_in_its_own_file_and_leaving_one_deletes_its_directory(tmp_path):
    spaces, state = open_state(tmp_path)
    for guild in (7, 8):
        await fill_guild(state, guild)
    every_table = {
        "bot_channel_settings": 1,
        "bot_guild_settings": 1,
        "bot_threads": 1,
        "bot_turns": 2,
        "bot_answers": 1,
        "bot_message_sync": 1,
        "bot_forget_me": 1,
        "bot_message_imports": 1,
        "bot_posted_files": 1,
        "bot_removals": 0,
        "bot_questions": 1,
    }
    for guild in (7, 8):
        assert bot_rows(tmp_path / "guilds" / str(guild) / "raptor.db") == every_table
    assert bot_rows(tmp_path / "raptor.db") == {}  # the root file holds nothing of either server
    assert await state.history(8, 80) == [Turn("user", "q8"), Turn("assistant", "a8")]
    assert await state.thread(7, 80) is None  # a thread is looked for in its own server's file only

    await state.delete_guild(7)  # what on_guild_remove does before deleting the store
    assert bot_rows(tmp_path / "guilds" / "7" / "raptor.db") == dict.fromkeys(every_table, 0)
    assert spaces.delete("7")
    assert not (tmp_path / "guilds" / "7").exists()
    assert (
        await state.manager_role_id(7) is None and not (tmp_path / "guilds" / "7").exists()
    )  # reads make no store
    assert await state.manager_role_id(8) == 508 and await state.autoingest_enabled("guild-8-channel-9")
    spaces.close()


async def test_without_spaces_leaving_a_server_removes_its_rows_from_the_one_file(tmp_path):
    spaces, state = open_state(tmp_path, space_pattern="")
    for guild in (7, 8):
        await fill_guild(state, guild)
    await state.set_autoingest("guild-7-channel-99", 7, 99, True, "a")  # a channel with no knowledge base
    await state.delete_guild(7)
    assert not (tmp_path / "guilds").exists()
    assert bot_rows(tmp_path / "raptor.db") == {
        "bot_channel_settings": 1,
        "bot_guild_settings": 1,
        "bot_threads": 1,
        "bot_turns": 2,
        "bot_answers": 1,
        "bot_message_sync": 1,
        "bot_forget_me": 1,
        "bot_message_imports": 1,
        "bot_posted_files": 1,
        "bot_removals": 0,
        "bot_questions": 1,
    }
    assert await state.manager_role_id(8) == 508 and await state.history(8, 80)
    spaces.close()


async def test_a_malformed_posted_ids_is_read_as_none_and_deletions_still_work(tmp_path, caplog):
    """A store from elsewhere may hold anything in `posted_ids`: such a turn is read as having no messages
    (one log line), and the questions around it are still forgotten when deleted."""
    spaces, state = open_state(tmp_path)
    await state.add_thread(ThreadRecord(55, KB, 1, 2), opened_by="alice")
    await state.add_turns(1, 55, [Turn("user", "q1"), Turn("assistant", "a1")], posted=[[101], [102]])
    await state.add_turns(1, 55, [Turn("user", "q2"), Turn("assistant", "a2")], posted=[[201], [202]])
    await state.add_turns(1, 55, [Turn("user", "q3"), Turn("assistant", "a3")], posted=[[301], [302]])
    conn = sqlite3.connect(tmp_path / "guilds" / "1" / "raptor.db")
    with conn:
        for bad, content in (("{not json", "q1"), ('["201"]', "a1"), ('{"a": 1}', "a2"), ("[[1]]", "a3")):
            conn.execute("update bot_turns set posted_ids = ? where content = ?", [bad, content])
    conn.close()
    assert await state.forget_questions(1, 55, {201}) == []  # q2's answer's messages were malformed
    assert [t.content for t in await state.history(1, 55)] == ["q1", "a1", "q3", "a3"]
    assert await state.forget_questions(1, 55, {101}) == []  # q1's own was malformed: nothing matches it
    assert caplog.text.count("is not a list of message ids") == 2  # one line per call
    assert await state.reply_history(1, 55, 301) is not None and await state.reply_history(1, 55, 999) is None
    exchange = await state.asked_exchange(1, 55, 301)
    assert exchange is not None and exchange.answer_message_ids == []
    spaces.close()
