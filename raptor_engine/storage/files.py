"""Files written for the user at a path they name (a tree picture, a store's archive): each is written
beside its path and renamed over it, so it appears whole or not at all. A rename replaces whatever
the path names, so it must land on a regular file: over a pipe or a device node it destroys that
(as root, a picture "written" to /dev/full replaced the device), and over a symlink it replaces the
link instead of writing where it points.

What is written before the rename lies beside the path as `.<name>.<pid>.tmp` (a file, or a folder of
an export's parts). A writer killed before its rename (SIGKILL, a power cut) leaves it there, in the
user's folder: the next writer of the same path removes those whose process is no longer running.
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
    return path.resolve()


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
