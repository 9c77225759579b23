"""Real file-system faults for tests: a read-only bind mount and a small tmpfs (both need root; a test
that cannot mount skips)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip()})")


def _unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def read_only_view(folder: Path, view: Path) -> Iterator[Path]:
    """`folder` seen read-only at `view` (a bind mount): writes there fail with EROFS, even for root."""
    view.mkdir(parents=True, exist_ok=True)
    _mount("--bind", "-o", "ro", str(folder), str(view))
    try:
        yield view
    finally:
        _unmount(view)


@contextlib.contextmanager
def small_disk(path: Path, megabytes: int, inodes: int | None = None) -> Iterator[Path]:
    """A tmpfs of `megabytes` at `path` (and at most `inodes` files): a disk that fills up."""
    path.mkdir(parents=True, exist_ok=True)
    limit = f",nr_inodes={inodes}" if inodes else ""
    _mount("-t", "tmpfs", "-o", f"size={megabytes}m{limit}", "tmpfs", str(path))
    try:
        yield path
    finally:
        _unmount(path)


def fill(disk: Path, leave_bytes: int) -> Path:
    """Fill `disk` with a file until only about `leave_bytes` are free (tmpfs counts 4 KiB pages)."""
    import shutil

    filler = disk / "filler"
    free = shutil.disk_usage(disk).free
    with filler.open("wb") as out:
        left = max(free - leave_bytes, 0)
        while left > 0:
            block = min(left, 1024 * 1024)
            out.write(bytes(block))
            left -= block
    return filler
