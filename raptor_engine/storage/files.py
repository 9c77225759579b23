"""Files written for the user at a path they name (a tree picture, a store's archive): each is written
beside its path and renamed over it, so it appears whole or not at all. A rename replaces whatever
the path names, so it must land on a regular file: over a pipe or a device node it destroys that
(as root, a picture "written" to /dev/full replaced the device), and over a symlink it replaces the
link instead of writing where it points.

What is written before the rename lies beside the path as `.<name>.<pid>.tmp` (a file, or a folder of
an export's parts). A writer killed before its rename (SIGKILL, a power cut) leaves it there, in the
user's folder: the next writer of the same path removes those whose process is no longer running.

A symbolic link on the way to the path is followed only where its owner is this user or the owner of
the folder it is in (the rule of Linux's `fs.protected_symlinks`, which a path resolved here would
bypass): a link another user planted in a shared folder (`/tmp/g.tar -> /root/.ssh/authorized_keys`)
would make this process replace whatever file it names.
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from ..config import _folder_writers, _private_group
from ..errors import RaptorError

log = logging.getLogger(__name__)


def rename_target(path: Path) -> Path:
    """Where a finished file for `path` is renamed to: the file itself, a symlink's target; a path that
    names a device, pipe or socket is refused in one sentence."""
    if path.exists() and not path.is_file() and not path.is_dir():
        raise RaptorError(
            f"Cannot write {path}: it is not a regular file (a device, pipe or socket); give the name of a file."
        )
    return _followed(path.absolute(), hops=0)


MAX_LINKS = 40  # links followed for one path, as the kernel's ELOOP limit


def _followed(path: Path, *, hops: int) -> Path:
    """`path` with every symbolic link on it resolved, as `Path.resolve` does, refusing a link that
    another user planted in a folder that is not theirs (`_check_link_owner`)."""
    current = Path(path.anchor)
    for part in path.parts[1:]:
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        step = current / part
        if not step.is_symlink():
            current = step
            continue
        hops += 1
        if hops > MAX_LINKS:
            raise RaptorError(f"Cannot write {path}: it goes through more than {MAX_LINKS} symbolic links.")
        _check_link_owner(step)
        target = Path(os.readlink(step))
        current = _followed(target if target.is_absolute() else current / target, hops=hops)
    return current


def _check_link_owner(link: Path) -> None:
    """Refuse a link that belongs neither to this user nor to its folder's owner, in one sentence."""
    owner = link.lstat().st_uid
    if owner in (os.geteuid(), link.parent.stat().st_uid):
        return
    raise RaptorError(
        f"Cannot write {link}: it is a symbolic link of another user (uid {owner}) in a folder that is not "
        "theirs, so it is not followed; remove it or give another name."
    )


def create_new(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` to a file that did not exist: never through a link or over a file planted at the
    name (O_EXCL with O_NOFOLLOW), a partial's name being known in advance (`partial_path`). One of this
    user's at the name (a killed writer's of the same pid) is removed first; another user's raises
    FileExistsError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        handle = os.open(path, flags, mode)
    except FileExistsError:
        if path.lstat().st_uid != os.geteuid():
            raise
        path.unlink()
        handle = os.open(path, flags, mode)
    with os.fdopen(handle, "wb") as out:
        out.write(data)


def partial_path(target: Path) -> Path:
    """Where this process writes the file (or folder) it renames to `target` once it is whole."""
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


def _running(pid: int) -> bool:
    """Whether a process `pid` exists (another user's counts: its leftover is not ours to judge)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def sweep_partials(target: Path) -> list[Path]:
    """Remove the partial files killed writers of `target` left beside it (`partial_path`); a partial of
    a process still running (a writer at work, or an unrelated process that reused the pid) is left."""
    removed = []
    for leftover in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        pid = leftover.name[len(target.name) + 2 : -len(".tmp")]
        if not pid.isdigit() or pid == str(os.getpid()) or _running(int(pid)):
            continue
        try:
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover)
            else:
                leftover.unlink()
        except OSError:
            log.info("could not remove %s, left by a killed writer", leftover, exc_info=True)
            continue
        log.info("removed %s, left by a writer killed before it finished", leftover)
        removed.append(leftover)
    return removed


def make_private_folder(folder: Path) -> None:
    """Make `folder` (0700) and the missing folders on the way to it (0755): writable by this user only,
    whatever the umask. `mkdir(parents=True)` under umask 000 made `/tmp/x/y` 0777 on the way to the data
    directory `/tmp/x/y/data`, where any user could move that aside and put a data directory of theirs in
    its place, which is then used as it is (tried as uid 65534)."""
    for parent in reversed(folder.parents):
        if not parent.exists():
            parent.mkdir(mode=0o755, exist_ok=True)
    folder.mkdir(mode=0o700, exist_ok=True)  # OSError where a file is in the way, as mkdir says


@dataclass(frozen=True)
class PrivateFolder:
    """A folder this process trusts what it finds in: what it is called, what rides on it, what to do instead."""

    noun: str
    stake: str
    remedy: str


CACHE_FOLDER = PrivateFolder(
    "cache folder", "code this process loads is kept there", "set RAPTOR_CACHE_DIR to a folder of this user's"
)
DATA_DIRECTORY = PrivateFolder(
    "data directory",
    "this process writes through any link planted in it",
    "use one of this user's (--data-dir, RAPTOR_DATA_DIR), or run as its owner",
)


def keep_cache_private(folder: Path) -> Path:
    """`folder` (RAPTOR_CACHE_DIR), made if missing and this user's alone (0700), as the data directory is
    (`spaces.keep_private`): it holds code this process loads (numba's cache indexes are pickles, the ONNX
    model) and the shards' identify lock files, opened through any link at their name. Made under umask 000
    it was 0777, and a pickle uid 65534 put in it ran as root on the next upload (tried). RaptorError, one
    sentence, for a folder another user could change (`check_trusted_folder`)."""
    folder = Path(os.path.abspath(folder))
    check_no_foreign_link(folder, CACHE_FOLDER)
    try:
        make_private_folder(folder)
    except OSError as error:
        raise RaptorError(f"Cannot make the cache folder {folder}: {error.strerror or error}.") from None
    check_trusted_folder(folder, CACHE_FOLDER)
    was = close_folder(folder)
    if was is not None:
        log.info("made the cache folder %s this user's alone (it was mode %o)", folder, was)
    return folder


def check_no_foreign_link(folder: Path, kind: PrivateFolder) -> None:
    """RaptorError where a symbolic link of another user (not this one, not root) is on the way to `folder`:
    they may point it anywhere at any time. Checked before anything is made through it."""
    for step in (*reversed(folder.parents), folder):
        owner = step.lstat().st_uid if step.is_symlink() else os.geteuid()
        if owner not in (os.geteuid(), 0):
            _refuse(folder, kind, f"it is reached through {step}, a symbolic link of uid {owner}")


def check_trusted_folder(folder: Path, kind: PrivateFolder) -> None:
    """RaptorError, one sentence, for a folder another user could change: theirs, one they may write in (a
    group they share, or anyone, sticky or not: they could plant a link at a name this process opens), or one
    inside a folder they own or may write, not sticky (they could move it aside and put theirs in its place).
    A folder of this user's that others may write is not refused: `close_folder` closes it."""
    check_no_foreign_link(folder, kind)
    real = Path(os.path.realpath(folder))
    status = real.stat()
    if status.st_uid not in (os.geteuid(), 0) or not stat.S_ISDIR(status.st_mode):
        _refuse(folder, kind, f"it belongs to another user (uid {status.st_uid})")
    if status.st_uid != os.geteuid():  # root's, used by another user: they cannot close it
        why = _writers_of(status)
        if why:
            _refuse(folder, kind, why)
    for parent in real.parents:
        why = others_may_replace(parent)
        if why:
            _refuse(folder, kind, why)


def _writers_of(status: os.stat_result) -> str | None:
    if status.st_mode & stat.S_IWOTH:
        return f"any user can write in it (mode {stat.S_IMODE(status.st_mode):o})"
    if status.st_mode & stat.S_IWGRP and not _private_group(status.st_gid):
        return (
            f"every member of group {status.st_gid} can write in it (mode {stat.S_IMODE(status.st_mode):o})"
        )
    return None


def close_folder(folder: Path) -> int | None:
    """Make a folder of this user's that others may enter this user's alone (0700); the mode it had, or None
    where nothing changed (already closed, or another user's: root's is left as it is). OSError where it
    cannot be changed (a read-only file system)."""
    status = folder.stat()
    mode = stat.S_IMODE(status.st_mode)
    if status.st_uid != os.geteuid() or not mode & 0o077:
        return None
    folder.chmod(mode & 0o700)
    return mode


def others_may_replace(parent: Path) -> str | None:
    """Who besides this user and root could move a file or folder inside `parent` aside and put theirs there."""
    owner = parent.stat().st_uid
    if owner not in (os.geteuid(), 0):
        return f"it is inside {parent}, which belongs to another user (uid {owner})"
    return _folder_writers(parent)


def _refuse(folder: Path, kind: PrivateFolder, why: str) -> NoReturn:
    raise RaptorError(f"The {kind.noun} {folder} is not used: {why}, and {kind.stake}; {kind.remedy}.")
