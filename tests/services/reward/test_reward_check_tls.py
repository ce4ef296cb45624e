"""`meshrl reward check` over mutual TLS with a bearer token (certificates made in the test,
tests/fixtures/tls_certs.py; the server checks the token), and its usage errors."""

import asyncio
import sys

import pytest

from meshrl.api.reward.v1 import reward_pb2_grpc
from meshrl.reward_sdk import FunctionServicer
from tests.fixtures.tls_certs import make_certs, start_mtls_server

TOKEN = "kit-test-token-not-a-secret"


@pytest.fixture
async def mtls(tmp_path):
    certs = make_certs(tmp_path)
    server, address = await start_mtls_server(
        certs,
        lambda s: reward_pb2_grpc.add_RewardServiceServicer_to_server(
            FunctionServicer(lambda item: len(item.response) % 3), s
        ),
        token=TOKEN,
    )
    (tmp_path / "token").write_text(TOKEN + "\n")
    tls = ["--tls-ca", str(certs.ca), "--tls-cert", str(certs.client_cert), "--tls-key", str(certs.client_key)]
    yield address, tls, tmp_path / "token"
    await server.stop(0)


async def cli(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "meshrl.cli.main",
        "reward",
        "check",
        *args,
        "--timeout",
        "20",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode, out.decode()


async def test_mtls_and_token_pass(mtls):
    address, tls, token = mtls
    code, out = await cli(address, *tls, "--token-file", str(token))
    assert code == 0, out
    assert "12 of 12 checks passed" in out and TOKEN not in out


async def test_without_token_fails_naming_unauthenticated(mtls):
    address, tls, _ = mtls
    code, out = await cli(address, *tls)
    assert code == 1
    assert "UNAUTHENTICATED: missing or wrong bearer token" in out


async def test_unreadable_token_file_is_a_usage_error(tmp_path):
    code, out = await cli("127.0.0.1:1", "--token-file", str(tmp_path / "missing"))
    assert code == 2 and "--token-file" in out and "fix the path" in out
