"""What an environment's reset/step returned → ResetResponse / StepResponse, checked.

A bug in the environment (a NaN reward, an unknown role, info that is not a dict) raises
ValueError naming it; the server turns that into INTERNAL, so a wrong answer never reaches
the model or the reward as if it were right. The finished answer is checked with the
rollout's own check (contract.py: e.g. a step may not answer as "assistant"), so an SDK
environment cannot send what a run would drop.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from meshrl.api.env.v1 import env_pb2
from meshrl.env_sdk.contract import reset_problems, step_problems
from meshrl.env_sdk.environment import Environment, Reset, Step, tool_table
from meshrl.env_sdk.messages import info_json, to_proto


def reset_response(value: Any, env: Environment) -> env_pb2.ResetResponse:
    if value is None:
        value = Reset()
    elif not isinstance(value, Reset):
        value = Reset(observation=_observation(value, "reset"))
    if value.tools is not None:  # this episode's own tools: its calls go to them
        env.tool_table = tool_table(value.tools, type(env).__name__)
    tools = env.tool_table
    answer = env_pb2.ResetResponse(
        observation=[to_proto(m) for m in _observation(value.observation, "reset")],
        tools=[t.spec() for t in tools.values()],
        info_json=info_json(value.info, "reset"),
    )
    return _checked(answer, reset_problems(answer, "reset"))


def step_response(value: Any) -> env_pb2.StepResponse:
    if not isinstance(value, Step):
        value = Step(observation=_observation(value, "step"))
    answer = env_pb2.StepResponse(
        observation=[to_proto(m) for m in _observation(value.observation, "step")],
        done=_flag(value.done),
        info_json=info_json(value.info, "step"),
    )
    if value.reward is not None:
        answer.reward = _reward(value.reward)
    return _checked(answer, step_problems(answer, "step"))


def _checked(answer, problems: list[str]):
    if problems:
        raise ValueError("; ".join(problems) + " (meshrl would drop the episode)")
    return answer


def _observation(value: Any, who: str) -> list:
    if isinstance(value, (str, dict)):
        return [value]
    if value is None:
        return []
    try:
        return list(value)
    except TypeError:
        raise ValueError(
            f"{who} returned {type(value).__name__}; return a Step/Reset, a list of messages, or None"
        ) from None


def _reward(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"step returned reward {value!r}; a reward is a finite number or None")
    return float(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"step returned done={value!r}; done is True or False")
    return value
