"""The TypeScript environment example (examples/external_env_ts, @grpc/grpc-js) as a real
process with a bearer token: `meshrl env check` passes against it (the token row included),
and a hand-played episode gets the hand-computed observations and reward. Skipped only when
node or npm is not installed."""

import json
import os
import subprocess
import sys

import grpc
import pytest

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from tests.fixtures.node_example import EXAMPLES, build, needs_node
from tests.fixtures.served import served_on_any_port

EXAMPLE = EXAMPLES / "external_env_ts"
ANNOUNCED = r" on \S+:(\d+)$"  # the line the server prints once it listens: its bound port
TOKEN = "ts-env-token-not-a-secret"
AUTH = (("authorization", f"Bearer {TOKEN}"),)
pytestmark = needs_node


@pytest.fixture(scope="module")
def ts_env(tmp_path_factory):
    build(EXAMPLE)
    token_file = tmp_path_factory.mktemp("ts-env") / "token"
    token_file.write_text(TOKEN + "\n")
    env = {**os.environ, "MESHRL_ENV_TOKEN_FILE": str(token_file)}
    with served_on_any_port(["node", "dist/server.js", "--port", "0"], ANNOUNCED, cwd=EXAMPLE, env=env) as address:
        yield address, token_file


def test_meshrl_env_check_passes(ts_env):
    address, token_file = ts_env
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "meshrl.cli.main",
            "env",
            "check",
            address,
            "--environment",
            "guess_number",
            "--token-file",
            str(token_file),
            "--timeout",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "23 of 23 checks passed" in done.stdout and "no token → UNAUTHENTICATED" in done.stdout
    assert TOKEN not in done.stdout


async def test_an_episode_played_by_hand(ts_env):
    address, _ = ts_env

    def guess(n, call_id):
        return env_pb2.ToolCall(id=call_id, name="check_guess", arguments_json=json.dumps({"guess": n}))

    async with grpc.aio.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvironmentServiceStub(channel)
        first = await stub.Reset(
            env_pb2.ResetRequest(episode_id="g/0", ground_truth_json="42"), timeout=10, metadata=AUTH
        )
        assert [t.name for t in first.tools] == ["check_guess"]
        hints = await stub.Step(
            env_pb2.StepRequest(episode_id="g/0", turn=0, tool_calls=[guess(30, "a"), guess(50, "b")]),
            timeout=10,
            metadata=AUTH,
        )
        assert [(m.content, m.tool_call_id) for m in hints.observation] == [("higher", "a"), ("lower", "b")]
        assert not hints.done and not hints.HasField("reward")
        final = await stub.Step(
            env_pb2.StepRequest(episode_id="g/0", turn=1, text="It is 42."), timeout=10, metadata=AUTH
        )
        assert final.done and final.reward == 1.0 and json.loads(final.info_json) == {"answer": 42, "correct": True}


async def test_a_turn_of_refused_calls_is_no_answer_and_the_number_comes_from_the_group_seed(ts_env):
    address, _ = ts_env
    refused = env_pb2.RejectedToolCall(id="call_0_0", raw_text="<tool_call>{bad</tool_call>", reason="not JSON")
    async with grpc.aio.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvironmentServiceStub(channel)
        for episode, seed in (("s/0", 11), ("s/1", 12)):  # one group: one group_seed, two episode seeds
            await stub.Reset(
                env_pb2.ResetRequest(episode_id=episode, seed=seed, group_seed=240), timeout=10, metadata=AUTH
            )
        turn = await stub.Step(
            env_pb2.StepRequest(
                episode_id="s/0", turn=0, text="<tool_call>{bad</tool_call>", rejected_tool_calls=[refused]
            ),
            timeout=10,
            metadata=AUTH,
        )
        assert not turn.done and list(turn.observation) == [] and not turn.HasField("reward")
        for episode, turn_index in (("s/0", 1), ("s/1", 0)):  # 240 % 100 + 1 = 41 for both
            final = await stub.Step(
                env_pb2.StepRequest(episode_id=episode, turn=turn_index, text="41"), timeout=10, metadata=AUTH
            )
            assert final.done and final.reward == 1.0
