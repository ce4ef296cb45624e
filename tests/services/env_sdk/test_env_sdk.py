"""meshrl.env_sdk on a real port: the contract's semantics and every failure's status code.

A test environment (named as such: `Counter`, defined here) counts the steps it really ran,
so idempotency is checked against what the environment did, not only what came back."""

import asyncio
import math
import threading

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from meshrl.env_sdk import EnvError, Environment, Step, start, stop

STEPS_RUN: dict[str, int] = {}
CLOSED: list[str] = []


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Counter(Environment):
    """The test environment: the answer is ground_truth; 'slow' sleeps, 'boom' raises, 'nan' returns NaN."""

    tools = [add]

    def reset(self, task):
        if task.extra.get("reset") == "boom":
            raise KeyError("no such level")
        self.answer = str(task.ground_truth)
        return [f"Find {self.answer}."]

    def step(self, turn):
        STEPS_RUN[self.task.episode_id] = STEPS_RUN.get(self.task.episode_id, 0) + 1
        if turn.text == "slow":
            threading.Event().wait(1.0)
        if turn.text == "boom":
            raise RuntimeError("the world broke")
        if turn.text == "nan":
            return Step(reward=math.nan)
        if turn.text == "refuse":
            raise EnvError.invalid("this environment refuses that turn")
        if turn.tool_calls:
            return Step(self.call_tools(turn), reward=0.1)
        return Step(done=True, reward=float(turn.text == self.answer))

    def close(self):
        CLOSED.append(self.task.episode_id)


class Other(Environment):
    name = "other"


@pytest.fixture
async def server():
    srv, port = await start([Counter, Other], host="127.0.0.1", max_episodes=4)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield srv, channel, env_pb2_grpc.EnvironmentServiceStub(channel)
    await stop(srv, grace=0)


def reset_request(episode_id: str, truth: str = "7", **kwargs) -> env_pb2.ResetRequest:
    return env_pb2.ResetRequest(
        episode_id=episode_id,
        environment="Counter",
        ground_truth_json=f'"{truth}"',
        prompt_messages=[env_pb2.ChatMessage(role="user", content="What is 3+4?")],
        **kwargs,
    )


async def status_of(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    return err.value.code(), err.value.details()


async def test_health_for_the_server_and_the_service(server):
    _, channel, _ = server
    for name in ("", "meshrl.env.v1.EnvironmentService"):
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_an_episode_with_a_tool_call_then_a_right_answer(server):
    srv, _, stub = server
    first = await stub.Reset(reset_request("ep/0"), timeout=5)
    assert [(m.role, m.content) for m in first.observation] == [("user", "Find 7.")]
    assert [t.name for t in first.tools] == ["add"] and '"required":["a","b"]' in first.tools[0].parameters_json
    call = env_pb2.ToolCall(id="c0", name="add", arguments_json='{"a": 3, "b": 4}')
    answer = await stub.Step(
        env_pb2.StepRequest(episode_id="ep/0", turn=0, text="<tool_call>", tool_calls=[call]), timeout=5
    )
    assert [(m.role, m.content, m.tool_call_id, m.name) for m in answer.observation] == [("tool", "7", "c0", "add")]
    assert answer.reward == pytest.approx(0.1) and not answer.done
    final = await stub.Step(env_pb2.StepRequest(episode_id="ep/0", turn=1, text="7"), timeout=5)
    assert final.done and final.reward == 1.0
    await stub.Close(env_pb2.CloseRequest(episode_id="ep/0"), timeout=5)
    assert "ep/0" in CLOSED and "ep/0" not in srv.env_servicer.episodes.open
    await stub.Close(env_pb2.CloseRequest(episode_id="ep/0"), timeout=5)  # closing again: still OK


async def test_reset_and_step_are_idempotent(server):
    _, _, stub = server
    first = await stub.Reset(reset_request("ep/1", truth="5"), timeout=5)
    again = await stub.Reset(reset_request("ep/1", truth="999"), timeout=5)  # a retry: the same answer
    assert again == first and again.observation[0].content == "Find 5."
    step = env_pb2.StepRequest(episode_id="ep/1", turn=0, text="6")
    answers = [await stub.Step(step, timeout=5) for _ in range(3)]
    assert answers[0] == answers[1] == answers[2] and answers[0].reward == 0.0
    assert STEPS_RUN["ep/1"] == 1  # stepped once, answered three times


async def test_statuses_for_bad_steps(server):
    _, _, stub = server
    await stub.Reset(reset_request("ep/2"), timeout=5)
    assert (await status_of(stub.Step(env_pb2.StepRequest(episode_id="nobody/0", turn=0), timeout=5)))[
        0
    ] == grpc.StatusCode.NOT_FOUND
    code, says = await status_of(stub.Step(env_pb2.StepRequest(episode_id="ep/2", turn=3), timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "the next turn is 0" in says
    code, says = await status_of(stub.Step(env_pb2.StepRequest(episode_id="", turn=0), timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "episode_id is empty" in says
    await stub.Step(env_pb2.StepRequest(episode_id="ep/2", turn=0, text="7"), timeout=5)  # done
    code, says = await status_of(stub.Step(env_pb2.StepRequest(episode_id="ep/2", turn=1, text="8"), timeout=5))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "ended at turn 0" in says
    code, says = await status_of(
        stub.Step(env_pb2.StepRequest(episode_id="ep/2", turn=0, text="x" * (1 << 21)), timeout=5)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "text has 2097152 characters" in says


async def test_environment_failures_are_internal_or_its_own_status(server):
    _, _, stub = server
    code, says = await status_of(stub.Reset(reset_request("ep/3", extra_json='{"reset": "boom"}'), timeout=5))
    assert code == grpc.StatusCode.INTERNAL and "Counter.reset (episode 'ep/3') raised KeyError" in says
    for i, (text, code_, says_) in enumerate(
        [
            ("boom", grpc.StatusCode.INTERNAL, "raised RuntimeError: the world broke"),
            ("nan", grpc.StatusCode.INTERNAL, "reward nan"),
            ("refuse", grpc.StatusCode.INVALID_ARGUMENT, "refuses that turn"),
        ]
    ):
        await stub.Reset(reset_request(f"ep/4{i}"), timeout=5)
        code, says = await status_of(
            stub.Step(env_pb2.StepRequest(episode_id=f"ep/4{i}", turn=0, text=text), timeout=5)
        )
        assert code == code_ and says_ in says
    code, says = await status_of(stub.Step(env_pb2.StepRequest(episode_id="ep/40", turn=1, text="7"), timeout=5))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "turn 0 of episode 'ep/40' failed" in says


async def test_unknown_environment_and_malformed_json(server):
    _, _, stub = server
    code, says = await status_of(stub.Reset(env_pb2.ResetRequest(episode_id="e/0", environment="chess"), timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "serves: Counter, other" in says
    other = await stub.Reset(env_pb2.ResetRequest(episode_id="e/1", environment="other"), timeout=5)
    assert list(other.tools) == []
    code, says = await status_of(stub.Reset(reset_request("e/2", extra_json="{oops"), timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "extra_json is not JSON" in says


async def test_deadline_then_the_retry_gets_the_first_answer(server):
    _, _, stub = server
    await stub.Reset(reset_request("ep/5", truth="slow"), timeout=5)
    step = env_pb2.StepRequest(episode_id="ep/5", turn=0, text="slow")
    code, says = await status_of(stub.Step(step, timeout=0.3))
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    answer = await stub.Step(step, timeout=5)
    assert answer.done and answer.reward == 1.0 and STEPS_RUN["ep/5"] == 1


async def test_the_open_episode_cap(server):
    srv, _, stub = server
    for i in range(4):
        await stub.Reset(reset_request(f"cap/{i}"), timeout=5)
    code, says = await status_of(stub.Reset(reset_request("cap/4"), timeout=5))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "max_episodes=4" in says
    await stub.Reset(reset_request("cap/0"), timeout=5)  # an open id is still answered
    await stub.Close(env_pb2.CloseRequest(episode_id="cap/0"), timeout=5)
    await stub.Reset(reset_request("cap/4"), timeout=5)  # room again


async def test_concurrent_episodes(server):
    _, _, stub = server

    async def episode(i: int) -> float:
        await stub.Reset(reset_request(f"conc/{i}", truth=str(i)), timeout=5)
        answer = await stub.Step(env_pb2.StepRequest(episode_id=f"conc/{i}", turn=0, text=str(i % 2)), timeout=5)
        await stub.Close(env_pb2.CloseRequest(episode_id=f"conc/{i}"), timeout=5)
        return answer.reward

    assert await asyncio.gather(*(episode(i) for i in range(4))) == [1.0, 1.0, 0.0, 0.0]


async def test_garbage_bytes_get_a_status(server):
    _, channel, _ = server
    raw = channel.unary_unary("/meshrl.env.v1.EnvironmentService/Step")  # no serializer: bytes as they are
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await raw(b"\xff\xff\xff\xff garbage", timeout=5)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "/meshrl.env.v1.EnvironmentService/Step is not a valid protobuf message" in err.value.details()
