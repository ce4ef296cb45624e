"""The EnvironmentService client against real gRPC servers on real ports (a test fake of the
environment: tests/fixtures/fake_environment.py): deadlines, which statuses are retried,
replicas, garbage answers, TLS and the bearer token.

Run: .venv/bin/python -m pytest tests/services/rollout/agent/test_env_client.py
"""

import pytest

from meshrl.api.env.v1 import env_pb2
from meshrl.config.external_calls import TlsConfig
from meshrl.services.rollout.agent.env_client import EnvClientSettings, EnvironmentClient
from meshrl.services.rollout.agent.failures import EpisodeFailed
from tests.fixtures.fake_environment import EnvRecord, FakeEnvironment, add_fake_to_server, start_fake_environment
from tests.fixtures.tls_certs import make_certs, start_mtls_server

TOKEN = "test-token-not-a-secret"


@pytest.fixture
async def env():
    server, address, record = await start_fake_environment()
    yield address, record
    await server.stop(0)


def client(*addresses, **settings) -> EnvironmentClient:
    return EnvironmentClient(
        EnvClientSettings(
            addresses=addresses, **{"timeout_s": 2.0, "initial_backoff_s": 0.01, "max_backoff_s": 0.05, **settings}
        )
    )


def reset(episode: str, kind: str) -> env_pb2.ResetRequest:
    return env_pb2.ResetRequest(episode_id=episode, environment=kind, ground_truth_json="391")


def step(episode: str, turn: int = 0, text: str = "hello") -> env_pb2.StepRequest:
    return env_pb2.StepRequest(episode_id=episode, turn=turn, text=text)


async def failure_of(coroutine) -> EpisodeFailed:
    with pytest.raises(EpisodeFailed) as caught:
        await coroutine
    return caught.value


async def test_an_episode_round_trip_and_close(env):
    address, record = env
    c = client(address)
    first, repaired = await c.reset(reset("g/0", "arith"))
    assert [t.name for t in first.tools] == ["calculator"] and not repaired
    call = env_pb2.ToolCall(id="call_0_0", name="calculator", arguments_json='{"expression": "17*23"}')
    answer, _ = await c.step(env_pb2.StepRequest(episode_id="g/0", turn=0, tool_calls=[call]))
    assert [(m.role, m.content, m.tool_call_id) for m in answer.observation] == [("tool", "391", "call_0_0")]
    final, _ = await c.step(step("g/0", 1, "It is 391."))
    assert final.done and final.reward == 1.0
    await c.close("g/0")
    assert record.closes == ["g/0"] and c.home == {}
    await c.aclose()


async def test_unavailable_is_retried_and_the_retry_answers(env):
    address, record = env
    c = client(address)
    await c.reset(reset("g/0", "flaky"))
    answer, _ = await c.step(step("g/0"))
    assert answer.observation[0].content == "ok 0" and record.attempts[("g/0", 0)] == 2
    await c.aclose()


@pytest.mark.parametrize(
    "kind, status, message",
    [
        ("hang", "DEADLINE_EXCEEDED", "Step (turn 0) at {address} got no answer within 1 s (environment.timeout_s)"),
        ("lost", "NOT_FOUND", "Step (turn 0) at {address}: no episode 'g/0' here"),
        ("internal", "INTERNAL", "Step (turn 0) at {address}: boom"),
    ],
)
async def test_other_failures_are_not_retried_and_name_the_episode_and_status(env, kind, status, message):
    address, record = env
    c = client(address, timeout_s=1.0)
    await c.reset(reset("g/0", kind))
    failure = await failure_of(c.step(step("g/0")))
    assert (failure.episode_id, failure.status, failure.message) == ("g/0", status, message.format(address=address))
    assert (
        failure.drop_reason
        == f"env_{status.lower()}: episode g/0: environment {status}: {message.format(address=address)}"
    )
    assert record.attempts[("g/0", 0)] == 1  # not retried
    await c.aclose()


async def test_an_answer_that_is_no_protobuf_is_an_invalid_answer_not_retried(env):
    address, record = env
    c = client(address)
    await c.reset(reset("g/0", "garbage"))
    failure = await failure_of(c.step(step("g/0")))
    assert failure.status == "INVALID_ANSWER" and record.attempts[("g/0", 0)] == 1
    assert failure.message.startswith(
        f"Step (turn 0) at {address}: answered 19 bytes that are no StepResponse "
        f"(Error parsing message with type 'meshrl.env.v1.StepResponse'"
    )
    await c.aclose()


async def test_bad_utf8_in_an_answer_is_repaired(env):
    address, _ = env
    c = client(address)
    await c.reset(reset("g/0", "bad_utf8"))
    answer, repaired = await c.step(step("g/0"))
    assert repaired and answer.observation[0].content == "o\ufffd 0"
    await c.aclose()


async def test_nothing_listening_is_retried_then_unavailable(unused_tcp_port):
    c = client(f"127.0.0.1:{unused_tcp_port}", attempts=3)
    failure = await failure_of(c.reset(reset("g/0", "arith")))
    assert failure.status == "UNAVAILABLE" and failure.message.startswith("Reset: ")
    await c.aclose()


async def test_a_busy_replica_sends_the_reset_to_the_next_and_steps_follow_it():
    busy_server, busy, busy_record = await start_fake_environment(busy=True)
    free_server, free, free_record = await start_fake_environment()
    try:
        c = client(busy, free)
        await c.reset(reset("g/0", "busy"))
        await c.step(step("g/0"))
        assert c.home["g/0"] == free and len(busy_record.resets) == 1 and len(free_record.steps) == 1
        await c.close("g/0")
        assert free_record.closes == ["g/0"] and busy_record.closes == []
        await c.aclose()
    finally:
        await busy_server.stop(0)
        await free_server.stop(0)


async def test_resets_are_spread_over_replicas():
    servers = [await start_fake_environment() for _ in range(2)]
    try:
        c = client(*(address for _, address, _ in servers))
        for i in range(4):
            await c.reset(reset(f"g/{i}", "chatty"))
        assert [len(record.resets) for _, _, record in servers] == [2, 2]
        await c.aclose()
    finally:
        for server, _, _ in servers:
            await server.stop(0)


async def test_a_step_without_a_reset_fails_before_any_call(env):
    address, record = env
    failure = await failure_of(client(address).step(step("g/9")))
    assert failure.status == "FAILED_PRECONDITION" and record.steps == []


async def test_close_never_raises_when_the_environment_is_gone(env):
    address, record = env
    c = client(address)
    await c.reset(reset("g/0", "chatty"))
    c.home["g/0"] = "127.0.0.1:1"  # as if its replica died
    await c.close("g/0")
    assert "g/0" not in c.home
    await c.aclose()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
async def tls_env(certs):
    """A fake environment that requires mutual TLS and the bearer token."""
    server, address = await start_mtls_server(
        certs, lambda s: add_fake_to_server(FakeEnvironment(EnvRecord()), s), token=TOKEN
    )
    yield address
    await server.stop(0)


def mtls(certs) -> TlsConfig:
    return TlsConfig(ca_file=str(certs.ca), cert_file=str(certs.client_cert), key_file=str(certs.client_key))


async def test_mutual_tls_and_the_token_are_accepted(tls_env, certs, monkeypatch):
    monkeypatch.setenv("ENV_TOKEN", TOKEN)
    c = client(tls_env, tls=mtls(certs), token_env="ENV_TOKEN")
    first, _ = await c.reset(reset("g/0", "arith"))
    assert first.tools[0].name == "calculator"
    await c.aclose()


async def test_a_wrong_token_is_unauthenticated_and_not_retried(tls_env, certs, tmp_path):
    (tmp_path / "token").write_text("wrong-token\n")
    c = client(tls_env, tls=mtls(certs), token_file=str(tmp_path / "token"))
    failure = await failure_of(c.reset(reset("g/0", "arith")))
    assert (failure.status, failure.message) == ("UNAUTHENTICATED", "Reset: missing or wrong bearer token")
    await c.aclose()


async def test_without_a_client_certificate_the_tls_server_refuses(tls_env, certs, monkeypatch):
    monkeypatch.setenv("ENV_TOKEN", TOKEN)
    c = client(tls_env, tls=TlsConfig(ca_file=str(certs.ca)), token_env="ENV_TOKEN", attempts=1)
    failure = await failure_of(c.reset(reset("g/0", "arith")))
    assert failure.status == "UNAVAILABLE"
    await c.aclose()


async def test_plaintext_to_the_tls_server_fails(tls_env, monkeypatch):
    monkeypatch.setenv("ENV_TOKEN", TOKEN)
    failure = await failure_of(client(tls_env, token_env="ENV_TOKEN", attempts=1).reset(reset("g/0", "arith")))
    assert failure.status == "UNAVAILABLE"
