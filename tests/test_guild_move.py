"""Moving a server's store between two data directories with `raptor guilds export` / `import`.

The moved server answers the same questions with the same text and citations, and keeps the bot's
settings, threads with their turns and saved answers (kept in the server's store); the other servers of
either directory are untouched; an archive is refused when it would overwrite a store or is damaged.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import tarfile

import pytest
from click.testing import CliRunner

from bot.state import BotState, ThreadRecord
from raptor_engine import Engine
from raptor_engine.types import Turn
from tests.sample_texts import BEEKEEPING, RAILWAY
from tests.unhurried import unhurried_settings

MOVED, STAYS = "guild-42-channel-1", "guild-7-channel-1"
QUESTIONS = ["When did the railway open?", "How do bees make honey?", "Who built the line?"]


def _answers(engine: Engine, kb: str) -> list[dict]:
    async def ask_all() -> list[dict]:
        out = []
        for question in QUESTIONS:
            answer = await engine.ask(kb, question)
            out.append({"text": answer.text, "citations": [c.to_dict() for c in answer.citations]})
        return out

    return asyncio.run(ask_all())


async def _write_bot_state(state: BotState) -> int:
    """What the bot keeps for the moved server: settings, a thread with turns, an answer's context."""
    await state.set_autoingest(MOVED, 42, 1, True, "alice")
    await state.set_manager_role(42, 4242, "alice")
    await state.add_thread(ThreadRecord(555, MOVED, 42, 1), opened_by="alice")
    await state.add_turns(
        42, 555, [Turn("user", "When did the railway open?"), Turn("assistant", "In 1840.")]
    )
    await state.set_autoingest(STAYS, 7, 1, True, "bob")
    return await state.save_answer(MOVED, "When did the railway open?", [], 0, 2000)


async def _read_bot_state(state: BotState, answer_id: int) -> tuple:
    stored = await state.answer(42, answer_id)
    return (
        await state.autoingest_enabled(MOVED),
        await state.manager_role_id(42),
        await state.thread(42, 555),
        await state.history(42, 555),
        stored and stored.question,
    )


BOT_STATE = (
    True,
    4242,
    ThreadRecord(555, MOVED, 42, 1),
    [Turn("user", "When did the railway open?"), Turn("assistant", "In 1840.")],
    "When did the railway open?",
)


def _raptor(*args: str) -> str:
    from raptor_engine.cli import cli

    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def two_directories(tmp_path, embedder):
    source, target = tmp_path / "a", tmp_path / "b"
    engine = Engine(unhurried_settings(data_dir=source), embedder=embedder)
    asyncio.run(engine.ingest(MOVED, "railway.txt", RAILWAY.encode()))
    asyncio.run(engine.ingest(MOVED, "bees.md", BEEKEEPING.encode()))
    asyncio.run(engine.ingest(STAYS, "bees.md", BEEKEEPING.encode()))
    before = _answers(engine, MOVED)
    before_bot = asyncio.run(_write_bot_state(BotState(engine.spaces)))
    engine.close()
    other = Engine(unhurried_settings(data_dir=target), embedder=embedder)
    asyncio.run(other.ingest("guild-9-channel-3", "railway.txt", RAILWAY.encode()))
    other.close()
    return source, target, (before, before_bot)


def test_a_moved_server_answers_the_same_questions_with_the_same_citations(
    two_directories, tmp_path, embedder
):
    source, target, (before, answer_id) = two_directories
    archive = tmp_path / "guild-42.tar"
    assert "1 knowledge base(s) written" in _raptor(
        "--data-dir", str(source), "guilds", "export", "42", str(archive)
    )
    assert "42: 1 knowledge base(s) imported" in _raptor(
        "--data-dir", str(target), "guilds", "import", str(archive)
    )
    _raptor("--data-dir", str(source), "guilds", "delete", "42", "--yes")
    assert not (source / "guilds" / "42").exists() and (source / "guilds" / "7").exists()
    listed = json.loads(_raptor("--data-dir", str(target), "guilds", "list", "--json"))
    assert [(row["guild"], row["knowledge_bases"]) for row in listed] == [
        ("42", [MOVED]),
        ("9", ["guild-9-channel-3"]),
    ]
    engine = Engine(unhurried_settings(data_dir=target), embedder=embedder)
    try:
        assert _answers(engine, MOVED) == before
        assert [d.name for d in engine.documents(MOVED)] == ["railway.txt", "bees.md"]
        assert engine.doctor(repair=False).problems == []
        state = BotState(engine.spaces)
        assert asyncio.run(_read_bot_state(state, answer_id)) == BOT_STATE
        assert not asyncio.run(state.autoingest_enabled(STAYS))  # the server that stayed kept its own
    finally:
        engine.close()
    left = Engine(unhurried_settings(data_dir=source), embedder=embedder)
    try:  # the source no longer has the moved server's bot rows; the other server's are untouched
        state = BotState(left.spaces)
        assert asyncio.run(_read_bot_state(state, answer_id)) == (False, None, None, [], None)
        assert asyncio.run(state.autoingest_enabled(STAYS))
    finally:
        left.close()


def test_an_import_never_overwrites_a_store_and_refuses_a_damaged_archive(two_directories, tmp_path):
    from raptor_engine.cli import cli

    source, target, _ = two_directories
    archive = tmp_path / "guild-42.tar"
    _raptor("--data-dir", str(source), "guilds", "export", "42", str(archive))
    again = CliRunner().invoke(cli, ["--data-dir", str(source), "guilds", "import", str(archive)])
    assert again.exit_code != 0 and "already has a store for 42" in again.output
    damaged = tmp_path / "damaged.tar"
    with tarfile.open(archive) as tar, tarfile.open(damaged, "w") as out:
        for member in tar.getmembers():
            if member.name != "raptor.db":
                out.addfile(member, tar.extractfile(member))
    refused = CliRunner().invoke(cli, ["--data-dir", str(target), "guilds", "import", str(damaged)])
    assert refused.exit_code != 0 and "damaged.tar" in refused.output
    assert not (target / "guilds" / "42").exists()
    assert [p.name for p in (target / "guilds").iterdir()] == ["9"]  # nothing half-unpacked left
    missing = CliRunner().invoke(
        cli, ["--data-dir", str(target), "guilds", "export", "42", str(tmp_path / "x.tar")]
    )
    assert missing.exit_code != 0 and "There is no store for 42 in this data directory." in missing.output


def test_an_export_into_a_missing_folder_names_that_folder(two_directories, tmp_path):
    from raptor_engine.cli import cli

    source, _, _ = two_directories
    archive = tmp_path / "nowhere" / "guild-42.tar"
    done = CliRunner().invoke(cli, ["--data-dir", str(source), "guilds", "export", "42", str(archive)])
    assert done.exit_code == 1
    assert done.output == f"Error: Cannot write the archive to {archive}: {tmp_path / 'nowhere'} does not exist.\n"
    assert not (tmp_path / "nowhere").exists()


def test_an_export_killed_before_its_rename_leaves_no_copy_of_the_store_after_the_next(
    two_directories, tmp_path
):
    """An export writes a snapshot of the database and the tar beside the archive's path, then renames
    the tar over it: SIGKILLed before that, the folder (a whole copy of the server's documents) stayed in
    the user's folder. The next export to that path removes what processes no longer running left."""
    source, _, _ = two_directories
    archive = tmp_path / "guild-42.tar"
    finished = subprocess.Popen(["true"])
    finished.wait()
    killed = tmp_path / f".guild-42.tar.{finished.pid}.tmp"
    killed.mkdir()
    (killed / "raptor.db").write_bytes(b"SQLite format 3\x00" + bytes(4080))
    _raptor("--data-dir", str(source), "guilds", "export", "42", str(archive))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "guild-42.tar"]
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == ["raptor.db", "space.json"]
