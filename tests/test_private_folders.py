"""The folders the engine and the bot make are this user's alone, whatever the umask.

- The cache folder (RAPTOR_CACHE_DIR, default ~/.cache/raptor) holds code the engine loads (numba's cache
  indexes are pickles, the ONNX model) and the shards' identify lock files, which the bot opens through any
  link at their name. Made under umask 000 it was 0777 with 0666 files: uid 65534 replaced a numba index with
  a pickle of theirs and the next upload ran it as root (tried).
- The data directory and the folders made on the way to it: under umask 000 `/tmp/x/y` was 0777 on the way
  to `/tmp/x/y/data`, and the bot made the data directory itself 0777 before the engine closed it.

Played as root, with uid 65534 (`setpriv`) as the other user."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.__main__ import data_dir_lock
from raptor_engine import Engine, Settings
from raptor_engine.errors import RaptorError
from raptor_engine.storage.spaces import keep_private
from raptor_engine.workers import worker_command
from tests.other_user import OTHER_UID, as_other_user, needs_root, reachable_folder
from tests.unhurried import unhurried_settings

ROOT = Path(__file__).resolve().parent.parent

# What the bot does with its cache folder at start: the engine, then the shard's identify slot (a lock file
# under RAPTOR_CACHE_DIR/identify, opened with "a+", truncated and written).
START = """
import os, sys
from pathlib import Path
os.umask(0)
from raptor_engine import Engine, Settings
from bot.gateway import claim_identify_slot
cache = Path(sys.argv[1])
Engine(Settings(data_dir=Path(sys.argv[2]), cache_dir=cache)).close()
claim_identify_slot(cache / "identify" / "app-bucket-0.lock", 0.0)
"""


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder other users can reach (pytest's own are closed to them), owned by this user, mode 0755."""
    yield from reachable_folder("raptor-cache-")


def start_bot_like(cache: Path, data: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", START, str(cache), str(data)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def engine(tmp_path: Path, cache: Path) -> Engine:
    return Engine(unhurried_settings(data_dir=tmp_path / "data", cache_dir=cache))


@needs_root
def test_under_umask_000_another_user_cannot_plant_a_link_at_the_identify_lock(shared):
    """Before, the cache folder, its identify folder and lock were 0777/0666: 65534 put a link at the lock's
    name and the next start wrote its timestamp over the file the link named (any file of root's)."""
    victim = shared / "victim"
    victim.write_text("root's own file\n")
    victim.chmod(0o600)
    cache = shared / "home" / ".cache" / "raptor"
    start_bot_like(cache, shared / "data")
    lock = cache / "identify" / "app-bucket-0.lock"
    planted = as_other_user("sh", "-c", f"rm -f {lock} && ln -s {victim} {lock}")
    start_bot_like(cache, shared / "data")
    assert victim.read_text() == "root's own file\n"
    assert planted.returncode != 0 and "Permission denied" in planted.stderr, planted
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    # the folders made on the way: no one else writes in them either
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o755


def test_a_cache_folder_of_this_users_that_others_may_write_is_closed(tmp_path):
    cache = tmp_path / "cache"
    (cache / "numba").mkdir(parents=True)
    cache.chmod(0o777)
    engine(tmp_path, cache).close()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


@needs_root
def test_a_cache_folder_another_user_made_first_is_refused_in_one_sentence(shared, tmp_path):
    """RAPTOR_CACHE_DIR in a shared folder (/tmp): whoever makes it first owns what the engine loads."""
    sticky = shared / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    cache = sticky / "raptor-cache"
    assert as_other_user("mkdir", "-m", "0777", str(cache)).returncode == 0
    with pytest.raises(RaptorError) as caught:
        engine(tmp_path, cache)
    assert str(caught.value) == (
        f"The cache folder {cache} is not used: it belongs to another user (uid {OTHER_UID}), and code this "
        "process loads is kept there; set RAPTOR_CACHE_DIR to a folder of this user's."
    )
    with pytest.raises(RaptorError, match="belongs to another user"):
        worker_command("tcp://127.0.0.1:8786", Settings(data_dir=tmp_path, cache_dir=cache))
    mine = sticky / "mine"  # this user's own, in the same sticky folder: others cannot move it aside
    engine(tmp_path, mine).close()
    assert stat.S_IMODE(mine.stat().st_mode) == 0o700


@needs_root
def test_a_cache_folder_reached_through_another_users_link_is_refused(shared, tmp_path):
    sticky = shared / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    target = tmp_path / "real-cache"
    target.mkdir()
    link = sticky / "cache"
    link.symlink_to(target)
    os.lchown(link, OTHER_UID, OTHER_UID)  # as `ln -s` by that user: they may point it elsewhere at any time
    with pytest.raises(
        RaptorError, match=rf"it is reached through {link}, a symbolic link of uid {OTHER_UID}"
    ):
        engine(tmp_path, link / "raptor")


@needs_root
def test_a_cache_folder_inside_a_folder_others_may_write_is_refused(shared, tmp_path):
    """A non-sticky folder others may write lets them rename the cache folder and put one of theirs there."""
    open_folder = shared / "srv"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    with pytest.raises(RaptorError, match=rf"it is in {open_folder}, where any user can replace it"):
        engine(tmp_path, open_folder / "raptor")
    theirs = shared / "theirs"
    theirs.mkdir()
    os.chown(theirs, OTHER_UID, OTHER_UID)
    with pytest.raises(RaptorError, match=rf"it is inside {theirs}, which belongs to another user"):
        engine(tmp_path, theirs / "raptor")


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


@needs_root
def test_under_umask_000_no_other_user_can_swap_the_folders_on_the_way_to_the_data_directory(shared):
    """Before, `raptor --data-dir /tmp/x/y/data` made x and y 0777: 65534 could move y aside and put a data
    directory of theirs there, which the next command uses as it is (another user's folder is left alone)."""
    data = shared / "x" / "y" / "data"
    with umask(0):
        Engine(unhurried_settings(data_dir=data, cache_dir=shared / "cache")).close()
    moved = as_other_user("mv", str(data.parent), str(data.parent.with_name("y.moved")))
    assert moved.returncode != 0 and "Permission denied" in moved.stderr, moved
    modes = [stat.S_IMODE(folder.stat().st_mode) for folder in (data.parents[1], data.parent, data)]
    assert modes == [0o755, 0o755, 0o700]


@needs_root
def test_under_umask_000_the_bots_lock_makes_the_data_directory_this_users_alone(shared):
    """The bot makes its data directory for its lock before the engine opens it: it was 0777 meanwhile, so
    another user could put files and links in it."""
    data = shared / "data"
    with umask(0), data_dir_lock(data):
        planted = as_other_user("touch", str(data / "planted"))
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert planted.returncode != 0 and "Permission denied" in planted.stderr, planted


def _theirs(shared: Path) -> Path:
    """A data directory uid 65534 made (as in /tmp, for a command run there), open to them."""
    sticky = shared / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    data = sticky / "data"
    assert as_other_user("mkdir", "-m", "0777", str(data)).returncode == 0
    return data


@needs_root
def test_the_cli_writes_nothing_through_a_link_in_a_data_directory_another_user_owns(shared):
    """Before, 65534's `raptor.db -> root's other SQLite database` had root's `raptor ingest` write the whole
    store (its tables, the document) into that database."""
    data = _theirs(shared)
    victim = shared / "victim.db"
    with contextlib.closing(sqlite3.connect(victim)) as conn:
        conn.execute("CREATE TABLE accounts (name TEXT)")
        conn.commit()
    assert as_other_user("ln", "-s", str(victim), str(data / "raptor.db")).returncode == 0
    note = shared / "note.md"
    note.write_text("# Tide\n\nThe tide rose at dawn over the harbour.\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "raptor_engine.cli", "--data-dir", str(data), "ingest", "--kb", "t", str(note)],
        env=env, capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    with contextlib.closing(sqlite3.connect(victim)) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert tables == ["accounts"]
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip() == (
        f"Error: The data directory {data} is not used: it belongs to another user (uid {OTHER_UID}), and this "
        "process writes through any link planted in it; use one of this user's (--data-dir, RAPTOR_DATA_DIR), or "
        "run as its owner."
    )


@needs_root
def test_the_bot_writes_nothing_through_a_link_in_a_data_directory_another_user_owns(shared):
    """Before, 65534's `bot.lock -> a file of root's` had root's bot write its pid over that file at start."""
    data = _theirs(shared)
    victim = shared / "victim"
    victim.write_text("root's own file\n")
    assert as_other_user("ln", "-s", str(victim), str(data / "bot.lock")).returncode == 0
    with pytest.raises(RaptorError, match=r"^The data directory .* is not used: it belongs to another user"):
        with data_dir_lock(data):
            pass
    assert victim.read_text() == "root's own file\n"


def test_a_data_directory_of_roots_that_others_may_write_in_is_refused_to_another_user(tmp_path, monkeypatch):
    """Root's folder (as /tmp itself) used by another user: anyone may plant names in it, and only root can
    close it. Root's own use of it is closed as before (`close_folder`)."""
    data = tmp_path / "open"
    data.mkdir()
    data.chmod(0o1777)
    if data.stat().st_uid != 0:
        pytest.skip("needs a folder of root's")
    monkeypatch.setattr(os, "geteuid", lambda: OTHER_UID)  # this process, as another user sees the folder
    with pytest.raises(RaptorError, match=r"is not used: any user can write in it \(mode 1777\)"):
        keep_private(data)
