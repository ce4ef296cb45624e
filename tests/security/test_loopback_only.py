"""On one machine a service's /metrics and its gRPC port (health included) listen on loopback only.

The issue's audit read every service's /metrics and called its gRPC methods; from another
host that must not even connect. A real Prometheus endpoint (`start_metrics`, what every
service serves) and a real gRPC server (`start_server`, health and reflection on it), each
started with the environment the launcher gives a service (no MESHRL_BIND_HOST): a
connection to any of this host's non-loopback addresses is refused, one to 127.0.0.1 is
taken. (Local users on the host itself: the gRPC port serves mutual TLS with authorisation
by the caller's kind, tests/security/test_grpc_authz.py.)

Run: .venv/bin/python -m pytest tests/security/test_loopback_only.py -q
"""

from __future__ import annotations

import socket

import psutil
import pytest

from meshrl.addresses import BIND_ENV
from meshrl.telemetry.metrics import start_metrics
from meshrl.transport.rpc.server import start_server, stop_server


def other_addresses() -> list[str]:
    found = [
        a.address
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family == socket.AF_INET and not a.address.startswith("127.")
    ]
    assert found, "this host has no non-loopback IPv4 address to try"
    return found


def assert_loopback_only(port: int) -> None:
    for address in other_addresses():
        with pytest.raises(ConnectionRefusedError), socket.create_connection((address, port), timeout=5):
            pass
    socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_metrics_listen_on_loopback_only(monkeypatch):
    monkeypatch.delenv(BIND_ENV, raising=False)
    with start_metrics("learner", "0", "r") as handle:
        assert_loopback_only(handle.port)


@pytest.mark.asyncio
async def test_grpc_and_its_health_listen_on_loopback_only(monkeypatch):
    monkeypatch.delenv(BIND_ENV, raising=False)
    server, port = await start_server([])
    try:
        assert_loopback_only(port)
    finally:
        await stop_server(server, 0)
