"""Mutual TLS to an environment meshrl does not launch, end to end: `meshrl certs issue` writes
the files, the TypeScript example (examples/external_env_ts) serves with the server's three
(MESHRL_GRPC_TLS_CA_FILE/_CERT_FILE/_KEY_FILE), and meshrl's side uses the client certificate as
environment.tls names it. A caller with the client certificate plays; one without is refused in
the handshake; `meshrl env check` with the client files passes. Skipped only without node/npm."""

import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from tests.fixtures.node_example import EXAMPLES, build, needs_node
from tests.fixtures.served import served_on_any_port

EXAMPLE = EXAMPLES / "external_env_ts"
ANNOUNCED = r" on \S+:(\d+)$"  # the line the server prints once it listens: its bound port
pytestmark = needs_node


def meshrl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "meshrl.cli.main", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def mtls_env(tmp_path_factory):
    build(EXAMPLE)
    out = tmp_path_factory.mktemp("certs")
    issued = meshrl(
        "certs", "issue", "--kind", "environment", "--name", "guess", "--host", "127.0.0.1", "--out", str(out)
    )
    assert issued.returncode == 0, issued.stderr
    assert f"cert_file: {out / 'guess-client.pem'}" in issued.stdout  # the environment.tls line
    server_env = dict(line.strip().split("=", 1) for line in issued.stdout.splitlines() if "MESHRL_GRPC_TLS_" in line)
    command = ["node", "dist/server.js", "--port", "0"]
    with served_on_any_port(command, ANNOUNCED, cwd=EXAMPLE, env={**os.environ, **server_env}) as address:
        yield address, out


def reset(address: str, credentials: grpc.ChannelCredentials) -> env_pb2.ResetResponse:
    with grpc.secure_channel(address, credentials) as channel:
        stub = env_pb2_grpc.EnvironmentServiceStub(channel)
        return stub.Reset(env_pb2.ResetRequest(episode_id="m/0", ground_truth_json="42"), timeout=20)


def test_a_caller_with_the_client_certificate_plays(mtls_env):
    address, out = mtls_env
    files = [(out / name).read_bytes() for name in ("ca.pem", "guess-client.key", "guess-client.pem")]
    assert [t.name for t in reset(address, grpc.ssl_channel_credentials(*files)).tools] == ["check_guess"]


def test_a_caller_without_a_client_certificate_is_refused(mtls_env):
    address, out = mtls_env
    with pytest.raises(grpc.RpcError) as refused:
        reset(address, grpc.ssl_channel_credentials((out / "ca.pem").read_bytes()))
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE  # the handshake failed: no call reached the server


def test_meshrl_env_check_with_the_client_files_passes(mtls_env):
    address, out = mtls_env
    tls = ["--tls-ca", str(out / "ca.pem"), "--tls-cert", str(out / "guess-client.pem")]
    done = meshrl(
        "env", "check", address, "--environment", "guess_number", *tls, "--tls-key", str(out / "guess-client.key")
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_issued_files_keep_their_keys_private(mtls_env):
    _, out = mtls_env
    modes = {p.name: p.stat().st_mode & 0o777 for p in Path(out).iterdir()}
    assert {n: m for n, m in modes.items() if n.endswith(".key")} == dict.fromkeys(
        ["ca.key", "guess-server.key", "guess-client.key"], 0o600
    )
