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
from pathlib import Path

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
