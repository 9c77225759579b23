"""Python modules another local user left in the folder a command runs in (a shared folder such as /tmp)
are never imported by the processes the project starts. `python -m` puts the working directory first on
the new process's path: `cd /tmp; raptor ingest note.md` ran a `raptor_engine/__init__.py` uid 65534 had
put in /tmp, as the user running the command, in the upload parser's process (tried)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from raptor_engine import Settings
from raptor_engine.ingest.parse_worker import WorkerLimits, discard_spare, load_isolated
from raptor_engine.workers import worker_command, worker_environment


@pytest.fixture
def planted(tmp_path) -> tuple[Path, Path]:
    """A shared folder holding another user's packages named as the ones the children import, each writing
    a marker file when imported; the folder and the marker's path."""
    folder = tmp_path / "shared"
    marker = tmp_path / "ran-planted-code"
    for package in ("raptor_engine", "distributed", "multiprocessing"):
        (folder / package).mkdir(parents=True)
        (folder / package / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write({package!r} + '\\n')\nraise SystemExit(7)\n"
        )
    return folder, marker


@pytest.fixture(autouse=True)
def _no_spare_left():
    discard_spare()  # a spare parse child started elsewhere, or in the planted folder
    yield
    discard_spare()


def test_the_parse_child_imports_nothing_from_the_folder_the_command_runs_in(planted, monkeypatch):
    folder, marker = planted
    monkeypatch.chdir(folder)
    document, _ = load_isolated(
        "note.md", b"# Tide\n\nThe tide rose at dawn over the harbour.\n", WorkerLimits()
    )
    assert not marker.exists(), marker.read_text()
    assert "The tide rose at dawn" in document.text


def test_raptor_worker_imports_nothing_from_the_folder_it_runs_in(planted, tmp_path):
    folder, marker = planted
    command = worker_command(
        "tcp://127.0.0.1:8786", Settings(data_dir=tmp_path / "data", cache_dir=tmp_path / "c")
    )
    module = command.index("distributed.cli.dask_worker")
    done = subprocess.run(
        [*command[: module + 1], "--help"],
        cwd=folder, env=worker_environment(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0 and "--nworkers" in done.stdout, done.stderr[-2000:]
