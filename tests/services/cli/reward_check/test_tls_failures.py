"""Both kits (`meshrl env check`, `meshrl reward check`) against real gRPC servers on real
ports whose TLS does not match the kit's flags: each failure is one row naming it (plaintext
against TLS, the server's certificate refused or not issued for the name, TLS against
plaintext, no client certificate, a client certificate refused, nothing listening) with its
fix, not "serve grpc.health.v1".
Certificates are made in the test (tests/fixtures/tls_certs.py), two CAs.

Run: .venv/bin/python -m pytest tests/services/cli/reward_check/test_tls_failures.py
"""

import asyncio
import os
import sys

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from meshrl.cli import env_check, reward_check
from meshrl.cli.env_check.health import CONFIG_LABELS
from meshrl.cli.reward_check.connect import open_check_channel
from meshrl.cli.reward_check.tls_probe import TlsProbe
from tests.fixtures.ports import refused_port
from tests.fixtures.tls_certs import make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("ours")), make_certs(tmp_path_factory.mktemp("other"))


async def health_server(credentials) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    if credentials is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        port = server.add_secure_port("127.0.0.1:0", credentials)
    await server.start()
    await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    return server, f"127.0.0.1:{port}"


def server_credentials(ours, *, mutual: bool):
    pair = [(ours.server_key.read_bytes(), ours.server_cert.read_bytes())]
    if not mutual:
        return grpc.ssl_server_credentials(pair)
    return grpc.ssl_server_credentials(pair, root_certificates=ours.ca.read_bytes(), require_client_auth=True)


async def kit_rows(kit: str, address: str, **flags) -> list:
    probe = TlsProbe(address, flags.get("ca"), flags.get("cert"), flags.get("key"), flags.get("server_name"))
    channel = open_check_channel(
        address, tls_ca=probe.ca, tls_cert=probe.cert, tls_key=probe.key, server_name=probe.server_name
    )
    async with channel:
        if kit == "env":
            return await env_check.run_suite(channel, task=env_check.load_task(None, ""), timeout_s=5.0, probe=probe)
        return await reward_check.run_suite(channel, timeout_s=5.0, probe=probe)


CASES = [  # (server TLS, kit flags from (ours, other), the row's detail starts with, its fix holds)
    ("tls", lambda o, x: {}, "the server speaks TLS and the kit connected in plaintext", "--tls-ca"),
    ("tls", lambda o, x: {"ca": str(x.ca)}, "the server's certificate was refused (", "--tls-ca CA_FILE"),
    (
        "tls",
        lambda o, x: {"ca": str(o.ca), "server_name": "env.example"},
        "the server's certificate was refused: it is not issued for 'env.example'",
        "--server-name",
    ),
    ("plain", lambda o, x: {"ca": str(o.ca)}, "the server speaks plaintext and the kit connected with TLS", "drop"),
    (
        "mutual",
        lambda o, x: {"ca": str(o.ca)},
        "no client certificate: the server requires one (mutual TLS)",
        "pass --tls-cert and --tls-key",
    ),
    (
        "mutual",
        lambda o, x: {"ca": str(o.ca), "cert": str(x.client_cert), "key": str(x.client_key)},
        "the server refused the client certificate --tls-cert",
        "signed by the CA the server trusts",
    ),
]


@pytest.mark.parametrize("kit", ["env", "reward"])
@pytest.mark.parametrize(("server_tls", "flags", "detail", "fix"), CASES)
async def test_a_tls_mismatch_is_one_row_naming_it(certs, kit, server_tls, flags, detail, fix):
    ours, other = certs
    credentials = None if server_tls == "plain" else server_credentials(ours, mutual=server_tls == "mutual")
    server, address = await health_server(credentials)
    try:
        rows = await kit_rows(kit, address, **flags(ours, other))
    finally:
        await server.stop(0)
    (row,) = rows
    assert row.outcome == "FAIL" and row.detail.startswith(detail) and fix in row.fix, row
    assert "grpc.health.v1.Health" not in row.fix


async def test_nothing_listening_is_named_too():
    with refused_port() as port:
        (row,) = await kit_rows("env", f"127.0.0.1:{port}")
    assert row.detail.startswith("nothing listens at 127.0.0.1:") and row.fix.startswith("start the service")


async def test_a_matching_mutual_tls_server_is_no_failure_for_the_probe(certs):
    ours, _ = certs
    server, address = await health_server(server_credentials(ours, mutual=True))
    try:
        probe = TlsProbe(address, str(ours.ca), str(ours.client_cert), str(ours.client_key))
        assert await probe.diagnose(5.0) is None
        rows = await kit_rows("reward", address, ca=probe.ca, cert=probe.cert, key=probe.key)
    finally:
        await server.stop(0)
    assert rows[0].outcome == "PASS" and len(rows) > 1  # past health: the suite goes on


async def test_the_cli_prints_the_named_failure_and_exits_1(certs):
    ours, other = certs
    server, address = await health_server(server_credentials(ours, mutual=False))
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "meshrl.cli.main",
            "env",
            "check",
            address,
            "--tls-ca",
            str(other.ca),
            "--timeout",
            "5",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out = (await proc.communicate())[0].decode()
    finally:
        await server.stop(0)
    assert proc.returncode == 1 and "the server's certificate was refused" in out and "1 of 1 checks FAILED" in out


async def test_the_doctor_names_the_run_configs_keys(certs):
    ours, _ = certs
    server, address = await health_server(server_credentials(ours, mutual=True))
    try:
        found = await TlsProbe(address, str(ours.ca), labels=CONFIG_LABELS).diagnose(5.0)
    finally:
        await server.stop(0)
    assert found[0].startswith("no client certificate") and "environment.tls.cert_file" in found[1]


@pytest.mark.parametrize("kit", ["env", "reward"])
@pytest.mark.parametrize("server_tls", ["tls", "plain"])
async def test_the_cli_prints_no_grpc_core_log_lines(certs, kit, server_tls):
    """A wrong CA, or TLS against plaintext: the FAIL row names it; gRPC C-core's own
    `I1207 ... ssl_transport_security.cc ... Handshake failed` line must not sit above it."""
    ours, other = certs
    credentials = server_credentials(ours, mutual=False) if server_tls == "tls" else None
    server, address = await health_server(credentials)
    try:
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "meshrl.cli.main", kit, "check", address, "--tls-ca", str(other.ca)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={k: v for k, v in os.environ.items() if k not in ("GRPC_VERBOSITY", "GRPC_TRACE")},
        )
        out, err = (b.decode() for b in await proc.communicate())
    finally:
        await server.stop(0)
    assert proc.returncode == 1 and "1 of 1 checks FAILED" in out
    assert "ssl_transport_security" not in err and "Handshake failed" not in err, err
