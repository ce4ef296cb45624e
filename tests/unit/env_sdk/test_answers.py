"""What an environment returns → a checked ResetResponse / StepResponse; requests decoded."""

import math

import pytest

from meshrl.api.env.v1 import env_pb2
from meshrl.env_sdk import EnvError, Environment, Message, RejectedToolCall, Reset, Step
from meshrl.env_sdk.answers import reset_response, step_response
from meshrl.env_sdk.limits import Limits, check_reset, check_step
from meshrl.env_sdk.task import task_from_proto, turn_from_proto


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Adder(Environment):
    tools = [add]


def test_reset_forms():
    env = Adder()
    assert [t.name for t in reset_response(None, env).tools] == ["add"]
    answer = reset_response(["Use the tool.", {"role": "system", "content": "rules"}], env)
    assert [(m.role, m.content) for m in answer.observation] == [("user", "Use the tool."), ("system", "rules")]
    override = reset_response(Reset(tools=[], info={"level": 2}), env)
    assert list(override.tools) == [] and override.info_json == '{"level": 2}' and env.tool_table == {}


def test_step_forms():
    assert step_response("ok").observation[0].content == "ok"
    answer = step_response(Step([Message("tool", "7", "c0", "add")], reward=1, done=True))
    assert answer.HasField("reward") and answer.reward == 1.0 and answer.done
    assert not step_response(Step()).HasField("reward")  # no reward given: unset, not 0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (Step(reward=math.nan), "reward nan"),
        (Step(reward="1"), "reward '1'"),
        (Step(reward=True), "reward True"),
        (Step(done=1), "done=1"),
        (Step(["x"], info=[1]), "info must be a dict"),
        (Step([Message("robot", "x")]), "role 'robot'"),
        (Step([{"text": "x"}]), "needs 'role' and 'content'"),
        (Step([3]), "got int"),
        (42, "returned int"),
        (Step(info={"x": math.inf}), "not JSON-serialisable"),
        (Step([Message("assistant", "I said")]), "role 'assistant'; allowed: tool, user"),
        (Step([Message("system", "new rules")]), "meshrl would drop the episode"),
    ],
)
def test_environment_bugs_are_named(value, says):
    with pytest.raises(ValueError, match=says):
        step_response(value)


def test_task_and_turn_decoding():
    request = env_pb2.ResetRequest(
        episode_id="g/0",
        ground_truth_json='"42"',
        extra_json='{"a": 1}',
        prompt_messages=[env_pb2.ChatMessage(role="user", content="hi")],
        seed=7,
    )
    task = task_from_proto(request)
    assert (task.ground_truth, task.extra, task.messages, task.seed) == (
        "42",
        {"a": 1},
        [{"role": "user", "content": "hi"}],
        7,
    )
    assert task_from_proto(env_pb2.ResetRequest(episode_id="g/1")).ground_truth is None
    turn = turn_from_proto(env_pb2.StepRequest(episode_id="g/0", turn=2, tool_calls=[env_pb2.ToolCall(name="add")]))
    assert turn.tool_calls[0].id == "call_2_0" and turn.tool_calls[0].arguments_json == "{}"
    assert not turn.rejected_tool_calls and turn.tried_tools


def test_refused_calls_and_the_group_seed_reach_the_environment():
    refused = env_pb2.RejectedToolCall(id="call_1_0", raw_text="<tool_call>{x</tool_call>", reason="not JSON")
    turn = turn_from_proto(env_pb2.StepRequest(episode_id="g/0", turn=1, rejected_tool_calls=[refused]))
    assert turn.tool_calls == () and turn.tried_tools
    assert turn.rejected_tool_calls == (RejectedToolCall("call_1_0", "", "<tool_call>{x</tool_call>", "not JSON", ""),)
    assert not turn_from_proto(env_pb2.StepRequest(episode_id="g/0", turn=1, text="42")).tried_tools
    both = task_from_proto(env_pb2.ResetRequest(episode_id="g/1", seed=5, group_seed=9))
    assert (both.seed, both.group_seed) == (5, 9)
    assert task_from_proto(env_pb2.ResetRequest(episode_id="g/1", seed=5)).group_seed == 5  # an older sender


@pytest.mark.parametrize(
    ("request_", "says"),
    [
        (env_pb2.ResetRequest(episode_id="g/0", ground_truth_json="[1,"), "ground_truth_json is not JSON"),
        (env_pb2.ResetRequest(episode_id="g/0", extra_json="[1]"), "extra_json must be a JSON object"),
    ],
)
def test_malformed_json_fields_are_invalid_argument(request_, says):
    with pytest.raises(EnvError, match=says) as err:
        task_from_proto(request_)
    assert err.value.code.name == "INVALID_ARGUMENT"


@pytest.mark.parametrize(
    ("check", "request_", "says"),
    [
        (check_reset, env_pb2.ResetRequest(), "episode_id is empty"),
        (check_reset, env_pb2.ResetRequest(episode_id="x" * 513), "episode_id has 513 characters, more than the 512"),
        (
            check_reset,
            env_pb2.ResetRequest(episode_id="g", prompt_messages=[env_pb2.ChatMessage()] * 257),
            "prompt_messages has 257 messages",
        ),
        (check_step, env_pb2.StepRequest(episode_id="g", text="x" * ((1 << 20) + 1)), "text has 1048577 characters"),
        (
            check_step,
            env_pb2.StepRequest(episode_id="g", tool_calls=[env_pb2.ToolCall()] * 65),
            "tool_calls has 65 calls",
        ),
        (
            check_step,
            env_pb2.StepRequest(episode_id="g", tool_calls=[env_pb2.ToolCall(name="n" * 300)]),
            r"tool_calls\[0\].name has 300",
        ),
    ],
)
def test_oversize_and_empty_fields_are_invalid_argument(check, request_, says):
    with pytest.raises(EnvError, match=says) as err:
        check(request_, Limits())
    assert err.value.code.name == "INVALID_ARGUMENT"
