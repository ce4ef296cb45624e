"""Mutual TLS to the TypeScript reward example (examples/external_reward_ts), with the files
`meshrl certs issue --kind reward` writes: `meshrl reward check` with meshrl's client
certificate passes; a caller without one is refused in the handshake. Skipped without node/npm."""

import os
import subprocess
import sys

import grpc
import pytest

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from tests.fixtures.node_example import EXAMPLES, build, needs_node
from tests.fixtures.served import served_on_any_port

EXAMPLE = EXAMPLES / "external_reward_ts"
ANNOUNCED = r" on \S+:(\d+)$"  # the line the server prints once it listens: its bound port
pytestmark = needs_node


def meshrl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "meshrl.cli.main", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def mtls_reward(tmp_path_factory):
    build(EXAMPLE)
    out = tmp_path_factory.mktemp("certs")
    issued = meshrl("certs", "issue", "--kind", "reward", "--name", "judge", "--host", "127.0.0.1", "--out", str(out))
    assert issued.returncode == 0, issued.stderr
    assert "reward.components[judge].tls" in issued.stdout
    server_env = dict(line.strip().split("=", 1) for line in issued.stdout.splitlines() if "MESHRL_GRPC_TLS_" in line)
    command = ["node", "dist/server.js", "--port", "0", "--keywords", "answer"]
    with served_on_any_port(command, ANNOUNCED, cwd=EXAMPLE, env={**os.environ, **server_env}) as address:
        yield address, out


def test_meshrl_reward_check_with_the_client_files_passes(mtls_reward):
    address, out = mtls_reward
    files = ["--tls-ca", str(out / "ca.pem"), "--tls-cert", str(out / "judge-client.pem")]
    done = meshrl("reward", "check", address, *files, "--tls-key", str(out / "judge-client.key"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_caller_without_a_client_certificate_is_refused(mtls_reward):
    address, out = mtls_reward
    with grpc.secure_channel(address, grpc.ssl_channel_credentials((out / "ca.pem").read_bytes())) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            reward_pb2_grpc.RewardServiceStub(channel).Score(
                reward_pb2.ScoreRequest(items=[reward_pb2.ScoreItem(id="g/0", response="answer")]), timeout=20
            )
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE  # the handshake failed: no call reached the server
