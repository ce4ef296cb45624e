"""TLS, mutual TLS and the bearer token to an external reward service, against a real
grpc.aio server on a real port that requires a client certificate signed by the test CA
and `authorization: Bearer <token>` on every call (health included). Certificates are made
in the test (tests/fixtures/tls_certs.py)."""

import pytest

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.config import ConfigError
from meshrl.config.schema import RewardComponentConfig
from meshrl.services.reward.external import ExternalComponent, check_reachable
from meshrl.services.reward.types import RewardItem, Status
from tests.fixtures.tls_certs import make_certs, start_mtls_server

TOKEN = "test-token-not-a-secret"
ITEMS = [RewardItem(id="g/0", response="abc")]


class Judge(reward_pb2_grpc.RewardServiceServicer):
    async def Score(self, request, context):
        return reward_pb2.ScoreResponse(
            results=[
                reward_pb2.ScoreResult(id=it.id, score=0.25, status=reward_pb2.SCORE_STATUS_OK) for it in request.items
            ]
        )


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
async def mtls_address(certs):
    server, address = await start_mtls_server(
        certs, lambda s: reward_pb2_grpc.add_RewardServiceServicer_to_server(Judge(), s), token=TOKEN
    )
    yield address
    await server.stop(0)


def judge(address: str, **cfg) -> ExternalComponent:
    return ExternalComponent.from_config(
        RewardComponentConfig(
            name="judge", kind="external", address=address, timeout_s=3.0, retry={"attempts": 1}, **cfg
        )
    )


async def score(comp: ExternalComponent):
    try:
        return (await comp.score(ITEMS))[0]
    finally:
        await comp.close()


def mtls(certs) -> dict:
    return {"ca_file": str(certs.ca), "cert_file": str(certs.client_cert), "key_file": str(certs.client_key)}


async def test_mtls_and_token_from_env_are_accepted(mtls_address, certs, monkeypatch):
    monkeypatch.setenv("JUDGE_TOKEN", TOKEN)
    comp = judge(mtls_address, tls=mtls(certs), token_env="JUDGE_TOKEN")
    await check_reachable(comp, within_s=5.0)
    result = await score(comp)
    assert result.status == Status.OK and result.value == 0.25


async def test_token_from_file_is_accepted(mtls_address, certs, tmp_path):
    (tmp_path / "token").write_text(TOKEN + "\n")
    result = await score(judge(mtls_address, tls=mtls(certs), token_file=str(tmp_path / "token")))
    assert result.status == Status.OK


async def test_without_token_refused(mtls_address, certs):
    result = await score(judge(mtls_address, tls=mtls(certs)))
    assert result.status == Status.ERROR and "UNAUTHENTICATED: missing or wrong bearer token" in result.error


async def test_wrong_token_refused(mtls_address, certs, monkeypatch):
    monkeypatch.setenv("JUDGE_TOKEN", "guessed")
    result = await score(judge(mtls_address, tls=mtls(certs), token_env="JUDGE_TOKEN"))
    assert result.status == Status.ERROR and "UNAUTHENTICATED" in result.error


async def test_without_client_certificate_refused(mtls_address, certs, monkeypatch):
    monkeypatch.setenv("JUDGE_TOKEN", TOKEN)
    comp = judge(mtls_address, tls={"ca_file": str(certs.ca)}, token_env="JUDGE_TOKEN")
    with pytest.raises(ConnectionError, match="not reachable within 1s.*tls / token settings"):
        await check_reachable(comp, within_s=1.0)
    result = await score(comp)
    assert result.status == Status.ERROR and "UNAVAILABLE" in result.error


async def test_plaintext_to_a_tls_service_refused(mtls_address, monkeypatch):
    monkeypatch.setenv("JUDGE_TOKEN", TOKEN)
    result = await score(judge(mtls_address, token_env="JUDGE_TOKEN"))
    assert result.status == Status.ERROR and "UNAVAILABLE" in result.error


async def test_unset_token_env_and_missing_files_are_config_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="NO_SUCH_TOKEN, but that environment variable is unset"):
        judge("127.0.0.1:1", token_env="NO_SUCH_TOKEN").calls.open()
    with pytest.raises(ConfigError, match="cannot read tls.ca_file .*missing.pem"):
        judge("127.0.0.1:1", tls={"ca_file": str(tmp_path / "missing.pem")}).calls.open()
