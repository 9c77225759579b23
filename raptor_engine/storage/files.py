"""Files written for the user at a path they name (a tree picture, a store's archive): each is written
beside its path and renamed over it, so it appears whole or not at all. A rename replaces whatever
the path names, so it must land on a regular file: over a pipe or a device node it destroys that
(as root, a picture "written" to /dev/full replaced the device), and over a symlink it replaces the
link instead of writing where it points.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RaptorError


def rename_target(path: Path) -> Path:
    """Where a finished file for `path` is renamed to: the file itself, a symlink's target; a path that
    names a device, pipe or socket is refused in one sentence."""
    if path.exists() and not path.is_file() and not path.is_dir():
        raise RaptorError(
            f"Cannot write {path}: it is not a regular file (a device, pipe or socket); give the name of a file."
        )
    return path.resolve()
