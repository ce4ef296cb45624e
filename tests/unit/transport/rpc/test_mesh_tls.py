"""The mesh's gRPC over TLS on real grpc.aio servers on real ports: a server given
MESHRL_GRPC_TLS_CERT/KEY_FILE serves TLS only (a plaintext client gets no answer), a client
with the CA gets SERVING; with MESHRL_GRPC_TLS_CLIENT_AUTH=1 a client without its certificate
is refused; `meshrl health` works from the same environment.

    .venv/bin/python -m pytest -q tests/unit/transport/rpc/test_mesh_tls.py
"""

import asyncio

import pytest

from meshrl.cli.health import check
from meshrl.config import ConfigError
from meshrl.transport.certs import new_ca
from meshrl.transport.rpc import start_server, stop_server
from meshrl.transport.rpc.channel import is_serving
from meshrl.transport.rpc.mesh_tls import CA_ENV, CERT_ENV, CLIENT_AUTH_ENV, KEY_ENV, server_credentials

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("mesh-pki")
    ca = new_ca("mesh test CA", days=1)
    server = ca.issue("learner", hosts=["127.0.0.1", "localhost"], client=True).write(d / "learner")
    client = ca.issue("eval", server=False, client=True).write(d / "eval")
    return {"ca": str(ca.write(d / "ca.pem")), "server": [str(p) for p in server], "client": [str(p) for p in client]}


def _env(monkeypatch, ca=None, pair=None, client_auth=None):
    values = {CA_ENV: ca, CERT_ENV: pair and pair[0], KEY_ENV: pair and pair[1], CLIENT_AUTH_ENV: client_auth}
    for name, value in values.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


async def _check(address: str, timeout: float) -> tuple[int, str]:
    # `meshrl health` is a blocking client: off the event loop the server runs on.
    return await asyncio.to_thread(check, address, "", timeout)


async def _serve(monkeypatch, pki, client_auth: str | None):
    _env(monkeypatch, pki["ca"], pki["server"], client_auth)
    server, port = await start_server([], host="127.0.0.1")
    return server, f"127.0.0.1:{port}"


async def test_tls_server_refuses_plaintext_and_answers_tls(monkeypatch, pki):
    server, address = await _serve(monkeypatch, pki, None)
    try:
        _env(monkeypatch)
        assert await is_serving(address, timeout=2) is False
        assert (await _check(address, 2))[0] == 2
        _env(monkeypatch, pki["ca"])
        assert await is_serving(address, timeout=5) is True
        assert await _check(address, 5) == (0, f"{address}: SERVING")
    finally:
        await stop_server(server, grace=0)


async def test_mutual_tls_refuses_a_client_without_certificate(monkeypatch, pki):
    server, address = await _serve(monkeypatch, pki, "1")
    try:
        _env(monkeypatch, pki["ca"])
        assert await is_serving(address, timeout=2) is False
        _env(monkeypatch, pki["ca"], pki["client"])
        assert await is_serving(address, timeout=5) is True
        assert (await _check(address, 5))[0] == 0
    finally:
        await stop_server(server, grace=0)


def test_bad_settings_name_the_variable(pki):
    assert server_credentials({}) is None
    with pytest.raises(ConfigError, match=KEY_ENV):
        server_credentials({CERT_ENV: pki["server"][0]})
    with pytest.raises(ConfigError, match=CA_ENV):
        server_credentials({CERT_ENV: pki["server"][0], KEY_ENV: pki["server"][1], CLIENT_AUTH_ENV: "1"})
    with pytest.raises(ConfigError, match=CLIENT_AUTH_ENV):
        server_credentials({CLIENT_AUTH_ENV: "yes"})
    with pytest.raises(ConfigError, match="missing.key"):
        server_credentials({CERT_ENV: pki["server"][0], KEY_ENV: "/nonexistent/missing.key"})
