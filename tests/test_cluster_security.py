"""Nobody else gets in: the build cluster and its workers, tried by another user of the machine (uid 65534,
through `setpriv`) and by an operator's mistakes (issue 28, docs/SCALING.md "Who can reach the build cluster").

- The bot's embedded LocalCluster: mutual TLS with a key pair only the bot's process holds, 127.0.0.1 only,
  no HTTP endpoint unless RAPTOR_DASK_DASHBOARD_PORT asks, and no secret in its workers' environment. The
  same intruder run against a plain LocalCluster reads the secret, so the attempts themselves work.
- `raptor worker` listens only on loopback for a loopback scheduler (or where --host says).
- Settings across machines: a tls:// scheduler without the RAPTOR_DASK_TLS_* files, a plain tcp:// one
  elsewhere, and TLS files with a tcp:// address each get one sentence; with the files, TLS works end to end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import urllib.request
from pathlib import Path

import psutil
import pytest

from raptor_engine.config import SECRET_VARS, Settings
from raptor_engine.workers import (
    BuildCluster,
    ClusterSettingsError,
    cluster_security,
    worker_command,
)

ROOT = Path(__file__).resolve().parent.parent
INTRUDER = ROOT / "tests" / "intruder.py"
CANARY = "canary-token-that-must-stay-in-the-bot"
OTHER_UID = 65534
SYSTEM_PYTHON = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")


def listening(processes: list[psutil.Process]) -> set[tuple[str, int]]:
    """The (address, port) pairs these processes listen on."""
    found = set()
    for process in processes:
        try:
            connections = process.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        found |= {(c.laddr.ip, c.laddr.port) for c in connections if c.status == psutil.CONN_LISTEN}
    return found


def ours() -> list[psutil.Process]:
    me = psutil.Process()
    return [me, *me.children(recursive=True)]


def intrude(tmp_path: Path, variable: str, ports: list[int]) -> dict[str, dict[str, str]]:
    """tests/intruder.py as uid 65534, with the system's Python and Dask's packages, nothing else."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not SYSTEM_PYTHON.exists():
        pytest.skip("needs root, setpriv and the system's Python to act as another user")
    home = tmp_path / "intruder-home"
    home.mkdir(exist_ok=True)
    home.chmod(0o777)
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
        "DASK_CONFIG": str(home),
    }
    done = subprocess.run(
        ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups",
         str(SYSTEM_PYTHON), str(INTRUDER), variable, *map(str, ports)],
        env=env, cwd=home, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(attempts["uid"] == str(OTHER_UID) for attempts in report.values())
    return report


def successes(report: dict[str, dict[str, str]]) -> list[str]:
    return [
        f"{port} {attempt}: {outcome}"
        for port, attempts in report.items()
        for attempt, outcome in attempts.items()
        if outcome.startswith("ok")
    ]


def test_another_user_runs_code_on_a_plain_local_cluster(tmp_path, monkeypatch):
    """The control: Dask's defaults, as the bot used them, give another user the bot's environment."""
    from distributed import LocalCluster

    monkeypatch.setenv("RAPTOR_TEST_CANARY", CANARY)
    with LocalCluster(
        n_workers=1, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        port = int(cluster.scheduler_address.rsplit(":", 1)[1])
        report = intrude(tmp_path, "RAPTOR_TEST_CANARY", [port])
    assert report[str(port)]["tcp"] == f"ok: {CANARY!r}"


async def test_another_user_cannot_run_code_on_the_embedded_cluster_nor_find_a_dashboard(tmp_path, monkeypatch):
    for name in SECRET_VARS:
        monkeypatch.setenv(name, CANARY)
    before = listening(ours())
    cluster = await BuildCluster.start(Settings(data_dir=tmp_path / "data", build_workers=1))
    try:
        assert cluster.local is not None and cluster.local.scheduler_address.startswith("tls://127.0.0.1:")
        opened = listening(ours()) - before
        assert opened, "the cluster listens somewhere"
        assert {address for address, _ in opened} == {"127.0.0.1"}  # loopback only
        # scheduler, nanny and worker; no HTTP server (Dask starts one per scheduler and worker by default)
        assert len(opened) == 3, opened
        # in a thread: the scheduler and the nannies answer on this event loop
        report = await asyncio.to_thread(intrude, tmp_path, SECRET_VARS[0], sorted(port for _, port in opened))
        assert successes(report) == [], report
        # the bot itself still runs code there, and its workers hold none of its secrets
        client = cluster.client
        seen = await client.run(lambda: [os.environ.get(name) for name in SECRET_VARS])
        assert seen and all(values == [None, None] for values in seen.values())
        pids = await client.run(os.getpid)
        for pid in pids.values():
            assert CANARY.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
        # the workers' scratch space is in a folder of this process's own, not /tmp/dask-scratch-space (a
        # folder any user may make first, and so own: then they can swap the workers' folders for theirs)
        local = (await client.run(lambda dask_worker: dask_worker.local_directory)).values()
        scratch = {p for d in local for p in Path(d).parents if p.name.startswith("raptor-dask-")}
        assert len(scratch) == 1, local
        folder = scratch.pop()
        assert folder.stat().st_uid == os.getuid() and stat.S_IMODE(folder.stat().st_mode) == 0o700
    finally:
        await cluster.close()
    assert not folder.exists()  # removed at close


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_the_embedded_dashboard_is_served_on_loopback_only_when_a_port_is_set(tmp_path):
    port = _free_port()
    settings = Settings(data_dir=tmp_path / "data", build_workers=1, dask_dashboard_port=port)
    cluster = await BuildCluster.start(settings)
    try:
        assert ("127.0.0.1", port) in listening(ours())
        assert not any(p == port and a != "127.0.0.1" for a, p in listening(ours()))
        reply = await asyncio.to_thread(urllib.request.urlopen, f"http://127.0.0.1:{port}/health", timeout=30)
        assert reply.status == 200
    finally:
        await cluster.close()


# ------------------------------------------------------------------------------------------ raptor worker


def test_a_raptor_worker_for_a_loopback_scheduler_listens_on_loopback_only_and_holds_no_secret(tmp_path):
    from tests.dask_processes import dask_processes

    secrets = dict.fromkeys(SECRET_VARS, CANARY)  # as a `.env` beside the worker would put them there
    with dask_processes(tmp_path, workers=1, env=secrets) as address:
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=240)
            [pid] = client.run(os.getpid).values()
        worker = psutil.Process(pid)
        nanny = worker.parent()
        sockets = listening([nanny, worker])
        assert len(sockets) == 2, sockets  # the nanny's and the worker's Dask ports; no HTTP
        assert {address for address, _ in sockets} == {"127.0.0.1"}, sockets
        for process in (nanny, worker):
            assert CANARY.encode() not in Path(f"/proc/{process.pid}/environ").read_bytes()


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to act as another user"
)
def test_a_raptor_workers_scratch_space_is_its_users_not_a_folder_another_user_made_first(tmp_path):
    """Dask's default is TMPDIR/dask-scratch-space: made first by uid 65534 (as any user of /tmp could),
    the worker's own folder was inside theirs, and they moved it aside for one of their own (tried)."""
    from distributed import Client

    from tests.dask_processes import dask_processes

    base = Path(tempfile.mkdtemp(prefix="raptor-scratch-", dir="/tmp"))  # pytest's folders are closed to others
    base.chmod(0o755)
    shared = base / "tmp"  # a /tmp of its own: sticky, open to all
    shared.mkdir()
    shared.chmod(0o1777)
    subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "mkdir", "-m", "0777", str(shared / "dask-scratch-space")],
        check=True, timeout=60,
    )  # fmt: skip
    cache = tmp_path / "cache"
    try:
        env = {"TMPDIR": str(shared), "RAPTOR_CACHE_DIR": str(cache)}
        with dask_processes(tmp_path, workers=1, env=env) as address:
            with Client(address, timeout=60) as client:
                client.wait_for_workers(1, timeout=240)
                [local] = client.run(lambda dask_worker: dask_worker.local_directory).values()
        scratch = cache / "dask-scratch"
        assert scratch in Path(local).parents, local  # Dask adds dask-scratch-space/worker-* inside
        assert stat.S_IMODE(scratch.stat().st_mode) == 0o700 and scratch.stat().st_uid == os.getuid()
        assert not [p.name for p in (shared / "dask-scratch-space").iterdir() if p.name.startswith("worker-")]
    finally:
        shutil.rmtree(base)


def test_raptor_workers_scratch_folder_is_made_private_and_another_users_is_refused(tmp_path):
    cache = tmp_path / "cache"
    command = worker_command("tcp://127.0.0.1:8786", Settings(data_dir=tmp_path, cache_dir=cache))
    assert command[command.index("--local-directory") + 1] == str(cache / "dask-scratch")
    assert stat.S_IMODE((cache / "dask-scratch").stat().st_mode) == 0o700
    (cache / "dask-scratch").chmod(0o777)  # ours, but open: closed again
    worker_command("tcp://127.0.0.1:8786", Settings(data_dir=tmp_path, cache_dir=cache))
    assert stat.S_IMODE((cache / "dask-scratch").stat().st_mode) == 0o700
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "dask-scratch").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(ClusterSettingsError, match="belongs to another user or is a link"):
        worker_command("tcp://127.0.0.1:8786", Settings(data_dir=tmp_path, cache_dir=linked))
    if os.geteuid() == 0:
        theirs = tmp_path / "theirs"
        (theirs / "dask-scratch").mkdir(parents=True)
        os.chown(theirs / "dask-scratch", 65534, 65534)
        with pytest.raises(ClusterSettingsError, match="set RAPTOR_CACHE_DIR to a folder of this user's"):
            worker_command("tcp://127.0.0.1:8786", Settings(data_dir=tmp_path, cache_dir=theirs))


def test_raptor_worker_listens_where_host_says_and_declares_its_version(tmp_path):
    settings = Settings(data_dir=tmp_path)
    command = worker_command("tcp://127.0.0.1:8786", settings, host="0.0.0.0")
    assert command[command.index("--host") + 1] == "0.0.0.0"
    assert "--resources" in command and command[command.index("--resources") + 1].startswith("raptor-")
    default = worker_command("tcp://localhost:8786", settings)
    assert default[default.index("--host") + 1] == "127.0.0.1"
    assert default[default.index("--dashboard-address") + 1] == "127.0.0.1:0"


# ------------------------------------------------------------------------------------------ settings


def test_a_tls_scheduler_without_the_tls_files_gets_one_sentence_naming_them(tmp_path):
    with pytest.raises(ClusterSettingsError) as caught:
        cluster_security(Settings(data_dir=tmp_path, dask_tls_cert="/x.pem"), "tls://10.0.0.5:8786")
    assert str(caught.value) == (
        "The Dask scheduler tls://10.0.0.5:8786 uses TLS but RAPTOR_DASK_TLS_CA_FILE, RAPTOR_DASK_TLS_KEY are not "
        "set; set them to this cluster's CA, certificate and key files (docs/SCALING.md)."
    )


def test_a_plain_scheduler_on_another_machine_is_refused_unless_the_operator_says_insecure(tmp_path):
    settings = Settings(data_dir=tmp_path)
    with pytest.raises(ClusterSettingsError, match="RAPTOR_DASK_INSECURE=1"):
        cluster_security(settings, "tcp://10.0.0.5:8786")
    assert cluster_security(dataclasses.replace(settings, dask_insecure=1), "tcp://10.0.0.5:8786") is None
    assert cluster_security(settings, "tcp://127.0.0.1:8786") is None
    assert cluster_security(settings, "tcp://localhost:8786") is None
    tls = dataclasses.replace(settings, dask_tls_ca_file="a", dask_tls_cert="b", dask_tls_key="c")
    with pytest.raises(ClusterSettingsError, match="write it as tls://HOST:PORT"):
        cluster_security(tls, "tcp://127.0.0.1:8786")
