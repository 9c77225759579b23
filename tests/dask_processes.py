"""A real multi-process Dask cluster for tests: `dask scheduler` and `raptor worker` processes on
127.0.0.1 with random ports, as an operator would start them (docs/SCALING.md)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.unhurried import patient

ROOT = Path(__file__).resolve().parent.parent


def stop_process(proc: subprocess.Popen, grace: float = 20) -> None:
    """Ask a process to stop, and kill it if it has not within `grace` seconds (stretched by the machine's
    load): a test's teardown must end, and a worker shutting down slowly under load is not what it tests."""
    proc.terminate()
    try:
        proc.wait(patient(grace))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_for_file(path: Path, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size:
            try:
                return json.loads(path.read_text())
            except json.JSONDecodeError:
                pass
        time.sleep(0.1)
    raise AssertionError(f"the scheduler did not write {path} in {timeout} s")


@contextlib.contextmanager
def dask_processes(
    tmp: Path, workers: int, env: dict[str, str] | None = None, scheduler_args: tuple[str, ...] = ()
) -> Iterator[str]:
    """Start a scheduler (with `scheduler_args`, e.g. its TLS files) and `workers` raptor workers; yield the
    scheduler's address; stop them all."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    scheduler_file = tmp / "scheduler.json"
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(scheduler_file), *scheduler_args],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(tmp / "scheduler.log", "w"),
        )
    ]  # fmt: skip
    try:
        address = _wait_for_file(scheduler_file, patient(60))["address"]
        for i in range(workers):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "raptor_engine.cli", "worker", address, "--name", f"w{i}"],
                    env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(tmp / f"worker{i}.log", "w"),
                )
            )  # fmt: skip
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()  # all asked at once, so they stop side by side
        for proc in reversed(procs):
            stop_process(proc)


def listening_pid(address: str) -> int:
    """The process listening at `address` (tcp://127.0.0.1:PORT): to stop a scheduler or worker."""
    import psutil

    port = int(address.rsplit(":", 1)[1])
    for connection in psutil.net_connections(kind="inet"):
        if connection.status == psutil.CONN_LISTEN and connection.laddr.port == port and connection.pid:
            return connection.pid
    raise AssertionError(f"nothing listens at {address}")


def finished_builds(dask_scheduler) -> list[str]:
    """The build tasks the scheduler saw finish (reach 'memory'), from its transition log: run it there with
    `client.run_on_scheduler` (the scheduler imports it from this module)."""
    return [
        str(key)
        for key, _start, finish, *_ in dask_scheduler.transition_log
        if "raptor-build" in str(key) and finish == "memory"
    ]
