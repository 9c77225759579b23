"""Acting as a second local user (uid 65534, through `setpriv`) in the tests of what another user can do to
the bot's files: the mark that skips without root, a folder that user can reach, and a command run as them."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

OTHER_UID = 65534

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to act as another user"
)


def reachable_folder(prefix: str) -> Iterator[Path]:
    """A folder under /tmp that other users can reach (pytest's own are closed to them), owned by this
    user, mode 0755 (as /etc/raptor or a shared cache would be); removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base)


def as_other_user(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", *command],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
