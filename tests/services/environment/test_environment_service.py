"""The environment service as a real process (python -m meshrl.services.environment) on a real
port: a tool_arith episode with a calculator call, the python tool through gRPC, an alias, a
bad tool call as an error observation, and the refusals at start-up."""

import json
import subprocess
import sys

import grpc
import pytest

from meshrl.addresses import free_port
from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from meshrl.cli.env_check import run_suite
from meshrl.cli.env_check.task import task_request
from meshrl.services.environment.sandbox import detect
from tests.fixtures.served import served


@pytest.fixture(scope="module")
def address():
    port = free_port()
    with served(
        [
            sys.executable,
            "-m",
            "meshrl.services.environment",
            "--port",
            str(port),
            "--environments",
            "tool_arith,calc=calculator" + (",python" if detect().mode else ""),
            "--sandbox-wall-s",
            "5",
        ],
        port,
    ) as address:
        yield address


def call(name: str, **arguments) -> env_pb2.ToolCall:
    return env_pb2.ToolCall(id=f"c-{name}", name=name, arguments_json=json.dumps(arguments))


async def test_tool_arith_episode(address):
    async with grpc.aio.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvironmentServiceStub(channel)
        first = await stub.Reset(
            env_pb2.ResetRequest(episode_id="g/0", environment="tool_arith", ground_truth_json='"295830"'), timeout=10
        )
        schema = json.loads(first.tools[0].parameters_json)
        assert first.tools[0].name == "calculator" and schema["required"] == ["expression"]
        answer = await stub.Step(
            env_pb2.StepRequest(
                episode_id="g/0",
                turn=0,
                tool_calls=[call("calculator", expression="865*342"), call("calculator", expression="import os")],
            ),
            timeout=10,
        )
        assert answer.observation[0].content == "295830" and not answer.done
        assert answer.observation[1].content.startswith("error: calculator failed: ValueError: 'import os'")
        final = await stub.Step(env_pb2.StepRequest(episode_id="g/0", turn=1, text="It is 295830."), timeout=10)
        assert final.done and final.reward == 1.0
        assert json.loads(final.info_json) == {"answer": 295830.0, "correct": True, "tool_calls": 2, "tool_errors": 1}
        await stub.Close(env_pb2.CloseRequest(episode_id="g/0"), timeout=10)


async def test_tool_arith_takes_a_turn_of_refused_calls_for_no_answer(address):
    refused = env_pb2.RejectedToolCall(
        id="call_0_0", raw_text="<tool_call>{865*342</tool_call>", reason="the call is not valid JSON"
    )
    async with grpc.aio.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvironmentServiceStub(channel)
        await stub.Reset(
            env_pb2.ResetRequest(episode_id="r/0", environment="tool_arith", ground_truth_json="295830"), timeout=10
        )
        text = "I will compute <tool_call>{865*342</tool_call>"  # a number in the text: no answer all the same
        turn = await stub.Step(
            env_pb2.StepRequest(episode_id="r/0", turn=0, text=text, rejected_tool_calls=[refused]), timeout=10
        )
        assert not turn.done and list(turn.observation) == [] and not turn.HasField("reward")
        assert json.loads(turn.info_json) == {"tool_calls": 1, "tool_errors": 1}
        final = await stub.Step(env_pb2.StepRequest(episode_id="r/0", turn=1, text="\\boxed{295830}"), timeout=10)
        assert final.done and final.reward == 1.0
        await stub.Close(env_pb2.CloseRequest(episode_id="r/0"), timeout=10)


async def test_an_alias_serves_a_builtin(address):
    async with grpc.aio.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvironmentServiceStub(channel)
        await stub.Reset(env_pb2.ResetRequest(episode_id="a/0", environment="calc"), timeout=10)
        answer = await stub.Step(
            env_pb2.StepRequest(episode_id="a/0", turn=0, tool_calls=[call("calculator", expression="2^10")]),
            timeout=10,
        )
        assert answer.observation[0].content == "1024" and not answer.done


@pytest.mark.skipif(not detect().mode, reason="no namespaces here: the python tool is refused")
async def test_python_tool_over_grpc(address):
    async with grpc.aio.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvironmentServiceStub(channel)
        await stub.Reset(env_pb2.ResetRequest(episode_id="p/0", environment="python"), timeout=10)
        answer = await stub.Step(
            env_pb2.StepRequest(
                episode_id="p/0",
                turn=0,
                tool_calls=[
                    call("python", code="print(sum(i*i for i in range(10)))"),
                    call(
                        "python", code="import urllib.request\nurllib.request.urlopen('http://example.com', timeout=2)"
                    ),
                ],
            ),
            timeout=20,
        )
        ok, offline = (json.loads(m.content) for m in answer.observation)
        assert ok == {"exit_code": 0, "stdout": "285\n", "stderr": ""}
        assert offline["exit_code"] == 1 and "URLError" in offline["stderr"]


def refusal(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "meshrl.services.environment", "--port", str(free_port()), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_an_unknown_builtin_is_refused():
    done = refusal("--environments", "chess")
    assert done.returncode == 2
    assert "unknown built-in environment 'chess'; registered: calculator, python, tool_arith" in done.stderr


def test_the_python_tool_is_refused_where_it_cannot_be_sandboxed(tmp_path):
    """No `unshare` on PATH: the service must refuse, not run programs unsandboxed."""
    done = refusal("--environments", "python", env={"PATH": str(tmp_path)})
    assert done.returncode == 2 and "the python tool cannot be sandboxed here" in done.stderr
    assert "unshare" in done.stderr


@pytest.mark.parametrize("environment", ["tool_arith", "calc"])
async def test_the_conformance_kit_passes(address, environment):
    task = task_request({"prompt": "What is 865*342?", "reward_model": {"ground_truth": "295830"}}, environment)
    async with grpc.aio.insecure_channel(address) as channel:
        rows = await run_suite(channel, task=task, timeout_s=20)
    assert [r for r in rows if r.outcome == "FAIL"] == []
