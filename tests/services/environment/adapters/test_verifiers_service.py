"""The verifiers adapter as a service: meshrl's environment service (the mesh's process contract,
real NATS, a real gRPC port) serving `environment.verifiers` with the library in its own venv
(a real library worker child), for two small verifiers environments written as installable
packages (tests/fixtures/verifiers_envs: a SingleTurnEnv of sums, a ToolEnv with an `add` tool).
Episodes are played over env.proto; the rewards are the rubrics' weighted sums computed by
hand, each rubric function's score in the answer's info. A rubric that returns NaN or text
fails that episode (INTERNAL naming the function) and the service goes on; a task that is no
row of the environment is INVALID_ARGUMENT; a child killed with SIGKILL loses its episodes
(NOT_FOUND) and the next Reset is served by a new one.

Run: .venv/bin/python -m pytest -q tests/services/environment/adapters/test_verifiers_service.py
"""

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys

import grpc
import pytest

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from meshrl.env_sdk.messages import to_proto
from tests.fixtures.run_config import write_config
from tests.fixtures.tls_certs import make_certs
from tests.fixtures.verifiers_envs import calc_prompt, sums_prompt, verifiers_python
from tests.services.environment.adapters.openenv_servers import environment_service
from tests.services.environment.test_environment_process import announced

pytestmark = pytest.mark.slow  # each service imports verifiers in its own child (tens of seconds on 2 cores)

CALL_S = 60
CLI = [sys.executable, "-m", "meshrl.cli.main"]


@pytest.fixture(scope="module")
def vf_python() -> str:
    return verifiers_python()


@contextlib.asynccontextmanager
async def adapter(tmp_path, nats_url, run_id, bus, block: dict, name: str = "sums"):
    """A stub of the environment service serving `block` as environment `name`, and its process."""
    config = write_config(tmp_path, environment={"name": name, "verifiers": block})
    proc = environment_service(nats_url, run_id, config)
    try:
        addresses = await announced(bus, proc, within_s=300)
        assert addresses, proc.communicate()[0][-3000:]
        async with grpc.aio.insecure_channel(addresses[0]) as channel:
            yield env_pb2_grpc.EnvironmentServiceStub(channel), proc
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.to_thread(proc.communicate, timeout=60)
    assert proc.returncode == 0, out[-3000:]


async def reset(stub, episode_id: str, row: int, prompt: list[dict], name: str = "sums", **extra):
    extra_info = {"verifiers": {"row": row, "split": "train", **extra}}
    request = env_pb2.ResetRequest(
        episode_id=episode_id,
        environment=name,
        prompt_messages=[to_proto(m) for m in prompt],
        extra_json=json.dumps(extra_info),
    )
    return await stub.Reset(request, timeout=CALL_S)


async def step(stub, episode_id: str, turn: int, text: str, calls=()) -> env_pb2.StepResponse:
    request = env_pb2.StepRequest(episode_id=episode_id, turn=turn, text=text, tool_calls=list(calls))
    return await stub.Step(request, timeout=CALL_S)


async def test_single_turn_episodes_score_with_the_rubric_and_report_each_function(
    tmp_path, nats_url, run_id, bus, vf_python
):
    block = {"module": "meshrl_vf_sums", "args": {"n": 4}, "python": vf_python}
    async with adapter(tmp_path, nats_url, run_id, bus, block) as (stub, proc):
        firsts = await asyncio.gather(*(reset(stub, f"g/{i}", i, sums_prompt(i)) for i in range(3)))
        # row 0: 1 + 3 = 4, row 1: 2 + 5 = 7, row 2: 3 + 7 = 10
        texts = ["The sum is <answer>4</answer>", "<answer>8</answer>", "It is 10."]
        answers = await asyncio.gather(*(step(stub, f"g/{i}", 0, t) for i, t in enumerate(texts)))
        again = await step(stub, "g/0", 0, "anything")  # a retry of turn 0: the same answer
        refused = await refusals(stub)
        lost, later = await killed_child(stub, proc)
    assert [(list(f.observation), list(f.tools)) for f in firsts] == [([], [])] * 3
    assert json.loads(firsts[1].info_json) == {"verifiers_row": 1, "split": "train"}
    # correct_answer x 1.0 + answer_format x 0.5 (+ MultiTurnEnv's num_turns, weight 0)
    assert [a.reward for a in answers] == [1.5, 0.5, 0.0] and all(a.done for a in answers)
    infos = [json.loads(a.info_json) for a in answers]
    assert [i["reward_details"] for i in infos] == [
        {"correct_answer": 1.0, "answer_format": 1.0, "num_turns": 1.0},
        {"correct_answer": 0.0, "answer_format": 1.0, "num_turns": 1.0},
        {"correct_answer": 0.0, "answer_format": 0.0, "num_turns": 1.0},
    ]
    assert infos[0]["reward_weights"] == {"correct_answer": 1.0, "answer_format": 0.5, "num_turns": 0.0}
    assert again == answers[0]
    # tasks that are no row of the environment: INVALID_ARGUMENT, saying why
    assert {w: c for w, (c, _) in refused.items()} == dict.fromkeys(refused, grpc.StatusCode.INVALID_ARGUMENT)
    assert "meshrl data verifiers" in refused["no row"][1] and "rows 0..3" in refused["row 9 of 4"][1]
    assert "not the prompt of row 0" in refused["another prompt"][1] and "'eval' split" in refused["eval split"][1]
    # the child killed mid-episode: that episode is lost, a new child serves the next
    assert lost.code() == grpc.StatusCode.NOT_FOUND and "died" in lost.details()
    assert later.done and later.reward == 1.5


async def refusals(stub) -> dict:
    """{case: (code, message)} of Resets whose task is no row of the environment."""
    codes = {}
    for what, call in {
        "no row": stub.Reset(env_pb2.ResetRequest(episode_id="x/0", environment="sums"), timeout=CALL_S),
        "row 9 of 4": reset(stub, "x/1", 9, sums_prompt(0)),
        "another prompt": reset(stub, "x/2", 0, sums_prompt(1)),
        "eval split": reset(stub, "x/3", 0, sums_prompt(0), split="eval"),
    }.items():
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call
        codes[what] = (err.value.code(), err.value.details())
    return codes


async def killed_child(stub, proc) -> tuple:
    """SIGKILL the library worker mid-episode: (the lost episode's error, the next episode's answer)."""
    await reset(stub, "k/0", 0, sums_prompt(0))
    os.kill(child_of(proc.pid), signal.SIGKILL)
    with pytest.raises(grpc.aio.AioRpcError) as lost:
        await step(stub, "k/0", 0, "<answer>4</answer>")
    await reset(stub, "k/1", 0, sums_prompt(0))
    return lost.value, await step(stub, "k/1", 0, "<answer>4</answer>")


async def test_a_tool_using_episode_runs_the_environments_tool_over_several_turns(
    tmp_path, nats_url, run_id, bus, vf_python
):
    block = {"module": "meshrl_vf_calc", "args": {"n": 2, "max_turns": 3}, "python": vf_python}
    async with adapter(tmp_path, nats_url, run_id, bus, block, name="calc") as (stub, _):
        first = await reset(stub, "g/0", 1, calc_prompt(1), name="calc")  # 207 + 95 = 302
        call = env_pb2.ToolCall(id="call_7", name="add", arguments_json=json.dumps({"a": 207, "b": 95}))
        text = 'Adding. <tool_call>{"name": "add", "arguments": {"a": 207, "b": 95}}</tool_call>'
        used = await step(stub, "g/0", 0, text, [call])
        bad = env_pb2.RejectedToolCall(id="call_1_0", name="add", raw_text="<tool_call>{not json", reason="bad JSON")
        refused = await stub.Step(
            env_pb2.StepRequest(episode_id="g/0", turn=1, text=bad.raw_text, rejected_tool_calls=[bad]), timeout=CALL_S
        )
        final = await step(stub, "g/0", 2, "So <answer>302</answer>")
    [tool] = first.tools
    assert tool.name == "add" and tool.description == "Add two integers."
    assert json.loads(tool.parameters_json)["required"] == ["a", "b"]
    assert [(m.role, m.content, m.tool_call_id) for m in used.observation] == [("tool", "302", "call_7")]
    assert not used.done and not used.HasField("reward")
    # a turn of calls meshrl refused goes on (the environment counts the call, meshrl told the
    # model why: the environment's own error for it is not shown twice)
    assert list(refused.observation) == [] and not refused.done
    # ended by max_turns (3): correct_answer 1.0 x 1.0 + used_tool 1.0 x 0.5
    assert final.done and final.reward == 1.5
    info = json.loads(final.info_json)
    assert info["reward_details"] == {
        "correct_answer": 1.0, "used_tool": 1.0, "num_turns": 3.0, "total_tool_calls": 2.0, "add_calls": 2.0
    }  # fmt: skip
    assert info["stop_condition"] == "max_turns_reached"


async def test_a_rubric_that_gives_nan_or_text_fails_the_episode_naming_it_and_the_service_goes_on(
    tmp_path, nats_url, run_id, bus, vf_python
):
    """broken_reward (fixture): NaN for row 0's answer, "high" for row 1's, 0.0 otherwise."""
    block = {"module": "meshrl_vf_sums", "args": {"n": 3, "rubric_bug": "by_answer"}, "python": vf_python}
    failures = {}
    async with adapter(tmp_path, nats_url, run_id, bus, block) as (stub, _):
        for row in (0, 1):
            await reset(stub, f"b/{row}", row, sums_prompt(row))
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await step(stub, f"b/{row}", 0, "<answer>0</answer>")
            failures[row] = (err.value.code(), err.value.details())
        await reset(stub, "b/2", 2, sums_prompt(2))
        fine = await step(stub, "b/2", 0, "<answer>10</answer>")
    assert {r: c for r, (c, _) in failures.items()} == {0: grpc.StatusCode.INTERNAL, 1: grpc.StatusCode.INTERNAL}
    assert "broken_reward returned nan (not finite)" in failures[0][1]
    assert "broken_reward returned 'high' (not a number)" in failures[1][1]
    assert fine.reward == 1.5 and json.loads(fine.info_json)["reward_details"]["broken_reward"] == 0.0


async def test_meshrl_env_check_passes_against_the_adapter_under_mutual_tls_with_a_token(
    tmp_path, nats_url, run_id, bus, vf_python
):
    """The run's TLS and token are the environment service's, so the adapter gets them as a
    built-in does (MESHRL_GRPC_TLS_*, MESHRL_ENV_TOKEN_FILE: what the launcher gives replicas)."""
    certs, token = make_certs(tmp_path), tmp_path / "env-token"
    token.write_text("a-token-for-the-kit")
    secured = {
        "MESHRL_GRPC_TLS_CERT_FILE": str(certs.server_cert), "MESHRL_GRPC_TLS_KEY_FILE": str(certs.server_key),
        "MESHRL_GRPC_TLS_CLIENT_AUTH": "1", "MESHRL_GRPC_TLS_CA_FILE": str(certs.ca),
        "MESHRL_ENV_TOKEN_FILE": str(token),
    }  # fmt: skip
    row = tmp_path / "row.json"
    row.write_text(json.dumps({"prompt": calc_prompt(0), "reward_model": {"ground_truth": "165"},
                               "extra_info": {"verifiers": {"row": 0, "split": "train"}}}))  # fmt: skip
    config = write_config(tmp_path, environment={"name": "calc", "verifiers": {
        "module": "meshrl_vf_calc", "args": {"n": 2}, "python": vf_python}})  # fmt: skip
    proc = environment_service(nats_url, run_id, config, env=secured)
    try:
        [address] = await announced(bus, proc, within_s=300)
        kit = [*CLI, "env", "check", address, "--environment", "calc", "--task", str(row), "--timeout", "60",
               "--tls-ca", str(certs.ca), "--tls-cert", str(certs.client_cert), "--tls-key", str(certs.client_key),
               "--token-file", str(token)]  # fmt: skip
        done = await asyncio.to_thread(subprocess.run, kit, capture_output=True, text=True, timeout=600)
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.communicate, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no token → UNAUTHENTICATED" in done.stdout and "checks passed" in done.stdout, done.stdout


def child_of(pid: int) -> int:
    """The library worker child of the service process `pid`."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        children = [int(c) for c in f.read().split()]
    for child in children:
        with open(f"/proc/{child}/cmdline", "rb") as f:
            if b"handlers.py" in f.read():
                return child
    raise AssertionError(f"no library worker under {pid}: {children}")
