"""Another local user trying the build cluster's ports, as tests/test_cluster_security.py runs it (as uid
65534, with the system's Python and only Dask importable): for each port it asks for Dask's HTTP endpoints
and tries to run code there with a plain Dask client, then with TLS and a certificate of its own.

Prints one JSON object: port -> {attempt: "ok: <what it got>" or "refused: <why>"}. Imports nothing of the
project: it is what any user of the machine could write.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.request

TIMEOUT_S = 10


def http(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/identity.json", timeout=TIMEOUT_S) as reply:
            return f"ok: {reply.read()[:200].decode(errors='replace')}"
    except Exception as error:  # anything short of an answer is a refusal
        return f"refused: {type(error).__name__}: {error}"


async def run_code(address: str, security, variable: str) -> str:
    """Run code in the process behind `address`: on a scheduler, or on a worker or nanny via rpc."""
    from distributed import Client
    from distributed.core import rpc
    from distributed.protocol.pickle import dumps

    def secret(name: str = variable) -> str:
        import os

        return repr(os.environ.get(name))

    try:
        async with Client(address, asynchronous=True, timeout=TIMEOUT_S, security=security) as client:
            return f"ok: {await client.run_on_scheduler(secret)}"
    except Exception as scheduler_error:
        try:
            connection_args = security.get_connection_args("client") if security else {}
            async with rpc(address, connection_args=connection_args, timeout=TIMEOUT_S) as remote:
                reply = await asyncio.wait_for(remote.run(function=dumps(secret)), TIMEOUT_S)
                return f"ok: {reply}"
        except Exception as error:
            return f"refused: {type(scheduler_error).__name__}: {scheduler_error}; {type(error).__name__}: {error}"


def main() -> None:
    from distributed.security import Security

    ports = [int(p) for p in sys.argv[2:]]
    own = Security.temporary()  # a certificate of its own: the cluster's CA did not sign it
    report = {}
    for port in ports:
        report[port] = {
            "http": http(port),
            "tcp": asyncio.run(run_code(f"tcp://127.0.0.1:{port}", None, sys.argv[1])),
            "tls": asyncio.run(run_code(f"tls://127.0.0.1:{port}", own, sys.argv[1])),
            "uid": str(os.getuid()),
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
