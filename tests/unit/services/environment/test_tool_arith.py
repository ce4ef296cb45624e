"""tool_arith: the final answer read from a turn, the reward, tool calls answered."""

import json

import pytest

from meshrl.env_sdk import EnvError, Task, ToolCall, Turn
from meshrl.services.environment.builtins.tool_arith import ToolArith, final_number


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("The answer is 295830.", 295830.0),
        ("865*342 = 295,830", 295830.0),
        (r"so \boxed{42} and not 7", 42.0),
        ("-12.5", -12.5),
        ("no digits here", None),
        ("first 3 then 4", 4.0),
    ],
)
def test_final_number(text, number):
    assert final_number(text) == number


def episode(truth="295830") -> ToolArith:
    env = ToolArith()
    env.task = Task(episode_id="g/0", ground_truth=truth)
    env.reset(env.task)
    return env


def test_a_calculator_call_then_the_right_answer():
    env = episode()
    call = ToolCall("c0", "calculator", json.dumps({"expression": "865*342"}))
    step = env.step(Turn(0, "<tool_call>...</tool_call>", (call,)))
    assert [(m.role, m.content, m.tool_call_id) for m in step.observation] == [("tool", "295830", "c0")]
    assert not step.done and step.reward is None
    final = env.step(Turn(1, "The answer is 295,830."))
    assert final.done and final.reward == 1.0
    assert final.info == {"answer": 295830.0, "correct": True, "tool_calls": 1, "tool_errors": 0}


def test_a_wrong_answer_and_a_bad_call():
    env = episode()
    bad = env.step(Turn(0, "...", (ToolCall("c0", "calculator", '{"expression": "865 times 342"}'),)))
    assert bad.observation[0].content.startswith("error: calculator failed: ValueError:")
    final = env.step(Turn(1, "I think 290000"))
    assert final.done and final.reward == 0.0 and final.info["tool_errors"] == 1


def test_a_row_without_a_numeric_truth_is_invalid():
    with pytest.raises(EnvError, match="ground_truth to be a number, got 'seven'") as err:
        episode("seven")
    assert err.value.code.name == "INVALID_ARGUMENT"
