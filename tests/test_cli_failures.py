"""A failing `raptor` command says why in one line on stderr (exit 1); the traceback only with -v.

Real `raptor` processes: a read-only data directory (a read-only bind mount, which stops root too), an
unreadable index (the engine logs a warning with its traceback), an archive path whose folder does
not exist (an OSError no command catches); and, in-process, an unexpected exception from the engine.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from raptor_engine import Engine
from tests.sample_texts import RAILWAY
from tests.storage_faults import fill, read_only_view, small_disk
from tests.unhurried import unhurried_settings

ROOT = Path(__file__).resolve().parents[1]
KB = "notes"


def raptor(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "raptor_engine.cli", "--data-dir", str(data), *args],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory, embedder) -> Path:
    folder = tmp_path_factory.mktemp("cli") / "data"
    engine = Engine(unhurried_settings(data_dir=folder), embedder=embedder)
    asyncio.run(engine.ingest(KB, "railway.txt", RAILWAY.encode()))
    engine.close()
    return folder


@pytest.mark.parametrize(
    "command",
    [("ask", "When did the railway open?", "--kb", KB), ("doctor",), ("docs", "--kb", KB), ("guilds", "list")],
    ids=["ask", "doctor", "docs", "guilds list"],
)
def test_a_read_only_data_directory_is_one_line(data, tmp_path, command):
    with read_only_view(data, tmp_path / "ro") as view:
        done = raptor(view, *command)
    line = one_error_line(done)
    assert line == f"Error: The data directory {view} is read-only, or this user may not write it.", line
    assert done.stderr.strip() == line


@pytest.mark.parametrize(
    "command",
    [("ask", "When did the railway open?", "--kb", KB), ("doctor",), ("ingest", str(ROOT / "README.md"), "--kb", KB)],
    ids=["ask", "doctor", "ingest"],
)
def test_a_folder_where_the_database_file_should_be_is_named_as_such(tmp_path, command):
    """SQLite says only 'unable to open database file', which read as a permission problem."""
    (tmp_path / "data" / "raptor.db").mkdir(parents=True)
    line = one_error_line(raptor(tmp_path / "data", *command))
    assert line == f"Error: {tmp_path / 'data' / 'raptor.db'} is a folder, not a database file; move it aside or use another data directory."
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["raptor.db"]


@pytest.mark.parametrize(
    "command",
    [("ask", "When did the railway open?", "--kb", KB), ("doctor",), ("docs", "--kb", KB)],
    ids=["ask", "doctor", "docs"],
)
@pytest.mark.parametrize("full", ["bytes", "inodes"])
def test_a_full_disk_is_one_line_before_the_store_opens(data, tmp_path, command, full):
    """On a disk already full, SQLite cannot size its shared-memory file and says only "disk I/O
    error" (SQLITE_IOERR_SHMSIZE), or, with no inode left, "unable to open database file", which read
    as a read-only directory: the line must still say the disk is full, and nothing is changed."""
    import shutil

    with small_disk(tmp_path / "disk", 4, inodes=None if full == "bytes" else 64) as disk:
        copy = disk / "data"
        shutil.copytree(data, copy)
        for leftover in copy.glob("raptor.db-*"):
            leftover.unlink()
        before = (copy / "raptor.db").read_bytes()
        if full == "bytes":
            fill(disk, 0)
        else:
            use_every_inode(disk)
        line = one_error_line(raptor(copy, *command))
        assert line == f"Error: The data directory {copy} is on a full disk.", line
        assert (copy / "raptor.db").read_bytes() == before


@pytest.mark.parametrize("damage", ["truncated", "overwritten"])
@pytest.mark.parametrize("command", [("ask", "When did the railway open?", "--kb", KB), ("doctor",), ("docs", "--kb", KB)])
def test_a_damaged_database_is_named_in_one_line(data, tmp_path, damage, command):
    """SQLite is the truth, so a database cut short or overwritten cannot be rebuilt: every command,
    doctor included, says so in one sentence ("Unexpected DatabaseError: database disk image is
    malformed" told nothing), and nothing is written over the damaged file."""
    import shutil

    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    database = copy / "raptor.db"
    if damage == "truncated":
        with database.open("r+b") as handle:
            handle.truncate(5000)
    else:
        database.write_bytes(b"this is not a database, it was overwritten by mistake\n" * 200)
    before = database.read_bytes()
    line = one_error_line(raptor(copy, *command))
    assert line.startswith(f"Error: The data directory {copy} holds a damaged database ("), line
    assert line.endswith("restore its database from a backup (raptor doctor rebuilds only the indices)."), line
    assert database.read_bytes() == before


def two_server_stores_one_damaged(tmp_path: Path, embedder) -> tuple[Path, Path]:
    """A data directory with the stores of servers 42 and 43, 42's database cut short: (folder, that file)."""
    folder = tmp_path / "data"
    engine = Engine(unhurried_settings(data_dir=folder), embedder=embedder)
    try:
        for kb in ("guild-42-channel-7", "guild-43-channel-8"):
            asyncio.run(engine.ingest(kb, "railway.txt", RAILWAY.encode()))
    finally:
        engine.close()
    damaged = folder / "guilds" / "42" / "raptor.db"
    with damaged.open("r+b") as handle:
        handle.truncate(5000)
    return folder, damaged


def test_doctor_names_a_damaged_server_store_and_checks_the_rest(tmp_path, embedder):
    """One server's database cut short stopped `raptor doctor` at once with a sentence naming no file;
    it is a problem doctor reports by its store and path (it cannot be rebuilt), and the other stores
    are still checked and repaired."""
    folder, damaged = two_server_stores_one_damaged(tmp_path, embedder)
    for index in (folder / "guilds" / "43" / "indices").glob("*.json"):
        index.unlink()  # something doctor can repair in the healthy store
    done = raptor(folder, "doctor")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    problems = done.stdout.splitlines()
    assert (
        f"problem: space 42: the database {damaged} is damaged (database disk image is malformed); "
        "restore it from a backup" in problems
    ), done.stdout
    assert any(p.startswith("problem: space 43: ") and p.endswith("(repaired)") for p in problems), done.stdout
    assert raptor(folder, "ask", "When did the railway open?", "--kb", "guild-43-channel-8").returncode == 0


def test_guilds_list_names_a_damaged_store_and_lists_the_others(tmp_path, embedder):
    folder, damaged = two_server_stores_one_damaged(tmp_path, embedder)
    done = raptor(folder, "guilds", "list")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"42: the database {damaged} is damaged (database disk image is malformed); restore it from a backup"
    assert lines[1].startswith("43: 1 knowledge base(s), ")
    rows = json.loads(raptor(folder, "guilds", "list", "--json").stdout)
    assert "damaged" in rows[0] and rows[1]["knowledge_bases"] == ["guild-43-channel-8"] and "damaged" not in rows[1]


def test_an_engine_warning_is_logged_only_with_v_and_with_its_traceback(data, tmp_path):
    """An unreadable index is a problem doctor reports on stdout; the engine's warning about it, with
    its traceback, is a log line, and without -v nothing is logged."""
    import shutil

    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    (copy / "indices" / "kb-1.json").write_text("{not json")
    quiet = raptor(copy, "doctor", "--no-repair")
    assert quiet.stderr.strip() == "", quiet.stderr
    assert "the index of knowledge base 1 is missing or unreadable" in quiet.stdout, quiet.stdout
    verbose = raptor(copy, "-v", "doctor", "--no-repair")
    assert "index of kb 1 is unreadable" in verbose.stderr
    assert "Traceback" in verbose.stderr and "JSONDecodeError" in verbose.stderr


def use_every_inode(disk: Path) -> None:
    """Empty files on `disk` until it can hold no more (space left, no inode)."""
    count = 0
    while True:
        try:
            (disk / f"empty-{count}").touch()
        except OSError:
            return
        count += 1


def add_guild_42(data: Path, embedder) -> None:
    """A server's store to export (the module's knowledge base is in the default store)."""
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        asyncio.run(engine.ingest("guild-42-channel-7", "railway.txt", RAILWAY.encode()))
    finally:
        engine.close()


def test_an_os_error_no_command_catches_is_one_line(data, tmp_path, embedder):
    """An archive name longer than the file system allows: the export's own OSError, which no command
    turns into a sentence of its own, names the path the user gave."""
    add_guild_42(data, embedder)
    archive = tmp_path / ("g" * 300 + ".tar")
    done = raptor(data, "guilds", "export", "42", str(archive))
    line = one_error_line(done)
    assert line == f"Error: File name too long: {archive}.", line


@pytest.mark.parametrize("where", ["missing", "read-only"])
def test_an_export_where_it_cannot_be_written_names_that_folder(data, tmp_path, where):
    (tmp_path / "out").mkdir()
    if where == "missing":
        done = raptor(data, "guilds", "export", "42", str(tmp_path / "missing" / "guild.tar"))
        expected = f"{tmp_path / 'missing'} does not exist."
    else:
        with read_only_view(tmp_path / "out", tmp_path / "ro") as view:
            done = raptor(data, "guilds", "export", "42", str(view / "guild.tar"))
        expected = f"{view} is read-only for this user."
    archive = tmp_path / ("missing" if where == "missing" else "ro") / "guild.tar"
    assert one_error_line(done) == f"Error: Cannot write the archive to {archive}: {expected}"

def test_an_export_never_replaces_a_pipe_and_writes_through_a_link(data, tmp_path, embedder):
    """The archive is renamed over its path: a FIFO there (or, as root, a device node) would be
    destroyed, so it is refused in one sentence; a symlink stays a link and its target gets the archive."""
    add_guild_42(data, embedder)
    pipe = tmp_path / "guild.tar"
    os.mkfifo(pipe)
    line = one_error_line(raptor(data, "guilds", "export", "42", str(pipe)))
    assert line == (
        f"Error: Cannot write {pipe}: it is not a regular file (a device, pipe or socket); give the name of a file."
    ), line
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    (tmp_path / "archives").mkdir()
    link = tmp_path / "latest.tar"
    link.symlink_to(tmp_path / "archives" / "guild-42.tar")
    done = raptor(data, "guilds", "export", "42", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and tarfile.is_tarfile(tmp_path / "archives" / "guild-42.tar")


def test_an_unexpected_exception_is_one_line_and_its_traceback_is_logged(data, monkeypatch, caplog):
    from raptor_engine.cli import cli

    def broken(self, kb):
        raise RuntimeError("the store gave back something odd\nsecond line")

    monkeypatch.setattr(Engine, "documents", broken)
    caplog.set_level(logging.INFO, logger="raptor_engine")
    result = CliRunner().invoke(cli, ["--data-dir", str(data), "docs", "--kb", KB])
    assert result.exit_code == 1
    assert result.output == (
        "Error: Unexpected RuntimeError: the store gave back something odd (run with -v for the details).\n"
    )
    assert any(record.exc_info and record.exc_info[0] is RuntimeError for record in caplog.records)


def test_three_doctors_at_once_each_write_their_own_temporary_files(data, tmp_path):
    """Every writer of an index saves through a temporary file of its own: a fixed name (`kb-1.hnsw.tmp`,
    here made a folder so any writer using it fails) is never used, and three real `raptor doctor`
    rebuilding the same missing index at once all succeed and leave no temporary file."""
    import shutil

    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    indices = copy / "indices"
    for path in indices.iterdir():
        path.unlink()
    (indices / "kb-1.hnsw.tmp").mkdir()
    (indices / "kb-1.json.tmp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    doctors = [
        subprocess.Popen(
            [sys.executable, "-m", "raptor_engine.cli", "--data-dir", str(copy), "doctor"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
        )
        for _ in range(3)
    ]
    outputs = [doctor.communicate(timeout=300) for doctor in doctors]
    for doctor, (out, err) in zip(doctors, outputs, strict=True):
        assert doctor.returncode == 0, out + err
        assert "Traceback" not in err and out.strip().splitlines()[-1] in ("repaired", "healthy"), out + err
    assert sorted(p.name for p in indices.iterdir()) == ["kb-1.hnsw", "kb-1.hnsw.tmp", "kb-1.json", "kb-1.json.tmp"]
    assert raptor(copy, "doctor", "--no-repair").stdout.strip() == "healthy"


def test_without_v_a_log_record_is_one_line_without_its_traceback():
    """What Dask's and Python's warnings print through the CLI's handlers: the first line only."""
    from raptor_engine.cli import LOG_FORMAT, OneLineFormatter

    try:
        raise RuntimeError("worker lost")
    except RuntimeError:
        record = logging.LogRecord(
            "distributed.client", logging.ERROR, __file__, 1, "%s: coroutine never awaited\n  self.close()",
            ("client.py:1710",), sys.exc_info(),
        )
    shown = OneLineFormatter(LOG_FORMAT).format(record)
    assert shown.endswith("ERROR distributed.client: client.py:1710: coroutine never awaited"), shown
    assert "\n" not in shown and record.exc_info is not None  # the record itself is left whole for -v


@pytest.mark.parametrize(
    "command", [("docs", "--kb", KB), ("ask", "When did the railway open?", "--kb", KB, "--json")], ids=["docs", "ask"]
)
def test_a_reader_that_stops_reading_ends_the_command_quietly(data, command):
    """`raptor docs | head -1` and the like: a pipe its reader closed is not an error to report."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "raptor_engine.cli", "--data-dir", str(data), *command],
            stdout=write, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, timeout=300,
        )
    finally:
        os.close(write)
    assert done.stderr == ""  # no 'Error: Broken pipe.', no 'Exception ignored' at exit
    assert done.returncode == 141  # what a shell reports for a command its pipe's reader stopped (128 + SIGPIPE)


def test_ctrl_c_during_a_chat_exits_as_shells_expect(data):
    """Ctrl-C is how people leave `raptor chat` or stop a long command: one line, status 130 (128 +
    SIGINT) as a shell reports, not click's 'Aborted!' with status 1."""
    import signal

    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    chat = subprocess.Popen(
        [sys.executable, "-m", "raptor_engine.cli", "--data-dir", str(data), "chat", "--kb", KB],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a test runner may ignore it
    )
    try:
        assert chat.stdout.readline().startswith("Backend:")  # the prompt comes next: it waits for a line
        chat.send_signal(signal.SIGINT)
        out, err = chat.communicate(timeout=300)
    finally:
        chat.kill()
    assert chat.returncode == 130, err
    assert err.strip() == "Interrupted; nothing unfinished was stored.", err
    assert "Aborted" not in out + err and "Traceback" not in err


def test_ctrl_c_while_the_cli_loads_exits_as_shells_expect():
    """`raptor` spends a second or more importing the engine before any command runs: a Ctrl-C then
    printed a KeyboardInterrupt traceback and the process died of the signal. The interrupt is raised
    deterministically here, by the import of the engine's module."""
    probe = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'raptor_engine.engine':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from raptor_engine.cli import main\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", probe, "docs"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip() == "Interrupted; nothing unfinished was stored.", done.stderr


def test_ctrl_c_that_cuts_an_event_loop_short_prints_only_its_line(data):
    """On a loaded machine the Ctrl-C can land while `raptor chat` makes its event loop; the loop, half
    made, then failed in its `__del__` at exit ("Exception ignored in: BaseEventLoop.__del__ ...
    AttributeError: '_ssock'"). The same, deterministically: the interrupt leaves an object behind whose
    `__del__` fails."""
    script = f"""
import asyncio, sys
from raptor_engine import cli
class HalfMade:
    def __del__(self):
        raise AttributeError("'_UnixSelectorEventLoop' object has no attribute '_ssock'")
def interrupted(main, **kwargs):
    main.close()
    half = HalfMade()  # held by the interrupt's traceback, let go once it is handled
    raise KeyboardInterrupt
asyncio.run = interrupted
sys.argv = ["raptor", "--data-dir", {str(data)!r}, "chat", "--kb", {KB!r}]
cli.main()
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], input="", capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip() == "Interrupted; nothing unfinished was stored.", done.stderr


def test_ctrl_c_in_the_middle_of_storing_a_tree_leaves_none_of_it(tmp_path, embedder, monkeypatch):
    """A Ctrl-C that lands inside the transaction that stores a tree rolls all of it back: the next
    command sees the knowledge base as it was, and the same file then goes in whole."""
    from raptor_engine import cli as cli_module
    from raptor_engine.storage.store import Store

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # after the document's and its nodes' rows were written

    data = tmp_path / "data"
    source = tmp_path / "railway.txt"
    source.write_text(RAILWAY)
    monkeypatch.setattr(cli_module.Engine, "warm", lambda self, **kwargs: None)
    monkeypatch.setattr(Store, "_record_build", interrupted)
    runner = CliRunner()
    done = runner.invoke(cli_module.cli, ["--data-dir", str(data), "ingest", "--kb", KB, str(source)])
    assert done.exit_code == 130, done.output
    assert "Interrupted; nothing unfinished was stored." in done.output
    monkeypatch.undo()
    engine = Engine(unhurried_settings(data_dir=data), embedder=embedder)
    try:
        assert engine.store.db.execute("SELECT count(*) FROM nodes").fetchone()[0] == 0
        assert engine.store.db.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
        result = asyncio.run(engine.ingest(KB, "railway.txt", RAILWAY.encode()))
        assert result.status == "added"
    finally:
        engine.close()
