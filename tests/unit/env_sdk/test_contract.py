"""The one check of environment answers (meshrl.env_sdk.contract) that the rollout, the kit and
the SDK share: what each answer may carry, and each problem named.

Run: .venv/bin/python -m pytest tests/unit/env_sdk/test_contract.py
"""

import math

import pytest

from meshrl.api.env.v1 import env_pb2
from meshrl.env_sdk.contract import reset_problems, step_problems

SCHEMA = '{"type": "object", "properties": {"x": {"type": "integer"}}}'


def message(role: str) -> env_pb2.ChatMessage:
    return env_pb2.ChatMessage(role=role, content="x")


@pytest.mark.parametrize(
    ("role", "first", "step"),
    [
        ("system", True, False),
        ("user", True, True),
        ("tool", True, True),
        ("assistant", False, False),
        ("", False, False),
    ],
)
def test_roles_a_first_answer_and_a_step_may_carry(role, first, step):
    assert (reset_problems(env_pb2.ResetResponse(observation=[message(role)])) == []) is first
    assert (step_problems(env_pb2.StepResponse(observation=[message(role)]), "Step turn 1") == []) is step


def test_a_good_answer_has_no_problem():
    good = env_pb2.ResetResponse(tools=[env_pb2.Tool(name="add_2", parameters_json=SCHEMA)], info_json='{"a": 1}')
    assert reset_problems(good) == [] and step_problems(env_pb2.StepResponse(reward=0.5, info_json=""), "Step") == []


@pytest.mark.parametrize(
    ("tool", "says"),
    [
        (env_pb2.Tool(name="", parameters_json=SCHEMA), "tool name ''"),
        (env_pb2.Tool(name="x" * 65, parameters_json=SCHEMA), "use 1-64 of"),
        (env_pb2.Tool(name="a.b", parameters_json=SCHEMA), "tool name 'a.b'"),
        (env_pb2.Tool(name="t", parameters_json="{not json"), "parameters_json is not JSON"),
        (env_pb2.Tool(name="t", parameters_json='{"type": "objekt"}'), "not a valid JSON Schema"),
        (env_pb2.Tool(name="t", parameters_json='{"type": "string"}'), "of type object"),
    ],
)
def test_each_tool_problem_is_named(tool, says):
    (problem,) = reset_problems(env_pb2.ResetResponse(tools=[tool]))
    assert problem.startswith("Reset") and says in problem


@pytest.mark.parametrize("reward", [math.nan, math.inf])
def test_a_reward_must_be_finite(reward):
    (problem,) = step_problems(env_pb2.StepResponse(reward=reward), "Step turn 2")
    assert problem == f"Step turn 2 answered reward={reward}: a reward must be a finite number"


@pytest.mark.parametrize(("info", "says"), [("nope", "is not JSON"), ("[1]", "not a JSON object")])
def test_info_must_be_a_json_object(info, says):
    (problem,) = step_problems(env_pb2.StepResponse(info_json=info), "Step")
    assert says in problem
