"""Nothing hangs, nobody of another version builds, TLS across machines works (issue 28): real `dask
scheduler` and `raptor worker` processes on 127.0.0.1, driven through the engine and the CLI.

Each wait is bounded by RAPTOR_BUILD_WORKER_WAIT, set to a second or three here; the faults last until the
test ends them (no worker ever joins, a process is SIGSTOPped), so no outcome depends on timing.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
from distributed import Client

from raptor_engine import __version__
from raptor_engine.engine import Engine
from raptor_engine.workers import PROGRESS_TOPIC, BuildCluster, ClusterUnreachableError, NoWorkerError
from tests.dask_processes import ROOT, dask_processes, listening_pid, stop_process
from tests.test_cluster_security import intrude, successes
from tests.test_workers import LIGHTHOUSE, long_document
from tests.unhurried import patient, unhurried_settings

SHORT = b"# Bees\n\n" + b"Bees make honey from the nectar of flowers. " * 30
OTHER_VERSION = "0.0.9"


# The no-worker tests wait long enough for a starved scheduler to answer its first poll: at a load average
# of 18 it took over a second, and a 1 s wait then read "stopped answering" instead of "no worker".
NO_WORKER_WAIT_S = 4


def no_worker_sentence(address: str, wait: float) -> str:
    return f"No build worker has been connected to {address} for {wait:g} s; the file was not added, try again later."


@pytest.fixture(scope="module")
def empty_scheduler(tmp_path_factory):
    """A `dask scheduler` that no worker ever joins."""
    with dask_processes(tmp_path_factory.mktemp("empty"), workers=0) as address:
        yield address


async def until(ask, expected, tries: int = 600) -> None:
    """Wait (0.1 s a try) until `ask()` gives `expected`; a message in flight may need a moment."""
    for _ in range(tries):
        if await ask() == expected:
            return
        await asyncio.sleep(0.1)
    assert await ask() == expected


def engine_on(address: str, data_dir: Path, **settings) -> Engine:
    engine = Engine(unhurried_settings(data_dir=data_dir, **settings))
    engine.cluster = BuildCluster(engine.settings, address)
    return engine


async def test_a_scheduler_with_no_worker_gives_the_upload_up_within_the_wait_and_says_so(empty_scheduler, tmp_path):
    engine = engine_on(empty_scheduler, tmp_path / "data", build_worker_wait=NO_WORKER_WAIT_S)
    try:
        with pytest.raises(NoWorkerError) as caught:
            await engine.ingest("kb", "bees.md", SHORT)
        assert str(caught.value) == no_worker_sentence(empty_scheduler, NO_WORKER_WAIT_S)
        assert "split it into smaller files" not in str(caught.value)  # it did not run out of time
        assert engine.knowledge_bases() == []
        async with Client(empty_scheduler, asynchronous=True) as client:  # the task is gone from the scheduler
            # a lambda travels by value: the scheduler cannot import this test module
            await until(lambda: client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)), 0)
    finally:
        await engine.cluster.close()
        engine.close()


def test_raptor_ingest_on_a_scheduler_with_no_worker_prints_the_reason_in_one_line(empty_scheduler, tmp_path):
    doc = tmp_path / "bees.md"
    doc.write_bytes(SHORT)
    env = {**os.environ, "RAPTOR_BUILD_WORKER_WAIT": str(NO_WORKER_WAIT_S), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "raptor_engine.cli", "--data-dir", str(tmp_path / "data"), "ingest", str(doc),
         "--kb", "kb", "--scheduler", empty_scheduler, "--quiet"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1
    # the refusal names its file, as every refused file of an ingest does
    assert done.stderr.strip().splitlines() == [
        f"Error: bees.md: {no_worker_sentence(empty_scheduler, NO_WORKER_WAIT_S)}"
    ], done.stderr


async def test_a_scheduler_that_stops_answering_gives_the_upload_up_and_says_so(tmp_path):
    with dask_processes(tmp_path, workers=0) as address:
        engine = engine_on(address, tmp_path / "data", build_worker_wait=1)
        await engine.cluster.connect()
        scheduler = listening_pid(address)
        os.kill(scheduler, signal.SIGSTOP)
        try:
            with pytest.raises(ClusterUnreachableError) as caught:
                await engine.ingest("kb", "bees.md", SHORT)
            assert str(caught.value) == (
                f"The Dask scheduler at {address} stopped answering for 1 s; the file was not added, try again later."
            )
        finally:
            os.kill(scheduler, signal.SIGCONT)
            await engine.cluster.close()
            engine.close()


async def test_a_worker_that_stops_answering_mid_build_gives_the_upload_up_and_says_so(tmp_path):
    with dask_processes(tmp_path, workers=1) as address:
        engine = engine_on(address, tmp_path / "data", build_worker_wait=3)
        client = await engine.cluster.connect()
        await client.wait_for_workers(1, timeout=240)
        [(worker, pid)] = (await client.run(os.getpid)).items()
        stopped = []

        def stop_the_worker(event):
            if not stopped:  # the first progress: the build runs on that worker now
                os.kill(pid, signal.SIGSTOP)
                stopped.append(event.stage)

        try:
            with pytest.raises(NoWorkerError) as caught:
                await engine.ingest("kb", "long.md", long_document(), progress=stop_the_worker)
            assert stopped == ["load"]
            assert str(caught.value) == (
                f"The build worker running it ({worker}) stopped answering for 3 s; the file was not added, try "
                "again later."
            )
            assert engine.knowledge_bases() == []
        finally:
            os.kill(pid, signal.SIGCONT)
            await engine.cluster.close()
            engine.close()


def other_version_checkout(tmp_path: Path) -> Path:
    """A copy of the package that says it is OTHER_VERSION: an install of another release."""
    root = tmp_path / "other-release"
    shutil.copytree(ROOT / "raptor_engine", root / "raptor_engine", ignore=shutil.ignore_patterns("__pycache__"))
    init = root / "raptor_engine" / "__init__.py"
    text = init.read_text()
    assert f'__version__ = "{__version__}"' in text
    init.write_text(text.replace(f'__version__ = "{__version__}"', f'__version__ = "{OTHER_VERSION}"'))
    return root


async def test_a_worker_of_another_version_is_refused_before_the_build_runs_naming_both_versions(tmp_path):
    with dask_processes(tmp_path, workers=0) as address:
        other = other_version_checkout(tmp_path)
        env = {**os.environ, "PYTHONPATH": str(other)}
        worker = subprocess.Popen(
            [sys.executable, "-m", "raptor_engine.cli", "worker", address, "--name", "old"],
            env=env, cwd=other, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "old-worker.log", "w"),
        )  # fmt: skip
        engine = engine_on(address, tmp_path / "data", build_worker_wait=600)  # refused at once, not after this
        try:
            client = await engine.cluster.connect()
            await client.wait_for_workers(1, timeout=240)
            [info] = client.scheduler_info()["workers"].values()
            assert f"raptor-{OTHER_VERSION}" in info["resources"]  # the worker reports its version
            with pytest.raises(NoWorkerError) as caught:
                await engine.ingest("kb", "bees.md", SHORT)
            assert str(caught.value) == (
                f"The build workers run raptor {OTHER_VERSION} but this is raptor {__version__}, so the file was not "
                "added; install the same version on both."
            )
            assert await client.get_events(PROGRESS_TOPIC) == ()  # the task never ran on it
            assert engine.knowledge_bases() == []
        finally:
            stop_process(worker, 30)
            await engine.cluster.close()
            engine.close()


# ------------------------------------------------------------------------------------------ TLS across machines


def write_certificates(folder: Path) -> dict[str, str]:
    """A certificate authority and one certificate it signed, as an operator would make for a cluster."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder().subject_name(name("raptor-ca")).issuer_name(name("raptor-ca"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    cert = (
        x509.CertificateBuilder().subject_name(name("raptor-cluster")).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    paths = {"ca": folder / "ca.pem", "cert": folder / "cluster.pem", "key": folder / "cluster.key"}
    paths["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths["key"].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    paths["key"].chmod(0o600)
    return {k: str(v) for k, v in paths.items()}


async def test_a_tls_cluster_set_up_as_documented_builds_and_lets_no_one_else_in(tmp_path):
    files = write_certificates(tmp_path)
    tls_env = {"RAPTOR_DASK_TLS_CA_FILE": files["ca"], "RAPTOR_DASK_TLS_CERT": files["cert"],
               "RAPTOR_DASK_TLS_KEY": files["key"]}  # fmt: skip
    scheduler_args = ("--protocol", "tls", "--tls-ca-file", files["ca"], "--tls-cert", files["cert"],
                      "--tls-key", files["key"])  # fmt: skip
    with dask_processes(tmp_path, workers=1, env=tls_env, scheduler_args=scheduler_args) as address:
        assert address.startswith("tls://127.0.0.1:")
        settings = dict(dask_tls_ca_file=files["ca"], dask_tls_cert=files["cert"], dask_tls_key=files["key"])
        engine = engine_on(address, tmp_path / "data", **settings)
        try:
            client = await engine.cluster.connect()
            await client.wait_for_workers(1, timeout=240)
            result = await engine.ingest("kb", "kestrel.md", LIGHTHOUSE.encode())
            assert result.status == "added"
            port = int(address.rsplit(":", 1)[1])
            report = await asyncio.to_thread(intrude, tmp_path, "DISCORD_TOKEN", [port])
            assert successes(report) == [], report
        finally:
            await engine.cluster.close()
            engine.close()


def cli(tmp_path: Path, env: dict[str, str], command: list[str]) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process, with the data directory under `tmp_path`."""
    return subprocess.run(
        [sys.executable, "-m", "raptor_engine.cli", "--data-dir", str(tmp_path / "data"), *command],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_tls_scheduler_without_the_tls_settings_is_one_line_in_the_cli(tmp_path):
    doc = tmp_path / "bees.md"
    doc.write_bytes(SHORT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAPTOR_DASK_")}
    env["PYTHONPATH"] = str(ROOT)
    expected = (
        "Error: The Dask scheduler tls://127.0.0.1:8786 uses TLS but RAPTOR_DASK_TLS_CA_FILE, RAPTOR_DASK_TLS_CERT, "
        "RAPTOR_DASK_TLS_KEY are not set; set them to this cluster's CA, certificate and key files "
        "(docs/SCALING.md)."
    )
    for command in (["ingest", str(doc), "--kb", "kb", "--scheduler", "tls://127.0.0.1:8786"],
                    ["worker", "tls://127.0.0.1:8786"]):  # fmt: skip
        done = cli(tmp_path, env, command)
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip().splitlines() == [expected], done.stderr
    insecure = subprocess.run(
        [sys.executable, "-m", "raptor_engine.cli", "worker", "tcp://192.0.2.1:8786"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert insecure.returncode == 1 and len(insecure.stderr.strip().splitlines()) == 1, insecure.stderr
    assert "RAPTOR_DASK_INSECURE=1" in insecure.stderr


@pytest.mark.parametrize("address", ["notanaddress", "http://127.0.0.1:8786", "tcp://127.0.0.1:port"])
def test_an_address_that_is_no_dask_scheduler_address_is_one_sentence_in_the_cli(tmp_path, address):
    doc = tmp_path / "bees.md"
    doc.write_bytes(SHORT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAPTOR_DASK_")}
    env["PYTHONPATH"] = str(ROOT)
    expected = f"Error: {address!r} is not a Dask scheduler address; write it as tls://HOST:PORT or tcp://HOST:PORT."
    for command in (["ingest", str(doc), "--kb", "kb", "--scheduler", address], ["worker", address]):
        done = cli(tmp_path, env, command)
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip().splitlines() == [expected], done.stderr


async def test_a_port_that_never_speaks_dask_is_unreachable_not_a_build_out_of_time(tmp_path):
    """A listening port whose server never answers Dask's handshake (another service, a wrong port): the
    connection's wait is bounded, and the user is told the workers cannot be reached, not that the file
    took too long to build."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the kernel and are never accepted or answered
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        engine = engine_on(address, tmp_path / "data")  # the default wait for a worker: the build's own deadline
        try:
            with pytest.raises(ClusterUnreachableError) as caught:
                await engine.ingest("kb", "bees.md", SHORT)
            assert "cannot be reached" in str(caught.value) and "smaller files" not in str(caught.value)
        finally:
            await engine.cluster.close()
            engine.close()


@pytest.mark.parametrize("fault", ["not a certificate", "the key of another certificate"])
def test_tls_files_that_cannot_be_used_are_one_sentence_for_ingest_and_worker(tmp_path, fault):
    files = write_certificates(tmp_path)
    if fault == "not a certificate":
        Path(files["ca"]).write_text("garbage\n")
    else:
        (tmp_path / "other").mkdir()
        other = write_certificates(tmp_path / "other")
        files["key"] = other["key"]
    doc = tmp_path / "bees.md"
    doc.write_bytes(SHORT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAPTOR_DASK_")}
    env.update(PYTHONPATH=str(ROOT), RAPTOR_DASK_TLS_CA_FILE=files["ca"], RAPTOR_DASK_TLS_CERT=files["cert"],
               RAPTOR_DASK_TLS_KEY=files["key"])  # fmt: skip
    for command in (["ingest", str(doc), "--kb", "kb", "--scheduler", "tls://127.0.0.1:8786"],
                    ["worker", "tls://127.0.0.1:8786"]):  # fmt: skip
        done = cli(tmp_path, env, command)
        assert done.returncode == 1, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot be used" in lines[0], done.stderr


def documented_scheduler_command() -> tuple[dict[str, str], list[str]]:
    """The scheduler's command of docs/SCALING.md ("Running workers on another machine", step 1): its
    variables and its arguments."""
    text = (ROOT / "docs" / "SCALING.md").read_text()
    found = re.search(r"On the scheduler's machine: `([^`]+)`", text)
    assert found, "docs/SCALING.md no longer shows the scheduler's command"
    words = shlex.split(" ".join(found.group(1).split()))
    env = {}
    while "=" in words[0]:
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    assert words[:2] == ["dask", "scheduler"], words
    return env, words[2:]


def test_the_documented_scheduler_serves_no_http_to_the_network(tmp_path):
    """Dask starts an HTTP server beside a scheduler even with --no-dashboard: on 0.0.0.0:8787, plain HTTP,
    with the cluster's identity, task counts, logs and failed builds' exceptions (read from another network
    namespace). The command the docs give runs here as written (its port 0, its TLS files this test's):
    only its Dask port is on every interface, and no port answers HTTP with anything of the cluster."""
    files = write_certificates(tmp_path)
    env, args = documented_scheduler_command()
    names = {"ca.pem": files["ca"], "cluster.pem": files["cert"], "cluster.key": files["key"], "8786": "0"}
    args = [names.get(a, a) for a in args] + ["--scheduler-file", str(tmp_path / "scheduler.json")]
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", *args],
        env={**os.environ, **env}, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + patient(60)
        while not (tmp_path / "scheduler.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)  # the HTTP server starts beside the scheduler's port
        dask_port = int(json.loads((tmp_path / "scheduler.json").read_text())["address"].rsplit(":", 1)[1])
        sockets = [c.laddr for c in psutil.Process(scheduler.pid).net_connections("inet") if c.status == "LISTEN"]
        assert any(port == dask_port for _, port in sockets), sockets
        assert all(host == "127.0.0.1" for host, port in sockets if port != dask_port), sockets
        for _, port in sockets:
            if port == dask_port:
                continue
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/identity.json", timeout=10) as reply:
                    answered = reply.status
            except urllib.error.HTTPError as error:
                answered = error.code
            assert answered == 404, (port, answered)
    finally:
        scheduler.terminate()
        scheduler.wait(timeout=60)
