"""The build cluster's TLS certificate is its trust boundary: what each side says when a certificate is
expired, not yet valid, self-signed or of another CA. Dask said only "cannot be reached; try again later"
(this side) or raised a traceback (`raptor worker`), and a retry never helps. Tried against a real
`dask scheduler --protocol tls` (docs/SCALING.md); here against TLS listeners of Python's own, which is
all the handshake needs."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from raptor_engine.config import Settings
from raptor_engine.workers import BuildCluster, ClusterSettingsError, cluster_security, scheduler_tls_refusal

NOW = dt.datetime.now(dt.UTC)
DAY = dt.timedelta(days=1)


class Authority:
    """A certificate authority of the test's, writing key pairs it signs (or that sign themselves)."""

    def __init__(self, folder: Path, name: str):
        self.folder, self.key = folder, ec.generate_private_key(ec.SECP256R1())
        self.cert = self._cert(self.key, name, self.key, name, NOW - DAY, NOW + 365 * DAY, ca=True)
        self.pem = self._write(name, self.key, [self.cert])[0]

    @staticmethod
    def _cert(key, cn, issuer_key, issuer_cn, start, end, ca=False) -> x509.Certificate:
        def named(text: str) -> x509.Name:
            return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

        built = (
            x509.CertificateBuilder().subject_name(named(cn)).issuer_name(named(issuer_cn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
        )  # fmt: skip
        if ca:
            built = built.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        return built.sign(issuer_key, hashes.SHA256())

    def _write(self, stem: str, key, chain: list[x509.Certificate]) -> tuple[str, str]:
        pem, private = self.folder / f"{stem}.pem", self.folder / f"{stem}.key"
        pem.write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain))
        private.write_bytes(
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )
        private.chmod(0o600)
        return str(pem), str(private)

    def issue(self, stem: str, cn: str = "raptor-cluster", start=NOW - DAY, end=NOW + 365 * DAY) -> tuple[str, str]:
        key = ec.generate_private_key(ec.SECP256R1())
        return self._write(stem, key, [self._cert(key, cn, self.key, self.cert.subject.rfc4514_string()[3:], start, end)])

    def self_signed(self, stem: str) -> tuple[str, str]:
        key = ec.generate_private_key(ec.SECP256R1())
        return self._write(stem, key, [self._cert(key, "raptor-cluster", key, "raptor-cluster", NOW - DAY, NOW + DAY)])


def _settings(tmp_path: Path, ca: str, pair: tuple[str, str]) -> Settings:
    return Settings(data_dir=tmp_path / "data", dask_tls_ca_file=ca, dask_tls_cert=pair[0], dask_tls_key=pair[1])


def test_this_machines_certificate_out_of_its_dates_or_not_the_cas_gets_one_sentence(tmp_path):
    ca = Authority(tmp_path, "raptor-ca")
    other = Authority(tmp_path, "other-ca")
    cases = {
        "expired": (ca.issue("expired", end=NOW - DAY), "expired on "),
        "future": (ca.issue("future", start=NOW + 30 * DAY), "is valid only from "),
        "self": (ca.self_signed("self"), "is not signed by RAPTOR_DASK_TLS_CA_FILE="),
        "other": (other.issue("other"), "is not signed by RAPTOR_DASK_TLS_CA_FILE="),
    }
    for pair, said in cases.values():
        with pytest.raises(ClusterSettingsError) as caught:
            cluster_security(_settings(tmp_path, ca.pem, pair), "tls://10.0.0.5:8786")
        sentence = str(caught.value)
        assert sentence.startswith(f"The TLS certificate RAPTOR_DASK_TLS_CERT={pair[0]} "), sentence
        assert said in sentence and sentence.count(". ") == 0 and sentence.endswith("."), sentence
    # Dask checks no host name (the CA is the whole trust), so neither does this: another name is used.
    assert cluster_security(_settings(tmp_path, ca.pem, ca.issue("host", cn="evil.example")), "tls://10.0.0.5:8786")


@contextlib.contextmanager
def _scheduler(server: tuple[str, tuple[str, str]]) -> Iterator[str]:
    """`dask scheduler --protocol tls` on loopback with the server's CA and key pair, as docs/SCALING.md
    runs it; its address."""
    ca, (cert, key) = server
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        str(Path(sys.executable).parent / "dask"), "scheduler", "--protocol", "tls", "--host", "127.0.0.1",
        "--port", str(port), "--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key, "--no-dashboard",
    ]  # fmt: skip
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES": "[]"}
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env) as scheduler:
        try:
            for line in scheduler.stderr:  # type: ignore[union-attr]
                if "Scheduler at:" in line:
                    break
            yield f"tls://127.0.0.1:{port}"
        finally:
            scheduler.terminate()


def _servers(tmp_path: Path) -> tuple[Authority, dict[str, tuple[str, tuple[str, str]]]]:
    ca = Authority(tmp_path, "raptor-ca")
    other = Authority(tmp_path, "other-ca")
    return ca, {
        "expired": (ca.pem, ca.issue("expired", end=NOW - DAY)),
        "self-signed": (ca.pem, ca.self_signed("self-signed")),
        "trusts another CA": (other.pem, ca.issue("server")),
        "the cluster's": (ca.pem, ca.issue("good")),
    }


SAID = {
    "expired": "presents a certificate this machine does not trust (certificate has expired)",
    "self-signed": "presents a certificate this machine does not trust (self-signed certificate)",
    "trusts another CA": "does not accept this machine's certificate (it trusts another CA than RAPTOR_DASK_TLS_CA_FILE)",
}


@pytest.mark.parametrize("scheduler", list(SAID))
def test_a_scheduler_whose_certificate_or_ca_is_not_the_clusters_gets_one_sentence(tmp_path, scheduler):
    ca, servers = _servers(tmp_path)
    client = _settings(tmp_path, ca.pem, ca.issue("client"))
    with _scheduler(servers[scheduler]) as address:
        with pytest.raises(ClusterSettingsError) as caught:
            asyncio.run(BuildCluster(dataclasses.replace(client, dask_scheduler=address), address).connect())
        worker_said = scheduler_tls_refusal(address, client)
    sentence = str(caught.value)
    assert sentence.startswith(f"The Dask scheduler {address} {SAID[scheduler]}; the file was not added: "), sentence
    assert "try again later" not in sentence
    # `raptor worker` says it before starting Dask (whose worker failed with a traceback of 95 lines)
    assert worker_said is not None and worker_said.startswith(f"The Dask scheduler {address} {SAID[scheduler]}; the worker did not start: ")


def test_a_worker_is_not_held_by_a_scheduler_that_accepts_it_or_is_not_up_yet(tmp_path):
    ca, servers = _servers(tmp_path)
    client = _settings(tmp_path, ca.pem, ca.issue("client"))
    with _scheduler(servers["the cluster's"]) as address:
        assert scheduler_tls_refusal(address, client) is None
    assert scheduler_tls_refusal(address, client) is None  # gone: Dask's worker waits for it, as before
