"""The bot's own tables in real SQLite: what must survive a restart, and what deleting a channel removes."""

from __future__ import annotations

from bot import state as state_module
from bot.state import BotState, ThreadRecord
from raptor_engine.types import ContextNode, Turn


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


async def test_threads_turns_settings_and_answers_survive_a_restart(tmp_path):
    db = tmp_path / "raptor.db"
    first = BotState(db)
    await first.add_thread(ThreadRecord(55, "guild-1-channel-2", 1, 2), opened_by="alice")
    await first.add_turns(55, [Turn("user", "q1"), Turn("assistant", "a1")])
    await first.set_autoingest("guild-1-channel-2", 1, 2, True, "alice")
    await first.set_manager_role(1, 77, "alice")
    answer_id = await first.save_answer("guild-1-channel-2", "q1", [node(1), node(2)], 6, 2000)
    first.close()

    again = BotState(db)
    assert await again.thread(55) == ThreadRecord(55, "guild-1-channel-2", 1, 2)
    assert await again.history(55) == [Turn("user", "q1"), Turn("assistant", "a1")]
    assert await again.autoingest_enabled("guild-1-channel-2")
    assert not await again.autoingest_enabled("guild-1-channel-3")
    assert await again.manager_role_id(1) == 77
    stored = await again.answer(answer_id)
    assert stored is not None and stored.nodes == [node(1), node(2)] and stored.budget == 2000
    await again.set_manager_role(1, None, "alice")
    assert await again.manager_role_id(1) is None
    again.close()


async def test_history_is_bounded_and_in_order(tmp_path):
    state = BotState(tmp_path / "raptor.db")
    await state.add_turns(9, [Turn("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(30)])
    history = await state.history(9)
    assert [t.content for t in history] == [f"m{i}" for i in range(30 - state_module.MAX_HISTORY_TURNS, 30)]
    state.close()


async def test_deleting_a_knowledge_base_removes_only_its_records(tmp_path):
    state = BotState(tmp_path / "raptor.db")
    for thread, kb in ((1, "guild-1-channel-2"), (2, "guild-1-channel-3")):
        await state.add_thread(ThreadRecord(thread, kb, 1, int(kb[-1])), opened_by="a")
        await state.add_turns(thread, [Turn("user", "q")])
        await state.save_answer(kb, "q", [node(1)], 3, 10)
        await state.set_autoingest(kb, 1, int(kb[-1]), True, "a")
    await state.delete_kb("guild-1-channel-2")
    assert await state.thread(1) is None and await state.history(1) == []
    assert await state.count("bot_answers", kb="guild-1-channel-2") == 0
    assert not await state.autoingest_enabled("guild-1-channel-2")
    assert await state.thread(2) is not None and await state.count("bot_answers", kb="guild-1-channel-3") == 1
    await state.forget_thread(2)
    assert await state.thread(2) is None
    state.close()


async def test_old_answer_contexts_are_pruned(tmp_path, monkeypatch):
    monkeypatch.setattr(state_module, "MAX_ANSWERS_PER_KB", 3)
    state = BotState(tmp_path / "raptor.db")
    ids = [await state.save_answer("k", f"q{i}", [node(i)], 3, 10) for i in range(6)]
    assert await state.count("bot_answers", kb="k") == 3
    assert await state.answer(ids[0]) is None and (await state.answer(ids[-1])).question == "q5"
    state.close()
