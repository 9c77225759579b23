"""Named schema migrations and the one connection helper: an old database is brought up to date, nothing lost."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path

import pytest

from bot.state import BotState, bot_migrations
from raptor_engine import Engine, Settings
from raptor_engine.errors import StorageError
from raptor_engine.storage.db import connect
from raptor_engine.storage.llm_cache import SummaryCache
from raptor_engine.storage.migrations import Migrations
from raptor_engine.storage.spaces import Spaces
from raptor_engine.storage.store import Store
from raptor_engine.storage.store_migrations import store_migrations, summary_cache_migrations
from raptor_engine.storage.text_index import kb_index_owner

OLD_DB = Path(__file__).parent / "data" / "pre_migrations.db"  # made by tests/data/make_pre_migrations_db.py


def rows(db_path: Path, table: str) -> list[tuple]:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
    finally:
        conn.close()


def migrations_run(db_path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT migration_set, name FROM _migrations ORDER BY rowid").fetchall()
    finally:
        conn.close()


@pytest.fixture
def old_data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(OLD_DB, data / "raptor.db")
    return data


TREE_TABLES = ["kbs", "documents", "nodes", "edges", "builds", "questions"]


async def test_a_database_made_before_migrations_is_migrated_and_keeps_everything(old_data, embedder):
    db_path = old_data / "raptor.db"
    before = {t: rows(db_path, t) for t in [*TREE_TABLES, "summary_cache", "bot_channel_settings"]}
    assert ("schema_version", "1") in rows(db_path, "meta")

    engine = Engine(Settings.from_env(data_dir=old_data), embedder=embedder)
    try:
        assert [d.name for d in engine.documents("old")] == ["saltmere.md"]
        answer = await engine.ask("old", "Who kept the light in 1887?")
        assert "Mara Quill" in " ".join(n.text for n in answer.context.nodes)
        # m005 indexed the nodes the old file already held
        assert engine.store.text_search(engine.store.kb_id("old"), ["Quill"], 5)
        state = BotState(engine.spaces)  # "old" is no server's name: its setting is in the root file
        assert await state.autoingest_enabled("old")
        state.close()
        cache = SummaryCache(db_path)
        assert cache.get("k" * 64).text == "a cached summary"
    finally:
        engine.close()

    after = {t: rows(db_path, t) for t in before}
    for table in TREE_TABLES:
        if table == "questions":  # the question asked above is the one new row
            assert after[table][: len(before[table])] == before[table]
        elif table == "nodes":  # m003, m004 and m010 added columns at the end: the old columns are unchanged
            assert [row[: len(before[table][0])] for row in after[table]] == before[table]
            assert {row[-3:] for row in after[table]} == {
                ("[]", None, 0)
            }  # no page marks; sentences split when read; no leaf known to be wholly code
        elif table == "documents":  # m008 added the text fingerprint at the end: unknown (NULL) for old rows;
            # m009 the words' fingerprint, read from the leaves
            assert [row[:-2] for row in after[table]] == before[table]
            assert [row[-2] for row in after[table]] == [None]
            assert all(row[-1] and len(row[-1]) == 64 for row in after[table])
        else:
            assert after[table] == before[table], table
    assert after["summary_cache"] == before["summary_cache"]
    assert after["bot_channel_settings"] == before["bot_channel_settings"]
    meta = dict(rows(db_path, "meta"))
    assert "schema_version" not in meta and meta["next_node_id"] == "9"
    assert migrations_run(db_path) == [
        ("store", "m001_initial"),
        ("store", "m002_drop_schema_version"),
        ("store", "m003_page_marks"),
        ("store", "m004_sentence_spans"),
        ("store", "m005_chat_messages"),
        ("store", "m006_text_index"),
        ("store", "m007_text_index_per_kb"),
        ("store", "m008_document_text_fingerprint"),
        ("store", "m009_document_words_fingerprint"),
        ("store", "m010_node_code"),
        ("store", "m011_document_words_alone"),
        ("bot", "m001_bot_tables"),
        ("bot", "m002_message_sync"),
        ("bot", "m003_turn_sources"),
        ("bot", "m004_turn_messages"),
        ("bot", "m005_posted_files"),
        ("bot", "m006_turn_documents"),
        ("bot", "m007_removals"),
        ("bot", "m008_turn_pending"),
        ("bot", "m009_turn_asker"),
        ("bot", "m010_questions_asked"),
        ("bot", "m011_question_replies"),
        ("summary_cache", "m001_summary_cache"),
    ]


def test_a_new_database_gets_the_same_tables_as_a_migrated_old_one(tmp_path, old_data):
    def columns(db_path: Path) -> dict[str, list[tuple]]:
        conn = sqlite3.connect(db_path)
        try:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            tables = [t for t in tables if kb_index_owner(t) is None]  # a knowledge base's own, not a migration's
            return {t: conn.execute(f"PRAGMA table_info({t})").fetchall() for t in sorted(tables)}
        finally:
            conn.close()

    for db_path in (tmp_path / "new" / "raptor.db", old_data / "raptor.db"):
        spaces = Spaces(Settings(data_dir=db_path.parent))
        asyncio.run(
            BotState(spaces).autoingest_enabled("old")
        )  # a first call brings the bot tables up to date
        spaces.close()
        SummaryCache(db_path).count()
    assert columns(tmp_path / "new" / "raptor.db") == columns(old_data / "raptor.db")


def test_steps_run_once_each_in_order_and_a_later_step_is_applied_to_an_existing_file(tmp_path):
    calls = []
    steps = Migrations("demo")

    @steps
    def m001_table(db):
        calls.append("m001")
        db.execute("CREATE TABLE demo (id INTEGER PRIMARY KEY)")

    db_path = tmp_path / "x.db"
    assert steps.apply(connect(db_path)) == ["m001_table"]
    assert steps.apply(connect(db_path)) == []

    @steps
    def m002_column(db):
        calls.append("m002")
        db.execute("ALTER TABLE demo ADD COLUMN name TEXT")

    db = connect(db_path)
    assert steps.apply(db) == ["m002_column"]
    assert calls == ["m001", "m002"]
    assert steps.applied(db) == ["m001_table", "m002_column"]
    assert db["demo"].columns_dict == {"id": int, "name": str}


def test_a_failing_step_leaves_the_database_as_it_was(tmp_path):
    steps = Migrations("demo")

    @steps
    def m001_table(db):
        db.execute("CREATE TABLE demo (id INTEGER PRIMARY KEY)")

    @steps
    def m002_broken(db):
        db.execute("INSERT INTO demo VALUES (1)")
        raise RuntimeError("disk on fire")

    db = connect(tmp_path / "x.db")
    with pytest.raises(RuntimeError, match="disk on fire"):
        steps.apply(db)
    assert not db["demo"].exists()
    assert steps.applied(db) == []
    assert not db.conn.in_transaction


def test_a_step_name_is_registered_once():
    steps = Migrations("demo")

    @steps
    def m001(db):
        pass

    with pytest.raises(ValueError, match="registered twice"):
        steps(m001)


def test_every_owner_of_the_file_connects_with_the_same_pragmas(tmp_path):
    db_path = tmp_path / "raptor.db"
    store = Store(db_path)  # the bot's tables use the store's connections (bot/state.py)
    cache = SummaryCache(db_path)
    conns = [store.db.conn, cache._connect()]
    try:
        for conn in conns:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
            assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000
            assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1  # deleted rows are zeroed
    finally:
        conns[1].close()
        store.close()


def test_the_sets_are_named_for_their_owners():
    assert store_migrations.names()[0] == "m001_initial"
    assert bot_migrations.names() == [
        "m001_bot_tables",
        "m002_message_sync",
        "m003_turn_sources",
        "m004_turn_messages",
        "m005_posted_files",
        "m006_turn_documents",
        "m007_removals",
        "m008_turn_pending",
        "m009_turn_asker",
        "m010_questions_asked",
        "m011_question_replies",
    ]
    assert summary_cache_migrations.names() == ["m001_summary_cache"]


def _written_by_a_newer_version(data: Path) -> bytes:
    """A data directory whose store recorded a migration this version does not have, and its bytes."""
    data.mkdir(parents=True)
    Store(data / "raptor.db").close()
    db = sqlite3.connect(data / "raptor.db")
    with db:
        db.execute(
            "INSERT INTO _migrations (migration_set, name, applied_at) VALUES ('store', 'm999_later', '2030-01-01')"
        )
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return (data / "raptor.db").read_bytes()


def test_a_store_a_newer_version_migrated_is_refused_and_left_as_it_was(tmp_path):
    """A downgrade must not read or write tables a later version changed: one sentence, nothing written."""
    data = tmp_path / "data"
    before = _written_by_a_newer_version(data)
    with pytest.raises(StorageError, match=r"newer version of raptor .*'m999_later'.*upgrade raptor"):
        Store(data / "raptor.db")
    assert (data / "raptor.db").read_bytes() == before


def test_the_cli_refuses_a_newer_store_in_one_sentence(tmp_path):
    from click.testing import CliRunner

    from raptor_engine.cli import cli

    data = tmp_path / "data"
    _written_by_a_newer_version(data)
    for args in (["ask", "When?", "--kb", "k"], ["ingest", str(Path(__file__)), "--kb", "k"], ["doctor"]):
        result = CliRunner().invoke(cli, ["--data-dir", str(data), *args])
        assert result.exit_code == 1, (args, result.output)
        assert "was written by a newer version of raptor" in result.output
        assert "Traceback" not in result.output
