"""`raptor guilds import` accepts only what `raptor guilds export` writes.

Each hostile archive below is the real export of a guild with one thing changed (the manifest's size
and sha256 recomputed, so only that one thing is wrong); the real `raptor` CLI refuses it in one
sentence and the target data directory is byte for byte as it was (a hash of the whole tree). A
store that gains a trigger after import is reported by `raptor doctor`.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlite_utils

from raptor_engine import Engine
from raptor_engine.storage.archive import ARCHIVE_MANIFEST
from raptor_engine.storage.db import connect
from raptor_engine.storage.store_migrations import bot_migrations
from tests.sample_texts import BEEKEEPING, RAILWAY
from tests.unhurried import unhurried_settings

ROOT = Path(__file__).resolve().parents[1]
GUILD, KB = "42", "guild-42-channel-1"
BIG = 300 * 1024 * 1024


def raptor(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "raptor_engine.cli", "--data-dir", str(data), *args],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )


def tree_hash(root: Path) -> str:
    """Every path under `root` with its kind and, for files, its bytes."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_symlink():
            digest.update(b"link" + os.readlink(path).encode())
        elif path.is_file():
            digest.update(b"file" + hashlib.sha256(path.read_bytes()).digest())
        else:
            digest.update(b"dir")
    return digest.hexdigest()


@pytest.fixture(scope="module")
def exported(tmp_path_factory, embedder) -> Path:
    """The real export of guild 42 (two documents, a bot setting row of its own)."""
    folder = tmp_path_factory.mktemp("export")
    engine = Engine(unhurried_settings(data_dir=folder / "source"), embedder=embedder)
    asyncio.run(engine.ingest(KB, "railway.txt", RAILWAY.encode()))
    asyncio.run(engine.ingest(KB, "bees.md", BEEKEEPING.encode()))
    engine.close()
    archive = folder / "guild-42.tar"
    done = raptor(folder / "source", "guilds", "export", GUILD, str(archive))
    assert done.returncode == 0, done.stderr
    return archive


@pytest.fixture
def target(tmp_path, embedder) -> Path:
    """A data directory with another guild's store, as a running bot would have it."""
    data = tmp_path / "target"
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    asyncio.run(engine.ingest("guild-9-channel-3", "railway.txt", RAILWAY.encode()))
    engine.close()
    return data


def _parts(archive: Path) -> tuple[dict, bytes]:
    with tarfile.open(archive) as tar:
        manifest = json.loads(tar.extractfile(ARCHIVE_MANIFEST).read())
        return manifest, tar.extractfile("raptor.db").read()


def _member(name: str, data: bytes) -> tuple[tarfile.TarInfo, io.BytesIO]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, io.BytesIO(data)


class Zeros(io.RawIOBase):
    """`size` zero bytes, read in blocks, never held whole."""

    def __init__(self, size: int):
        self.left = size

    def readinto(self, buffer) -> int:
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count

    def readable(self) -> bool:
        return True


def rewrite(
    good: Path,
    out: Path,
    *,
    db_edit: Callable[[sqlite3.Connection], None] | None = None,
    db_bytes: Callable[[bytes], bytes] | None = None,
    manifest_edit: Callable[[dict], None] | None = None,
    members: list[tuple[tarfile.TarInfo, object]] = (),
    mode: str = "w",
) -> Path:
    """The good archive with its database or manifest changed (size and sha256 kept true to the new
    database) and `members` added after the two of an export."""
    manifest, data = _parts(good)
    if db_edit is not None:
        path = out.with_suffix(".db")
        path.write_bytes(data)
        conn = sqlite3.connect(path, isolation_level=None)
        db_edit(conn)
        conn.close()
        data = path.read_bytes()
    if db_bytes is not None:
        data = db_bytes(data)
    manifest["database"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if manifest_edit is not None:
        manifest_edit(manifest)
    with tarfile.open(out, mode, **({"compresslevel": 1} if mode == "w:gz" else {})) as tar:
        if not any(info.name == ARCHIVE_MANIFEST for info, _ in members):
            tar.addfile(*_member(ARCHIVE_MANIFEST, json.dumps(manifest).encode()))
        if not any(info.name == "raptor.db" for info, _ in members):
            tar.addfile(*_member("raptor.db", data))
        for info, source in members:
            tar.addfile(info, source)
    return out


def _link(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


def _zeros(name: str, size: int) -> tuple[tarfile.TarInfo, Zeros]:
    info = tarfile.TarInfo(name)
    info.size = size
    return info, Zeros(size)


def _thread_turn(posted_ids: str, column: str = "posted_ids") -> Callable[[sqlite3.Connection], None]:
    """A database edit: the bot's tables, and one thread turn whose `column` holds `posted_ids`."""

    def edit(conn: sqlite3.Connection) -> None:
        bot_migrations.apply(sqlite_utils.Database(conn))
        conn.execute(
            "INSERT INTO bot_threads (thread_id, kb, guild_id, channel_id, opened_by, created_at) "
            f"VALUES (5, '{KB}', 42, 1, 'a', 'now')"
        )
        conn.execute(
            f"INSERT INTO bot_turns (thread_id, role, content, created_at, {column}) VALUES (5, 'user', 'q', 'now', ?)",
            [posted_ids],
        )

    return edit


def _removal(at: str, nodes: str = "[1, 2]") -> Callable[[sqlite3.Connection], None]:
    """A database edit: the bot's tables, and one finished removal record dated by SQL `at`, of `nodes`."""

    def edit(conn: sqlite3.Connection) -> None:
        bot_migrations.apply(sqlite_utils.Database(conn))
        conn.execute(f"INSERT INTO bot_removals (kb, at, note, nodes) VALUES ('{KB}', {at}, 'gone', ?)", [nodes])

    return edit


def _bot_row(sql: str) -> Callable[[sqlite3.Connection], None]:
    """A database edit: the bot's tables, and the row `sql` inserts."""

    def edit(conn: sqlite3.Connection) -> None:
        bot_migrations.apply(sqlite_utils.Database(conn))
        conn.execute(sql)

    return edit


def _corrupt(data: bytes) -> bytes:
    """Garbage over every page after the first: the header and schema read, the b-trees do not."""
    page = int.from_bytes(data[16:18], "big")
    return data[:page] + bytes((i * 37) % 251 for i in range(len(data) - page))


def _give_space(name: str) -> Callable[[dict], None]:
    return lambda manifest: manifest.update(space=name)


def _nan_vector(conn: sqlite3.Connection) -> None:
    """The first node's embedding made of NaNs (its length kept): hnswlib takes it, and every distance
    to it is NaN."""
    size = conn.execute("SELECT length(embedding) FROM nodes ORDER BY id LIMIT 1").fetchone()[0]
    nan = bytes.fromhex("0000c07f")  # a float32 NaN, little-endian
    conn.execute("UPDATE nodes SET embedding = ? WHERE id = (SELECT MIN(id) FROM nodes)", [nan * (size // 4)])


def _declare_big(manifest: dict) -> None:
    manifest["database"]["bytes"] = BIG


HOSTILE = {
    "trigger": (
        dict(db_edit=lambda c: c.execute(
            "CREATE TRIGGER wipe AFTER INSERT ON questions BEGIN DELETE FROM nodes; END")),
        "its database has a trigger 'wipe' on questions that is not the project's",
    ),
    "view": (
        dict(db_edit=lambda c: c.execute("CREATE VIEW leak AS SELECT * FROM nodes")),
        "its database has a view 'leak' that is not the project's",
    ),
    "extra table": (
        dict(db_edit=lambda c: c.execute("CREATE TABLE loot (x)")),
        "its database has a table 'loot' that is not the project's",
    ),
    "extra column": (
        dict(db_edit=lambda c: c.execute("ALTER TABLE questions ADD COLUMN extra TEXT")),
        "its database has a table 'questions' that differs from the project's",
    ),
    "check constraint": (
        dict(db_edit=lambda c: c.executescript(
            "PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = replace(sql, "
            "'nodes INTEGER NOT NULL)', 'nodes INTEGER NOT NULL CHECK (0))') WHERE name = 'questions';")),
        "its database has a table 'questions' that differs from the project's",
    ),
    "a knowledge base's full-text view over other rows": (
        dict(db_edit=lambda c: c.execute("CREATE VIEW nodes_of_kb_77 AS SELECT rowid AS id, text FROM messages")),
        "its database has a view 'nodes_of_kb_77' that differs from the project's",
    ),
    "a full-text shadow table of another shape": (
        dict(db_edit=lambda c: c.execute("CREATE TABLE nodes_fts_77_data (id INTEGER PRIMARY KEY, block, x)")),
        "its database has a table 'nodes_fts_77_data' that differs from the project's",
    ),
    "mismatched guild": (
        dict(manifest_edit=_give_space("999")),
        "its manifest names guild 999 but its database holds data of guild 42",
    ),
    "oversize member": (
        dict(db_bytes=lambda data: data + bytes(4096), manifest_edit=lambda m: m["database"].update(
            bytes=m["database"]["bytes"] - 4096)),
        "its database is",  # "... N bytes where its manifest says M"
    ),
    "300 MB index member in a small .tar.gz": (
        dict(members=[_zeros("indices/kb-1.hnsw", BIG)], mode="w:gz"),
        "it holds 'indices/kb-1.hnsw', which an export never writes",
    ),
    "300 MB database declared in a small .tar.gz": (
        dict(manifest_edit=_declare_big, members=[_zeros("raptor.db", BIG)], mode="w:gz"),
        f"it would unpack a {BIG:,}-byte database",
    ),
    "manifest nested too deep for a JSON parser": (
        dict(members=[_member(ARCHIVE_MANIFEST, b"[" * 200_000)]),
        "its manifest is not JSON",
    ),
    "guild name with a trailing newline": (
        dict(manifest_edit=_give_space(GUILD + "\n")),
        "its manifest names no valid guild",
    ),
    "absolute path": (
        dict(members=[_member("/tmp/raptor-owned", b"x")]),
        "it holds '/tmp/raptor-owned', which an export never writes",
    ),
    "dot-dot path": (
        dict(members=[_member("../../raptor-owned", b"x")]),
        "it holds '../../raptor-owned', which an export never writes",
    ),
    "symlink member": (
        dict(members=[_link("raptor.db", tarfile.SYMTYPE, "/etc/passwd")]),
        "its raptor.db is not a plain file",
    ),
    "corrupt database": (
        dict(db_bytes=_corrupt),
        "its database is damaged",
    ),
    "a node's heading that is not JSON": (
        dict(db_edit=lambda c: c.execute("UPDATE nodes SET heading = '{{{' WHERE id = (SELECT MIN(id) FROM nodes)")),
        "its database is inconsistent (1 nodes whose stored lists are malformed)",
    ),
    "a leaf list of strings": (
        dict(db_edit=lambda c: c.execute("UPDATE nodes SET leaf_ids = '[\"a\"]' WHERE kind != 'leaf'")),
        "nodes whose stored lists are malformed)",
    ),
    "sentences of the wrong shape": (
        dict(db_edit=lambda c: c.execute("UPDATE nodes SET sentences = '[[0, 5]]' WHERE id = (SELECT MAX(id) FROM nodes)")),
        "its database is inconsistent (1 nodes whose stored lists are malformed)",
    ),
    "a build's details that are not JSON": (
        dict(db_edit=lambda c: c.execute("UPDATE builds SET notes = 'not json'")),
        "builds whose stored details are malformed)",
    ),
    "an edge from a leaf up to its summary": (
        dict(db_edit=lambda c: c.execute(
            "INSERT INTO edges SELECT child_id, parent_id, kb_id FROM edges ORDER BY parent_id LIMIT 1")),
        "its database is inconsistent (1 edges that do not point down the tree)",
    ),
    "a vector of NaNs": (
        dict(db_edit=_nan_vector),
        "its database holds vectors that cannot be indexed",
    ),
    "a document's name holding a terminal escape": (
        dict(db_edit=lambda c: c.execute(
            "UPDATE documents SET name = 'ev' || char(27) || ']0;pwned' || char(7) || '.md' WHERE id = (SELECT MIN(id) FROM documents)")),
        "its database has control characters (terminal escapes) in 1 of its document names",
    ),
    "who added a document, holding a screen clear": (
        dict(db_edit=lambda c: c.execute("UPDATE documents SET added_by = char(27) || '[2J' WHERE id = (SELECT MIN(id) FROM documents)")),
        "in 1 of its names of who added a document",
    ),
    "a node's text and a heading holding escapes": (
        dict(db_edit=lambda c: c.execute(
            "UPDATE nodes SET text = text || char(155) || '31m', heading = '[\"\\u001b[31mred\"]' WHERE id = (SELECT MIN(id) FROM nodes)")),
        "in 1 of its nodes' texts",
    ),
    "a thread turn's posted_ids that is not JSON": (
        dict(db_edit=_thread_turn("{not json")),
        "its database has 1 rows whose list of the Discord messages of its thread turns (posted_ids) is not a list",
    ),
    "a thread turn's posted_ids of strings": (
        dict(db_edit=_thread_turn('["12", 13]')),
        "(posted_ids) is not a list of message ids",
    ),
    "a thread turn's message_ids that is an object": (
        dict(db_edit=_thread_turn('{"a": 1}', "message_ids")),
        "(message_ids) is not a list of message ids",
    ),
    "a removal record of the year 5000 (every later answer checked against it, kept for good)": (
        dict(db_edit=_removal("95617584000.0")),
        "its database has 1 removal records (bot_removals) dated after now or by no number",
    ),
    "a removal record dated by a text (greater than every number in SQLite)": (
        dict(db_edit=_removal("'soon'")),
        "removal records (bot_removals) dated after now or by no number",
    ),
    "a removal record whose nodes are not ids": (
        dict(db_edit=_removal("1.0", '[1, "all"]')),
        "(bot_removals.nodes) is not a list of node ids",
    ),
    "a thread of guild 42's channel that names guild 999 (its start would settle it in 999's store)": (
        dict(db_edit=_bot_row(
            "INSERT INTO bot_threads (thread_id, kb, guild_id, channel_id) VALUES (5, 'guild-42-channel-1', 999, 1)")),
        "its database has 1 threads (bot_threads) whose guild id is not their knowledge base's guild",
    ),
    "a thread whose guild id is a text": (
        dict(db_edit=_bot_row(
            "INSERT INTO bot_threads (thread_id, kb, guild_id, channel_id) VALUES (5, 'guild-42-channel-1', '42 and 999', 1)")),
        "1 threads (bot_threads) whose guild id",
    ),
    "a guild id that is a prefix of the knowledge base's (4 of guild-42)": (
        dict(db_edit=_bot_row(
            "INSERT INTO bot_channel_settings (kb, guild_id, channel_id, autoingest) VALUES ('guild-42-channel-1', 4, 1, 1)")),
        "1 channel settings (bot_channel_settings) whose guild id",
    ),
    "a running history import naming guild 999": (
        dict(db_edit=_bot_row(
            "INSERT INTO bot_message_imports (kb, guild_id, source_id, added_by, status) "
            "VALUES ('guild-42-channel-1', 999, 7, 'a', 'running')")),
        "1 history imports (bot_message_imports) whose guild id",
    ),
    "message sync of guild 42's channel naming guild 999": (
        dict(db_edit=_bot_row(
            "INSERT INTO bot_message_sync (kb, guild_id, channel_id, enabled) VALUES ('guild-42-channel-1', 999, 1, 1)")),
        "1 message sync settings (bot_message_sync) whose guild id",
    ),
    "a node of 100,000 characters": (
        dict(db_edit=lambda c: c.execute(
            "UPDATE nodes SET text = printf('%.*c', 100000, 'x') WHERE id = (SELECT MIN(id) FROM nodes)")),
        "its database has a node of 100,000 characters, over this data directory's limit of 2,000",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE), ids=list(HOSTILE))
def test_a_hostile_archive_is_refused_in_one_sentence_and_changes_nothing(exported, target, tmp_path, case):
    options, says = HOSTILE[case]
    archive = rewrite(exported, tmp_path / f"hostile{'.tar.gz' if options.get('mode') == 'w:gz' else '.tar'}",
                      **options)
    assert archive.stat().st_size < 2 * 1024 * 1024  # the 300 MB cases are small archives
    before = tree_hash(target)
    done = raptor(target, "guilds", "import", str(archive))
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {archive.name} is not a store exported"), done.stderr
    assert says in lines[0] and lines[0].endswith(".")
    assert tree_hash(target) == before
    assert not Path("/tmp/raptor-owned").exists()


def test_a_link_or_device_in_place_of_a_member_is_refused(exported, target, tmp_path):
    """The members themselves must be plain files: a symlink, hard link or device named raptor.db."""
    manifest, _ = _parts(exported)
    before = tree_hash(target)
    for kind in (tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE):
        archive = tmp_path / f"link-{kind.decode()}.tar"
        with tarfile.open(archive, "w") as tar:
            tar.addfile(*_member(ARCHIVE_MANIFEST, json.dumps(manifest).encode()))
            tar.addfile(*_link("raptor.db", kind, "/etc/passwd"))
        done = raptor(target, "guilds", "import", str(archive))
        assert done.returncode == 1 and "its raptor.db is not a plain file." in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert tree_hash(target) == before


def test_a_member_too_large_for_its_archive_is_refused_at_its_header(target, tmp_path):
    """A bomb is refused before its data is read: the header of a 300 MB raptor.db in a small archive
    whose data stops short (reading on to the next header would decompress all of a real bomb)."""
    header = _zeros("raptor.db", BIG)[0].tobuf(format=tarfile.PAX_FORMAT)
    archive = tmp_path / "bomb.tar.gz"
    with gzip.open(archive, "wb", compresslevel=1) as out:
        out.write(header + bytes(1024 * 1024))
    before = tree_hash(target)
    done = raptor(target, "guilds", "import", str(archive))
    assert done.returncode == 1 and f"it would unpack a {BIG:,}-byte database" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert tree_hash(target) == before


def test_an_export_is_imported_with_its_indices_built_here(exported, target):
    """The archive carries the manifest and the database only; import builds the indices from the rows."""
    with tarfile.open(exported) as tar:
        assert tar.getnames() == [ARCHIVE_MANIFEST, "raptor.db"]
    done = raptor(target, "guilds", "import", str(exported))
    assert done.returncode == 0 and done.stdout.strip() == "42: 1 knowledge base(s) imported", done.stderr
    indices = sorted(p.name for p in (target / "guilds" / GUILD / "indices").iterdir())
    assert indices == ["kb-1.hnsw", "kb-1.json"]
    assert not [p for p in (target / "guilds").iterdir() if p.name.startswith(".")]
    healthy = raptor(target, "doctor", "--no-repair")
    assert healthy.returncode == 0 and healthy.stdout.strip() == "healthy", healthy.stdout + healthy.stderr


def test_doctor_finds_a_foreign_schema_object(exported, target):
    assert raptor(target, "guilds", "import", str(exported)).returncode == 0
    conn = sqlite3.connect(target / "guilds" / GUILD / "raptor.db")
    conn.execute("CREATE TRIGGER wipe AFTER INSERT ON questions BEGIN DELETE FROM nodes; END")
    conn.commit()
    conn.close()
    report = raptor(target, "doctor", "--no-repair")
    assert report.returncode == 1
    assert "space 42: schema: a trigger 'wipe' on questions that is not the project's" in report.stdout


def test_doctor_finds_a_node_whose_stored_list_is_malformed(exported, target):
    """A row no question can read (json.loads fails on it) is a problem doctor names, not a healthy store."""
    assert raptor(target, "guilds", "import", str(exported)).returncode == 0
    conn = sqlite3.connect(target / "guilds" / GUILD / "raptor.db")
    conn.execute("UPDATE nodes SET page_marks = '[[1, 2, 3]]' WHERE id = (SELECT MIN(id) FROM nodes)")
    conn.commit()
    conn.close()
    report = raptor(target, "doctor", "--no-repair")
    assert report.returncode == 1
    assert "space 42: 1 nodes whose stored lists are malformed" in report.stdout


def test_every_connection_distrusts_the_schema(tmp_path):
    """trusted_schema=OFF: a view may not call a function that is not innocuous."""
    db = connect(tmp_path / "x.db")
    assert db.execute("PRAGMA trusted_schema").fetchone()[0] == 0
    db.conn.create_function("side_effect", 0, lambda: 1)
    db.execute("CREATE VIEW v AS SELECT side_effect() AS x")
    with pytest.raises(sqlite3.OperationalError, match="unsafe use of side_effect"):
        db.execute("SELECT * FROM v").fetchall()


def test_an_import_killed_midway_leaves_nothing_that_outlives_it(exported, target, tmp_path):
    """SIGKILL cannot run the clean-up: the half-copied folder (the archive's size, every time) stayed
    forever and doctor called the directory healthy. Doctor removes it and says so, and so does the
    next import; an import in progress in another process is never touched (they take turns)."""
    import fcntl

    left = target / "guilds" / ".importing-42-0123456789abcdef"
    left.mkdir(parents=True)
    (left / "raptor.db").write_bytes(bytes(4096))
    busy = os.open(target, os.O_RDONLY)
    try:  # another process importing now (it holds the data directory's flock): its folder is not abandoned
        fcntl.flock(busy, fcntl.LOCK_EX)
        report = raptor(target, "doctor", "--json")
        assert left.exists() and json.loads(report.stdout)["repaired"] == []
    finally:
        os.close(busy)
    report = raptor(target, "doctor")
    assert report.returncode == 0, report.stdout + report.stderr
    assert f"problem: {left} is a half-imported store an interrupted import left (repaired)" in report.stdout
    assert not left.exists()
    left.mkdir()
    assert raptor(target, "guilds", "import", str(exported)).returncode == 0
    assert sorted(p.name for p in (target / "guilds").iterdir()) == ["42", "9"]


@pytest.mark.parametrize("numbers", [1000, 100])
def test_a_store_whose_vectors_are_not_the_models_size_is_never_searched_with_the_models(
    exported, target, tmp_path, numbers
):
    """Vectors of another size than the model's (every node's, so they index) are what a store of another
    model holds, so import takes them; hnswlib then read a 384-number question as `numbers` numbers: past
    its buffer for 1,000 (the first question aborted the process, 'malloc(): invalid size'), a silently
    meaningless search for 100. The question now gets one sentence, and the process lives."""
    resize = f"substr(embedding, 1, {4 * numbers})" if numbers < 384 else f"embedding || zeroblob({4 * (numbers - 384)})"
    hostile = rewrite(
        exported, tmp_path / "resized.tar",
        db_edit=lambda conn: conn.execute(f"UPDATE nodes SET embedding = CAST({resize} AS BLOB)"),
    )  # fmt: skip
    assert raptor(target, "guilds", "import", str(hostile)).returncode == 0
    asked = raptor(target, "ask", "How do bees keep warm?", "--kb", KB)
    assert asked.returncode == 1, (asked.returncode, asked.stderr[-500:])
    assert asked.stderr.strip() == (
        f"Error: This knowledge base's vectors have {numbers} numbers but the embedding model makes 384, so it "
        "cannot be searched; add its documents again, or set RAPTOR_EMBED_MODEL to the model that made them."
    ), asked.stderr
    other = raptor(target, "ask", "Who ran the railway?", "--kb", "guild-9-channel-3")
    assert other.returncode == 0, other.stderr


EDGE_CHECK = (
    "SELECT COUNT(*) FROM edges e JOIN nodes p ON p.id = e.parent_id JOIN nodes c ON c.id = e.child_id "
    "WHERE p.kb_id != c.kb_id OR e.kb_id != p.kb_id"
)


def _made_up_statistics(conn: sqlite3.Connection) -> None:
    """Planner statistics saying every table has one row and every index matches a million: SQLite then
    scans the nodes for each edge (the CPU of the edge check grew 16 times for 4 times the nodes)."""
    conn.execute("ANALYZE")
    conn.execute("DELETE FROM sqlite_stat1")
    tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    conn.executemany("INSERT INTO sqlite_stat1 VALUES (?, NULL, '1')", tables.fetchall())
    indexes = conn.execute(
        "SELECT tbl_name, name, (SELECT count(*) FROM pragma_index_info(name)) FROM sqlite_master WHERE type = 'index'"
    ).fetchall()
    conn.executemany(
        "INSERT INTO sqlite_stat1 VALUES (?, ?, ?)", [(t, i, "1" + " 1000000" * n) for t, i, n in indexes]
    )


def test_an_archives_planner_statistics_are_dropped_at_import(exported, target, tmp_path):
    """Before, an archive's `sqlite_stat1` was imported as it came and chose the plans of every query on the
    store: the made-up one turned import's and doctor's edge check into a scan of the nodes per edge."""
    hostile = rewrite(exported, tmp_path / "stats.tar", db_edit=_made_up_statistics)
    with sqlite3.connect(tmp_path / "stats.db") as conn:  # the archive's plan: every edge scans the nodes
        assert "SCAN p" in " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + EDGE_CHECK))
    done = raptor(target, "guilds", "import", str(hostile))
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(target / "guilds" / GUILD / "raptor.db") as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'sqlite_stat%'").fetchall() == []
        plan = " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + EDGE_CHECK))
    assert "SCAN p" not in plan and "SEARCH p USING INTEGER PRIMARY KEY" in plan
    assert raptor(target, "doctor", "--no-repair").stdout.strip() == "healthy"
