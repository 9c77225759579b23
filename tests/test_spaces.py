"""A store per space (per Discord server): the move of a one-file data directory into spaces, and routing.

The old layout is written by the Engine with `space_pattern=""`, which keeps every knowledge base in
`data/raptor.db` exactly as the release before spaces did (same Store, same schema). Opening the
directory with the default pattern then moves each server's rows to `data/guilds/<id>/raptor.db`;
the test compares every row of every table, the answers, and checks that the root file keeps no copy.
The bot's own rows (settings, threads and their turns, saved answers), written by `BotState` into the
same one file, move with their server. A process killed with SIGKILL in the middle of the move (mid-copy,
and between copy and delete, of knowledge bases and of the bot's rows) is restarted and must finish it
with the same result.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot.state import BotState, MessageImport, PostedFile, ThreadRecord
from raptor_engine import Engine
from raptor_engine.storage.spaces import FOLLOWER_TABLES, KB_TABLES
from raptor_engine.types import Turn
from tests.sample_texts import BEEKEEPING, RAILWAY
from tests.unhurried import unhurried_settings

ROOT_ONLY = "notes"
GUILD_KBS = {"guild-111-channel-1": "111", "guild-111-channel-2": "111", "guild-222-channel-9": "222"}
QUESTIONS = ["When did the railway open?", "How do bees make honey?"]
MARKER = "Quillfeather marshes"  # a sentence only guild 222 holds: its bytes must leave the root file


def _documents(kb: str) -> list[tuple[str, bytes]]:
    docs = [("railway.txt", RAILWAY.encode()), ("bees.md", BEEKEEPING.encode())]
    if kb == "guild-222-channel-9":
        docs.append(("marsh.txt", f"The {MARKER} flood each spring. Herons nest there in March.".encode()))
    return docs


def _rows(db_path: Path, kb: str) -> dict[str, list[tuple]]:
    """Every row of every store table that belongs to `kb`, in id order (ids are kept by the move)."""
    conn = sqlite3.connect(db_path)
    try:
        found = conn.execute("SELECT id FROM kbs WHERE name = ?", [kb]).fetchone()
        if found is None:
            return {}
        out = {}
        for table in KB_TABLES:
            key = "id" if table == "kbs" else "kb_id"
            out[table] = conn.execute(
                f"SELECT * FROM {table} WHERE {key} = ? ORDER BY 1, 2", [found[0]]
            ).fetchall()
        return out
    finally:
        conn.close()


def _bot_rows(db_path: Path) -> dict[str, list[tuple]]:
    """Every row of every bot table in one file, sorted (a table the file lacks has none)."""
    conn = sqlite3.connect(db_path)
    try:
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {
            table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall()) if table in present else []
            for table, _ in FOLLOWER_TABLES
        }
    finally:
        conn.close()


async def _write_bot_rows(state: BotState) -> None:
    """Settings, a thread with turns and a saved answer per server, and a setting of the CLI's `notes`."""
    for kb in GUILD_KBS:
        guild, channel = (int(part) for part in kb.split("-")[1::2])
        thread = guild * 10 + channel
        await state.set_autoingest(kb, guild, channel, True, "tester")
        await state.add_thread(ThreadRecord(thread, kb, guild, channel), opened_by="tester")
        turns = [
            Turn("user", f"question in {kb}"),
            Turn("assistant", f"about the {MARKER}" if guild == 222 else "ok"),
        ]
        await state.add_turns(guild, thread, turns)
        await state.save_answer(kb, f"question in {kb}", [], 0, 2000)
        await state.set_manager_role(guild, guild + 1, "tester")
        await state.set_sync(kb, guild, channel, True, "tester")
        await state.forget_me(guild, guild + 2)
        await state.start_import(MessageImport(0, kb, guild, channel, channel, 1, "tester", 10, None, "running"))
        await state.add_posted_file(PostedFile(kb, channel, thread + 1, thread + 2, "ab" * 32, guild + 2))
        await state.note_question(guild, thread, thread + 3)  # a question not yet answered
    await state.set_autoingest(ROOT_ONLY, 0, 0, True, "tester")


def _retrieved(engine: Engine, kb: str) -> list[list[tuple[int, str]]]:
    return [[(n.node_id, n.text) for n in engine.retrieve(kb, q).nodes] for q in QUESTIONS]


@pytest.fixture(scope="module")
def old_layout(tmp_path_factory, embedder):
    """A data directory as the release before spaces wrote it, and what it held (rows and answers)."""
    data = tmp_path_factory.mktemp("old") / "data"
    engine = Engine(unhurried_settings(data_dir=data, space_pattern=""), embedder=embedder)

    async def build() -> None:
        for kb in [ROOT_ONLY, *GUILD_KBS]:
            for name, body in _documents(kb):
                await engine.ingest(kb, name, body, added_by="tester")
            await engine.ask(kb, QUESTIONS[0], asked_by="tester")
        await _write_bot_rows(BotState(engine.spaces))  # the pattern is empty: into the one root file

    asyncio.run(build())
    conn = sqlite3.connect(data / "raptor.db")
    with conn:  # a removal each server's bot recorded (bot_removals: node ids only once it is done)
        for kb in GUILD_KBS:
            conn.execute("INSERT INTO bot_removals (kb, at, note, nodes) VALUES (?, 1, '(removed)', '[7]')", [kb])
    conn.close()
    rows = {kb: _rows(data / "raptor.db", kb) for kb in [ROOT_ONLY, *GUILD_KBS]}
    rows["bot"] = _bot_rows(data / "raptor.db")
    answers = {kb: _retrieved(engine, kb) for kb in [ROOT_ONLY, *GUILD_KBS]}
    engine.close()
    assert not (data / "guilds").exists()
    assert all(rows[kb]["questions"] and rows[kb]["builds"] and rows[kb]["edges"] for kb in GUILD_KBS)
    assert all(rows["bot"][table] for table, _ in FOLLOWER_TABLES)
    return data, rows, answers


def _copy(source: Path, tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "data"
    shutil.copytree(source, target)
    return target


def _check_moved(data: Path, rows: dict, answers: dict, embedder) -> None:
    """Each server's rows are in its own file, identical, and nowhere else; answers are unchanged."""
    for kb, guild in GUILD_KBS.items():
        assert _rows(data / "guilds" / guild / "raptor.db", kb) == rows[kb]
        assert _rows(data / "raptor.db", kb) == {}
        assert (data / "guilds" / guild / "indices" / f"kb-{rows[kb]['kbs'][0][0]}.hnsw").exists()
    assert _rows(data / "raptor.db", ROOT_ONLY) == rows[ROOT_ONLY]
    assert MARKER.encode() not in (data / "raptor.db").read_bytes()
    assert (
        not Path(f"{data / 'raptor.db'}-wal").exists()
        or MARKER.encode() not in Path(f"{data / 'raptor.db'}-wal").read_bytes()
    )
    _check_bot_rows_moved(data, rows["bot"])
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        assert engine.knowledge_bases() == sorted([ROOT_ONLY, *GUILD_KBS])
        for kb in answers:
            assert _retrieved(engine, kb) == answers[kb]
        assert engine.doctor(repair=False).problems == []
        state = BotState(engine.spaces)
        history = asyncio.run(state.history(222, 2229))
        assert history == [
            Turn("user", "question in guild-222-channel-9"),
            Turn("assistant", f"about the {MARKER}"),
        ]
        assert asyncio.run(state.manager_role_id(111)) == 112
        assert asyncio.run(state.autoingest_enabled("guild-111-channel-2"))
        assert asyncio.run(state.autoingest_enabled(ROOT_ONLY))
    finally:
        engine.close()


def _check_bot_rows_moved(data: Path, before: dict[str, list[tuple]]) -> None:
    """Each bot row is in its server's file once (the CLI's `notes` setting stays in the root): none lost,
    none twice."""
    files = {guild: _bot_rows(data / "guilds" / guild / "raptor.db") for guild in set(GUILD_KBS.values())}
    root = _bot_rows(data / "raptor.db")
    for table, _ in FOLLOWER_TABLES:
        assert sorted(root[table] + [row for f in files.values() for row in f[table]]) == before[table], table
    assert root["bot_channel_settings"] == [r for r in before["bot_channel_settings"] if r[0] == ROOT_ONLY]
    assert all(not root[table] for table in ("bot_threads", "bot_turns", "bot_answers", "bot_guild_settings"))
    for guild, held in files.items():
        assert {r[1] for r in held["bot_threads"]} | {r[1] for r in held["bot_answers"]} <= {
            kb for kb, g in GUILD_KBS.items() if g == guild
        }
        assert [r[0] for r in held["bot_guild_settings"]] == [int(guild)]
        assert {r[1] for r in held["bot_turns"]} == {r[0] for r in held["bot_threads"]}


def test_opening_an_old_data_directory_moves_each_server_into_its_own_store(old_layout, tmp_path, embedder):
    source, rows, answers = old_layout
    data = _copy(source, tmp_path)
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    engine.close()
    _check_moved(data, rows, answers, embedder)


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import raptor_engine.storage.spaces as spaces
    from raptor_engine import Engine, Settings

    point, data = sys.argv[1], Path(sys.argv[2])
    calls = {"n": 0}

    def die_on_second(original):
        def wrapped(*args, **kwargs):
            if point == "mid-copy" and original is spaces._copy_rows and args[1] != "nodes":
                return original(*args, **kwargs)
            calls["n"] += 1
            if calls["n"] == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            return original(*args, **kwargs)
        return wrapped

    if point == "mid-copy":  # inside the copy transaction of the second knowledge base
        spaces._copy_rows = die_on_second(spaces._copy_rows)
    elif point == "mid-bot-copy":  # inside the copy transaction of the second server's bot rows
        original = spaces._shared_columns
        def die_in_second_turns(conn, table):
            calls["n"] += table == "bot_turns"
            if calls["n"] == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            return original(conn, table)
        spaces._shared_columns = die_in_second_turns
    elif point == "after-bot-copy":  # the second server's bot rows copied, not yet deleted from the root
        copy = spaces.copy_follower_rows
        def die_after_second(*args):
            copy(*args)
            calls["n"] += 1
            if calls["n"] == 2:
                os.kill(os.getpid(), signal.SIGKILL)
        spaces.copy_follower_rows = die_after_second
    elif point == "before-vacuum":  # every row moved, the root file not yet rewritten
        spaces._vacuum = lambda root: os.kill(os.getpid(), signal.SIGKILL)
    else:  # the second knowledge base copied and committed, not yet deleted from the root
        spaces._move_index_files = die_on_second(spaces._move_index_files)
    Engine(Settings(data_dir=data)).close()
    """
)


@pytest.mark.parametrize(
    "point", ["mid-copy", "after-copy", "mid-bot-copy", "after-bot-copy", "before-vacuum"]
)
def test_a_move_killed_midway_is_finished_by_the_next_open(old_layout, tmp_path, embedder, point):
    source, rows, answers = old_layout
    data = _copy(source, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    killed = subprocess.run([sys.executable, "-c", KILLER, point, str(data)], env=env, capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    halfway = [kb for kb in GUILD_KBS if _rows(data / "raptor.db", kb)]
    if point.endswith("bot-copy"):  # every knowledge base moved; some server's bot rows still in the root
        halfway = [
            t
            for t, rows_left in _bot_rows(data / "raptor.db").items()
            if t != "bot_channel_settings" and rows_left
        ]
        assert halfway and _vacuum_pending(data)
    elif point == "before-vacuum":  # the rows are gone from the tables; the file is still to be rewritten
        assert not halfway and _vacuum_pending(data)
    else:
        assert halfway, "the kill came after the move had finished"
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)  # the next open finishes the move
    engine.close()
    assert not _vacuum_pending(data)
    _check_moved(data, rows, answers, embedder)


def _vacuum_pending(data: Path) -> bool:
    """Whether the root file still waits for the VACUUM that drops the moved rows' pages (SQLite builds
    without secure_delete leave deleted rows' bytes in free pages until then)."""
    conn = sqlite3.connect(data / "raptor.db")
    try:
        return conn.execute("SELECT 1 FROM meta WHERE key = 'vacuum_pending'").fetchone() is not None
    finally:
        conn.close()


def test_a_server_is_one_directory_and_deleting_it_keeps_the_others(old_layout, tmp_path, embedder):
    source, rows, answers = old_layout
    data = _copy(source, tmp_path)
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        assert engine.delete_space("111") is True
        assert not (data / "guilds" / "111").exists()
        assert engine.knowledge_bases() == sorted([ROOT_ONLY, "guild-222-channel-9"])
        assert _retrieved(engine, "guild-222-channel-9") == answers["guild-222-channel-9"]
        assert engine.delete_space("111") is False
    finally:
        engine.close()


def test_new_knowledge_bases_go_to_their_space_and_the_cli_names_stay_in_the_root(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        asyncio.run(engine.ingest("guild-5-channel-6", "marsh.txt", f"The {MARKER} flood.".encode()))
        asyncio.run(engine.ingest("plain", "marsh.txt", b"Herons nest in March."))
        assert _rows(tmp_path / "data" / "guilds" / "5" / "raptor.db", "guild-5-channel-6")["nodes"]
        assert _rows(tmp_path / "data" / "raptor.db", "plain")["nodes"]
        assert _rows(tmp_path / "data" / "raptor.db", "guild-5-channel-6") == {}
        with engine.in_space("guild-5-channel-6"):
            assert engine.store.path == tmp_path / "data" / "guilds" / "5" / "raptor.db"
        assert engine.store.path == tmp_path / "data" / "raptor.db"
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("pattern", "says"), [("^guild-(\\d+", "not a regular expression"), ("^guild-\\d+-", "needs a group")]
)
def test_a_space_pattern_that_cannot_name_spaces_is_refused_in_one_sentence(tmp_path, pattern, says):
    from raptor_engine.errors import RaptorError

    with pytest.raises(RaptorError, match=says):
        Engine(unhurried_settings(data_dir=tmp_path / "data", space_pattern=pattern))


def test_two_processes_opening_an_old_directory_at_once_move_it_once(old_layout, tmp_path, embedder):
    source, rows, answers = old_layout
    data = _copy(source, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    opener = "import sys; from pathlib import Path; from raptor_engine import Engine, Settings; "
    opener += "Engine(Settings(data_dir=Path(sys.argv[1]))).close()"
    both = [
        subprocess.Popen([sys.executable, "-c", opener, str(data)], env=env, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    for process in both:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err.decode()[-2000:]
    _check_moved(data, rows, answers, embedder)


def test_an_index_file_another_process_moves_first_is_left_to_it(tmp_path, monkeypatch):
    """Two processes opening an old directory at once both list a knowledge base's index files; the one
    that finds a file gone when it moves it (the other moved it after the listing) goes on, as a file
    never saved is skipped."""
    from raptor_engine.storage import spaces
    from raptor_engine.storage.index import IndexManager

    source = IndexManager(None, tmp_path / "root")  # type: ignore[arg-type]  # only its files are used
    target = IndexManager(None, tmp_path / "space")  # type: ignore[arg-type]
    source.dir.mkdir(parents=True)
    saved, moved_by_the_other = source.file_paths(4)
    saved.write_text("saved")
    with monkeypatch.context() as patch:  # each listed file was there when it was looked at
        patch.setattr(type(saved), "exists", lambda self: True)
        spaces._move_index_files(source, target, 4)
    assert (target.dir / saved.name).read_text() == "saved" and not saved.exists()
    assert not (target.dir / moved_by_the_other.name).exists()


def test_closing_waits_for_calls_still_working_in_a_space(tmp_path):
    """Closing a store's connections under a running statement can crash the process: a bot stopping
    while a question's thread still reads its server's store. Close waits for the space's pins."""
    import threading

    from raptor_engine.config import Settings
    from raptor_engine.storage.spaces import Spaces

    spaces = Spaces(Settings(data_dir=tmp_path / "data"))
    entered, leave = threading.Event(), threading.Event()

    def call() -> None:
        with spaces.pinned("42") as space:
            entered.set()
            leave.wait(10)
            space.store.kb_names()  # still usable: not closed under it

    worker = threading.Thread(target=call)
    worker.start()
    assert entered.wait(10)
    closer = threading.Thread(target=spaces.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive()
    leave.set()
    worker.join(10)
    closer.join(10)
    assert not closer.is_alive() and spaces.open_count() == 0


def test_a_servers_own_folder_given_as_the_data_directory_is_refused_and_left_as_it_is(tmp_path, embedder):
    """`raptor --data-dir data/guilds/5 ...` opened that server's store as a root and moved its knowledge
    bases on into data/guilds/5/guilds/5/, where neither the bot nor `--data-dir data` finds them: it is
    refused in one sentence that names the data directory to use, and nothing moves."""
    from raptor_engine.errors import StorageError

    data = tmp_path / "data"
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        asyncio.run(engine.ingest("guild-5-channel-6", "marsh.txt", f"The {MARKER} flood.".encode()))
    finally:
        engine.close()
    before = _rows(data / "guilds" / "5" / "raptor.db", "guild-5-channel-6")
    with pytest.raises(StorageError, match=f"--data-dir {data}"):
        Engine(unhurried_settings(data_dir=data / "guilds" / "5"), embedder=embedder)
    assert not (data / "guilds" / "5" / "guilds").exists()
    assert _rows(data / "guilds" / "5" / "raptor.db", "guild-5-channel-6") == before


def test_every_table_of_the_bot_follows_its_knowledge_base_into_a_space(tmp_path):
    """A bot table left out of FOLLOWER_TABLES stays in the root when an old directory is split, while
    its migration record is copied: the space then claims a table it lacks (doctor: 'no index ...')."""
    import sqlite_utils

    from raptor_engine.storage.store_migrations import bot_migrations

    db = sqlite_utils.Database(tmp_path / "bot.db")
    bot_migrations.apply(db)
    tables = {name for name in db.table_names() if name.startswith("bot_")}
    assert tables == {table for table, _ in FOLLOWER_TABLES}
