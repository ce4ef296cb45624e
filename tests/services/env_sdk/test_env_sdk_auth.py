"""An environment server's TLS and bearer token, attacked over real sockets: no token, a
wrong token, plaintext against TLS. Certificates are made in the test (tests/fixtures/tls_certs.py)."""

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from meshrl.env_sdk import Environment, start, stop
from tests.fixtures.tls_certs import make_certs

TOKEN = "env-test-token-not-a-secret"


class Echo(Environment):
    """The test environment: reset says hello."""

    def reset(self, task):
        return ["hello"]


@pytest.fixture
async def tls_server(tmp_path, monkeypatch):
    certs = make_certs(tmp_path)
    (tmp_path / "token").write_text(TOKEN + "\n")
    monkeypatch.setenv("MESHRL_GRPC_TLS_CERT_FILE", str(certs.server_cert))
    monkeypatch.setenv("MESHRL_GRPC_TLS_KEY_FILE", str(certs.server_key))
    monkeypatch.setenv("MESHRL_ENV_TOKEN_FILE", str(tmp_path / "token"))
    server, port = await start(Echo, host="127.0.0.1")
    yield f"localhost:{port}", grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
    await stop(server, grace=0)


async def reset(channel, metadata=()) -> env_pb2.ResetResponse:
    stub = env_pb2_grpc.EnvironmentServiceStub(channel)
    return await stub.Reset(env_pb2.ResetRequest(episode_id="a/0"), timeout=5, metadata=metadata)


async def test_the_right_token_over_tls_is_served(tls_server):
    address, creds = tls_server
    async with grpc.aio.secure_channel(address, creds) as channel:
        answer = await reset(channel, metadata=(("authorization", f"Bearer {TOKEN}"),))
    assert answer.observation[0].content == "hello"


@pytest.mark.parametrize(
    "metadata",
    [(), (("authorization", "Bearer wrong"),), (("authorization", TOKEN),), (("authorization", f"Bearer {TOKEN}x"),)],
)
async def test_a_missing_or_wrong_token_is_unauthenticated(tls_server, metadata):
    address, creds = tls_server
    async with grpc.aio.secure_channel(address, creds) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await reset(channel, metadata=metadata)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED and TOKEN not in err.value.details()
        listing = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5, metadata=metadata
        )
        with pytest.raises(grpc.aio.AioRpcError) as err:
            [reply async for reply in listing]
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_health_needs_no_token(tls_server):
    """Kubernetes' gRPC probes send no metadata."""
    address, creds = tls_server
    async with grpc.aio.secure_channel(address, creds) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_plaintext_is_refused_by_a_tls_server(tls_server):
    address, _ = tls_server
    async with grpc.aio.insecure_channel(address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await reset(channel, metadata=(("authorization", f"Bearer {TOKEN}"),))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_a_configured_but_missing_token_file_stops_the_start(tmp_path, monkeypatch):
    monkeypatch.setenv("MESHRL_ENV_TOKEN_FILE", str(tmp_path / "absent"))
    with pytest.raises(Exception, match="environment server: token_file .*absent: cannot read it"):
        await start(Echo, host="127.0.0.1")
