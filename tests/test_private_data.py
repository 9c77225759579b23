"""The data directory is this user's alone: it holds the documents people trust the bot with, their
questions and the bot's records, so no other local user may read them."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from raptor_engine import Settings
from raptor_engine.config import SECRET_VARS
from raptor_engine.errors import RaptorError
from raptor_engine.storage.archive import export_space
from raptor_engine.storage.spaces import Spaces, keep_private

OTHER_UID = 65534


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_data_directory_is_made_private(tmp_path):
    data = tmp_path / "deep" / "data"
    spaces = Spaces(Settings(data_dir=data))
    try:
        assert mode(data) == 0o700
        assert (data / "raptor.db").exists()
    finally:
        spaces.close()


def test_an_open_data_directory_of_ours_is_closed_with_a_line_in_the_log(tmp_path, caplog):
    data = tmp_path / "data"  # as a git clone makes the repository's data/: 0755
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    with caplog.at_level("INFO", logger="raptor_engine.storage.spaces"):
        keep_private(data)
    assert mode(data) == 0o700
    assert "readable by this user only" in caplog.text


def test_a_private_directory_is_left_as_it_is(tmp_path, caplog):
    data = tmp_path / "data"
    data.mkdir(mode=0o500)
    with caplog.at_level("INFO", logger="raptor_engine.storage.spaces"):
        keep_private(data)
    assert mode(data) == 0o500
    assert caplog.text == ""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another user")
def test_another_users_directory_is_refused_and_not_changed(tmp_path):
    """Its owner could plant a link at any name the bot opens there (tests/test_private_folders.py)."""
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o775)
    os.chown(data, OTHER_UID, OTHER_UID)
    with pytest.raises(RaptorError, match=r"is not used: it belongs to another user \(uid 65534\)"):
        keep_private(data)
    assert mode(data) == 0o775


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to act as another user"
)
def test_another_local_user_cannot_read_the_store():
    # pytest's own temporary folders are closed to others, so the check would pass whatever the engine
    # did: the folders above the data directory here are open, as a home directory or /srv often is
    base = Path(tempfile.mkdtemp(prefix="raptor-private-", dir="/tmp"))
    try:
        base.chmod(0o755)
        data = base / "data"
        data.mkdir()
        data.chmod(0o755)
        spaces = Spaces(Settings(data_dir=data))
        spaces.close()
        assert (
            os.stat(data / "raptor.db").st_mode & 0o004
        )  # the file itself is readable: the folder guards it
        tried = subprocess.run(
            ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", "cat", str(data / "raptor.db")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert tried.returncode != 0
        assert "Permission denied" in tried.stderr
    finally:
        shutil.rmtree(base)


def test_an_exported_archive_is_this_users_alone(tmp_path):
    """`raptor guilds export` writes every document, question and thread of a guild into one file: under a
    umask of 022 it was mode 0644, readable by every local user wherever it was written."""
    spaces = Spaces(Settings(data_dir=tmp_path / "data"))
    old = os.umask(0o022)
    try:
        with spaces.pinned("42", create=True):
            pass
        archive = tmp_path / "guild-42.tar"
        export_space(spaces, "42", archive)
    finally:
        os.umask(old)
        spaces.close()
    assert mode(archive) == 0o600


@pytest.mark.parametrize("planted", ["database", "space folder", "guilds folder"])
def test_a_store_reached_through_a_planted_link_is_not_opened(tmp_path, planted):
    """Whoever can write in a data directory (one another user made, or left open) can plant a link where a
    guild's store goes: to another guild's store, or to any file this user may write, which the engine would
    then read and write as that guild's (an empty file became a SQLite store)."""
    data, victim = tmp_path / "data", tmp_path / "elsewhere"
    (victim / "guilds" / "42").mkdir(parents=True)
    (victim / "guilds" / "42" / "raptor.db").write_bytes(b"")
    links = {
        "database": (data / "guilds" / "42" / "raptor.db", victim / "guilds" / "42" / "raptor.db"),
        "space folder": (data / "guilds" / "42", victim / "guilds" / "42"),
        "guilds folder": (data / "guilds", victim / "guilds"),
    }
    link, target = links[planted]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    spaces = Spaces(Settings(data_dir=data))
    try:
        assert spaces.names() == []
        with pytest.raises(
            RaptorError, match=r"^The store of space 42 in .* is reached through a symbolic link"
        ):
            with spaces.pinned("42", create=True):
                pass
    finally:
        spaces.close()
    assert (victim / "guilds" / "42" / "raptor.db").read_bytes() == b""
    assert sorted(p.name for p in (victim / "guilds" / "42").iterdir()) == ["raptor.db"]


@contextlib.contextmanager
def _environ_put_back() -> Iterator[None]:
    """Reading a `.env` puts its variables into os.environ (a token, a key, RAPTOR_BUDGET): the test's
    environment is put back as it was, and starts without the secrets, so the `.env`'s are read."""
    saved = dict(os.environ)
    for name in SECRET_VARS:
        os.environ.pop(name, None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def own_environ():
    with _environ_put_back():
        yield


def _dotenv(folder: Path, text: str, file_mode: int) -> Path:
    path = folder / ".env"
    path.write_text(text)
    path.chmod(file_mode)
    return path


@pytest.mark.parametrize("secret", ["DISCORD_TOKEN=abc.def.ghi\n", "OPENAI_API_KEY='sk-test'\n"])
def test_a_dotenv_holding_a_secret_is_made_this_users_alone(
    tmp_path, monkeypatch, caplog, own_environ, secret
):
    """`cp .env.example .env` then pasting the token gives a 0644 file: every local user could read it."""
    monkeypatch.chdir(tmp_path)
    path = _dotenv(tmp_path, "RAPTOR_BUDGET=1500\n" + secret, 0o644)
    Settings.from_env(data_dir=tmp_path / "data")
    assert mode(path) == 0o600
    assert "readable by this user only" in caplog.text and secret.split("=")[0] in caplog.text
    assert (
        "abc.def" not in caplog.text and "sk-test" not in caplog.text
    )  # the log names the variable, not its value


def test_a_dotenv_with_a_byte_of_another_encoding_is_read_and_made_private(
    tmp_path, monkeypatch, caplog, own_environ
):
    """review25: the secret check read `.env` a second time, by name and strictly as UTF-8: a comment saved as
    Latin-1 ('café') beside the token stopped every command with a UnicodeDecodeError."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / ".env"
    path.write_bytes(b"# caf\xe9 opening hours\nDISCORD_TOKEN=abc.def.ghi\nRAPTOR_BUDGET=1500\n")
    path.chmod(0o644)
    settings = Settings.from_env(data_dir=tmp_path / "data")
    assert settings.budget == 1500 and settings.discord_token == "abc.def.ghi"
    assert mode(path) == 0o600 and "readable by this user only" in caplog.text


def test_a_dotenv_without_a_secret_or_private_already_is_left_as_it_is(
    tmp_path, monkeypatch, caplog, own_environ
):
    monkeypatch.chdir(tmp_path)
    plain = _dotenv(tmp_path, "RAPTOR_BUDGET=1500\nDISCORD_TOKEN=\n", 0o644)
    Settings.from_env(data_dir=tmp_path / "data")
    assert mode(plain) == 0o644
    private = _dotenv(tmp_path, "DISCORD_TOKEN=abc\n", 0o600)
    Settings.from_env(data_dir=tmp_path / "data")
    assert mode(private) == 0o600 and "readable by this user only" not in caplog.text


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to act as another user"
)
def test_another_local_user_cannot_read_the_dotenv_once_the_bot_read_it(monkeypatch, own_environ):
    base = Path(tempfile.mkdtemp(prefix="raptor-dotenv-", dir="/tmp"))
    try:
        base.chmod(0o755)  # a checkout in a home directory others may enter, or /srv
        path = _dotenv(base, "DISCORD_TOKEN=abc.def.ghi\n", 0o644)
        other = [
            "setpriv",
            f"--reuid={OTHER_UID}",
            f"--regid={OTHER_UID}",
            "--clear-groups",
            "cat",
            str(path),
        ]
        assert (
            subprocess.run(other, capture_output=True, text=True, timeout=60).stdout
            == "DISCORD_TOKEN=abc.def.ghi\n"
        )
        monkeypatch.chdir(base)
        Settings.from_env(data_dir=base / "data")
        tried = subprocess.run(other, capture_output=True, text=True, timeout=60)
        assert tried.returncode != 0 and "Permission denied" in tried.stderr
    finally:
        shutil.rmtree(base)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_another_users_dotenv_is_not_changed(tmp_path, monkeypatch, own_environ):
    monkeypatch.chdir(tmp_path)
    path = _dotenv(tmp_path, "DISCORD_TOKEN=abc\n", 0o644)
    os.chown(path, OTHER_UID, OTHER_UID)
    Settings.from_env(data_dir=tmp_path / "data")
    assert mode(path) == 0o644


def test_the_dotenv_tests_leave_no_variable_behind(tmp_path, monkeypatch):
    """What a `.env` read inside the tests' environment put there (a secret, a setting) is gone after."""
    monkeypatch.chdir(tmp_path)
    _dotenv(tmp_path, "RAPTOR_BUDGET=1500\nDISCORD_TOKEN=abc.def.ghi\nOPENAI_API_KEY=sk-test\n", 0o600)
    before = dict(os.environ)
    with _environ_put_back():
        Settings.from_env(data_dir=tmp_path / "data")
        assert os.environ.get("DISCORD_TOKEN") == "abc.def.ghi"  # the `.env` was read
    assert dict(os.environ) == before
