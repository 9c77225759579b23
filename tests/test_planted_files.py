"""What another local user can plant where this process reads or writes a file it is given: a symbolic
link at the path of an export or a tree picture (in a shared folder such as /tmp, whose owner is root),
a file at the name of its partial, and a `.env` in the folder a command runs in. Played as root, the
links and files given to uid 65534 as `ln -s` by that user would make them."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from raptor_engine import Settings
from raptor_engine.cli import _write_png
from raptor_engine.config import load_dotenv_file
from raptor_engine.errors import RaptorError
from raptor_engine.storage.archive import export_space
from raptor_engine.storage.files import create_new, partial_path, rename_target
from raptor_engine.storage.spaces import Spaces
from tests.test_private_data import _environ_put_back as _secrets_put_back

OTHER_UID = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a link to another user")


@pytest.fixture
def shared(tmp_path) -> tuple[Path, Path]:
    """A sticky folder anyone can write in (as /tmp), and a file of this user's elsewhere (the victim)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    victim = tmp_path / "private" / "victim"
    victim.parent.mkdir(mode=0o700)
    victim.write_text("this user's own file\n")
    return folder, victim


def _plant(link: Path, target: Path, uid: int = OTHER_UID) -> Path:
    link.symlink_to(target)
    os.lchown(link, uid, uid)
    return link


@needs_root
def test_an_export_does_not_follow_another_users_link_to_replace_a_file(tmp_path, shared):
    """Before, `raptor guilds export 42 /tmp/g.tar` over 65534's `/tmp/g.tar -> /root/...` replaced that
    file with the archive (tried: the victim became the 399 kB tar)."""
    folder, victim = shared
    archive = _plant(folder / "g.tar", victim)
    spaces = Spaces(Settings(data_dir=tmp_path / "data"))
    try:
        with spaces.pinned("42", create=True):
            pass
        with pytest.raises(RaptorError, match=r"is a symbolic link of another user \(uid 65534\)"):
            export_space(spaces, "42", archive)
    finally:
        spaces.close()
    assert victim.read_text() == "this user's own file\n"
    assert sorted(p.name for p in folder.iterdir()) == ["g.tar"]  # nothing half-written left


@needs_root
@pytest.mark.parametrize("where", ["the file", "a folder on the way", "a link to a link"])
def test_a_picture_does_not_follow_another_users_link(shared, where):
    folder, victim = shared
    if where == "the file":
        path = _plant(folder / "t.png", victim)
    elif where == "a folder on the way":
        path = _plant(folder / "pictures", victim.parent) / "victim"
    else:
        mine = _plant(folder / "mine.png", folder / "theirs.png", uid=os.geteuid())
        _plant(folder / "theirs.png", victim)
        path = mine
    with pytest.raises(click.ClickException, match="symbolic link of another user"):
        _write_png(path, b"\x89PNG not this user's file")
    assert victim.read_text() == "this user's own file\n"


def test_a_link_of_this_users_own_is_followed_and_stays_a_link(tmp_path, shared):
    """A user's own link (or the folder owner's) is written through, as before: the picture lands where it points."""
    folder, victim = shared
    link = folder / "mine.png"
    link.symlink_to(victim)
    _write_png(link, b"\x89PNG picture")
    assert link.is_symlink() and victim.read_bytes() == b"\x89PNG picture"
    dotted = tmp_path / "a" / ".." / "b.png"
    (tmp_path / "a").mkdir()
    assert rename_target(dotted) == (tmp_path / "b.png").resolve()


@needs_root
def test_a_partial_planted_at_the_name_this_process_writes_is_not_written_through(shared):
    """A picture is written beside its path as `.<name>.<pid>.tmp`: a name known in advance, where another
    user's link used to be followed (the write opened it) before the rename."""
    folder, victim = shared
    target = folder / "p.png"
    planted = _plant(partial_path(target), victim)
    with pytest.raises(FileExistsError):
        create_new(planted, b"picture")
    with pytest.raises(click.ClickException, match="is in the way"):
        _write_png(target, b"picture")
    assert victim.read_text() == "this user's own file\n" and not target.exists()


def test_a_partial_of_this_users_own_at_the_name_is_replaced(tmp_path):
    """One a killed writer of the same pid left (this user's) does not block the next write."""
    stale = partial_path(tmp_path / "p.png")
    stale.write_bytes(b"half")
    create_new(stale, b"whole")
    assert stale.read_bytes() == b"whole"


@contextlib.contextmanager
def _environ_put_back() -> Iterator[None]:
    """test_private_data's (the environment put back after), without the variables these tests' `.env` set."""
    with _secrets_put_back():
        for name in ("PYTHONPATH", "HTTPS_PROXY", "LD_PRELOAD", "RAPTOR_BUDGET", "RAPTOR_TOP_K"):
            os.environ.pop(name, None)
        yield


def _dotenv(folder: Path, text: str, mode: int = 0o600, uid: int | None = None) -> Path:
    path = folder / ".env"
    path.write_text(text)
    path.chmod(mode)
    if uid is not None:
        os.chown(path, uid, uid)
    return path


HOSTILE = "PYTHONPATH=/tmp/evil\nHTTPS_PROXY=http://127.0.0.1:9\nLD_PRELOAD=/tmp/evil.so\nRAPTOR_BUDGET=1500\n"


def test_a_dotenv_sets_only_the_projects_settings(tmp_path, caplog):
    """Before, every variable of a `.env` went into the environment: PYTHONPATH from it ran a
    sitecustomize.py in the upload parser's process (tried as root: it wrote a file), HTTPS_PROXY
    would carry the LLM key and every question to whoever runs the proxy."""
    with _environ_put_back():
        load_dotenv_file(_dotenv(tmp_path, HOSTILE))
        assert os.environ.get("RAPTOR_BUDGET") == "1500"
        assert [name for name in ("PYTHONPATH", "HTTPS_PROXY", "LD_PRELOAD") if name in os.environ] == []
    assert "sets HTTPS_PROXY, LD_PRELOAD, PYTHONPATH, which are not among this project's settings" in caplog.text
    assert "/tmp/evil" not in caplog.text  # names, never values


@pytest.mark.parametrize("who", ["another user's", "anyone's to write"])
def test_a_dotenv_another_user_could_have_written_is_not_read(tmp_path, caplog, who):
    """`.env` is read from whatever folder a command runs in: one there that another user made, or can
    change, chose the data directory, the LLM server (and so where the key goes) and more."""
    if who == "another user's" and os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    text = "RAPTOR_BUDGET=1500\nOPENAI_BASE_URL=http://127.0.0.1:9/v1\n"
    path = _dotenv(tmp_path, text, 0o644, OTHER_UID) if who == "another user's" else _dotenv(tmp_path, text, 0o666)
    with _environ_put_back():
        os.environ.pop("OPENAI_BASE_URL", None)
        load_dotenv_file(path)
        assert "RAPTOR_BUDGET" not in os.environ and "OPENAI_BASE_URL" not in os.environ
    reason = "it belongs to another user (uid 65534)" if who == "another user's" else "any user can write it"
    assert f".env is not read: {reason}" in caplog.text


def test_the_environment_still_wins_over_a_dotenv(tmp_path):
    with _environ_put_back():
        os.environ["RAPTOR_BUDGET"] = "900"
        load_dotenv_file(_dotenv(tmp_path, "RAPTOR_BUDGET=1500\nRAPTOR_TOP_K=7\n"))
        assert os.environ["RAPTOR_BUDGET"] == "900" and os.environ["RAPTOR_TOP_K"] == "7"


def test_a_fifo_planted_as_dotenv_is_not_read_and_holds_nothing_up(tmp_path, caplog):
    """`.env` is read from whatever folder a command runs in: a FIFO another user made there blocked the
    opening of it, so every command run in that folder hung until someone wrote to the FIFO."""
    path = tmp_path / ".env"
    os.mkfifo(path)
    reader = threading.Thread(target=load_dotenv_file, args=(path,), daemon=True)
    with _environ_put_back():
        reader.start()
        reader.join(60)  # liveness, not a timing: it returns at once, or never while nobody writes
        hung = reader.is_alive()
        if hung:  # let the blocked open return, so the thread ends
            with open(path, "w") as writer:
                writer.write("RAPTOR_BUDGET=1500\n")
            reader.join(60)
        assert not hung, "reading .env blocked on a FIFO"
        assert "RAPTOR_BUDGET" not in os.environ
    assert ".env is not read: it is not a regular file" in caplog.text
def _write_as_other_user(path: Path, line: str) -> bool:
    """Append `line` to `path` as uid 65534 with group 65534 (a member of the file's group): whether it went in."""
    import subprocess

    script = f"printf '%s\\n' {line!r} >> {str(path)!r}"
    done = subprocess.run(
        ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", "sh", "-c", script],
        capture_output=True,
    )
    return done.returncode == 0


@needs_root
def test_a_dotenv_a_group_can_write_is_not_read(tmp_path, caplog):
    """Before, a `.env` of this user's that its group could write (0664, as `cp` under umask 002 makes it) was
    read: a member of the group (played by uid 65534, the group's) appended RAPTOR_DATA_DIR and the next
    command used it. The data directory is kept 0700, so no group writes the bot's data; nor its settings."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="raptor-dotenv-", dir="/tmp"))  # one uid 65534 can reach
    try:
        base.chmod(0o755)
        path = _dotenv(base, "RAPTOR_BUDGET=1500\n", 0o664)
        os.chown(path, 0, OTHER_UID)
        assert _write_as_other_user(path, "RAPTOR_TOP_K=7")  # the attack is real: the group member wrote it
        with _environ_put_back():
            load_dotenv_file(path)
            assert "RAPTOR_BUDGET" not in os.environ and "RAPTOR_TOP_K" not in os.environ
        assert f".env is not read: every member of group {OTHER_UID} can write it (mode 664)" in caplog.text
        path.chmod(0o644)  # the same file, once only its owner may write it, is read
        with _environ_put_back():
            load_dotenv_file(path)
            assert os.environ.get("RAPTOR_TOP_K") == "7"
    finally:
        shutil.rmtree(base)


@needs_root
@pytest.mark.parametrize("folder_mode", [0o775, 0o777])
def test_a_dotenv_in_a_folder_others_can_write_is_not_read(tmp_path, caplog, folder_mode):
    """In a folder a group (or anyone) may write, that group can remove this user's `.env` and put another in
    its place; a sticky folder (as /tmp) keeps each file its owner's, so a `.env` there is read."""
    folder = tmp_path / "project"
    folder.mkdir()
    os.chown(folder, 0, OTHER_UID)
    folder.chmod(folder_mode)
    path = _dotenv(folder, "RAPTOR_BUDGET=1500\n")
    with _environ_put_back():
        load_dotenv_file(path)
        assert "RAPTOR_BUDGET" not in os.environ
    assert f".env is not read: it is in {folder}, where " in caplog.text
    folder.chmod(folder_mode | 0o1000)
    with _environ_put_back():
        load_dotenv_file(path)
        assert os.environ.get("RAPTOR_BUDGET") == "1500"


@needs_root
def test_a_dotenv_link_another_user_planted_is_not_followed(tmp_path, caplog):
    """A `.env` link of another user's in a folder not theirs (sticky and shared, as /tmp) pointing at a
    file of this user's (another project's settings, with its token) is not followed; this user's own is."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    elsewhere = tmp_path / "other-project"
    elsewhere.mkdir()
    target = _dotenv(elsewhere, "RAPTOR_BUDGET=1500\n")
    link = shared / ".env"
    link.symlink_to(target)
    os.lchown(link, OTHER_UID, OTHER_UID)
    with _environ_put_back():
        load_dotenv_file(link)
        assert "RAPTOR_BUDGET" not in os.environ
    assert f"is reached through a symbolic link of another user (uid {OTHER_UID})" in caplog.text
    os.lchown(link, 0, 0)
    with _environ_put_back():
        load_dotenv_file(link)
        assert os.environ.get("RAPTOR_BUDGET") == "1500"


def _users_of_group(gid: int) -> set[int]:
    """Every account in group `gid`, as a member or by its own group (read from the system, not the code)."""
    import grp
    import pwd

    named = {pwd.getpwnam(name).pw_uid for name in grp.getgrgid(gid).gr_mem}
    return named | {user.pw_uid for user in pwd.getpwall() if user.pw_gid == gid}


@needs_root
@pytest.mark.skipif(os.geteuid() == 0 and _users_of_group(0) - {0}, reason="root's group has other users here")
def test_a_dotenv_of_a_private_group_under_umask_002_is_read(tmp_path, caplog):
    """Debian and Ubuntu give each user a group of their own and umask 002, so an editor's `.env` is 0664 in a
    0775 folder of the same private group: no one else can write either, and the settings are read (refusing
    them dropped a typical user's DISCORD_TOKEN); the same modes with a group others are in are refused."""
    folder = tmp_path / "project"
    folder.mkdir()
    os.chown(folder, 0, 0)
    folder.chmod(0o775)
    path = _dotenv(folder, "RAPTOR_BUDGET=1500\n", mode=0o664)
    os.chown(path, 0, 0)
    with _environ_put_back():
        load_dotenv_file(path)
        assert os.environ.get("RAPTOR_BUDGET") == "1500"
    assert "is not read" not in caplog.text
    os.chown(path, 0, OTHER_UID)  # a group uid 65534 is in: refused as before
    with _environ_put_back():
        load_dotenv_file(path)
        assert "RAPTOR_BUDGET" not in os.environ
