"""`tool_arith`: the example task. Arithmetic a 135M model gets wrong unaided (e.g. 3-digit
times 2-digit products), the calculator offered as a tool, the reward given at the end.

    Reset: ground_truth (the dataset row's answer, a number) is required; tools = [calculator].
    Step with tool calls: each call answered (role "tool"), no reward, the episode goes on;
        calls meshrl refused (rejected_tool_calls) count too: the model reads meshrl's error
        and tries again, so a malformed call is never taken for the final answer.
    Step without tool calls: the turn is the final answer -> done, reward 1.0 when its number
        equals the ground truth (within 1e-6 relative), else 0.0.

The final answer is the number in the last \\boxed{...}, else the last number in the text
(thousands separators allowed: 12,345). info says what was read, whether it was right, and
how many tool calls and tool errors the episode had. Data: `meshrl data tool_arith`.
"""

from __future__ import annotations

import math
import re

from meshrl.env_sdk import EnvError, Environment, Step
from meshrl.services.environment.calculator import calculator
from meshrl.services.environment.registry import Builtins, register_builtin

NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")
BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def final_number(text: str) -> float | None:
    """The answer a turn gives: the last \\boxed{} if any, else its last number."""
    boxed = BOXED.findall(text)
    found = NUMBER.findall(boxed[-1] if boxed else text)
    return float(found[-1].replace(",", "")) if found else None


def _truth(value) -> float:
    try:
        truth = float(str(value).replace(",", ""))
    except ValueError:
        truth = math.nan
    if not math.isfinite(truth):
        raise EnvError.invalid(f"tool_arith needs each row's reward_model.ground_truth to be a number, got {value!r}")
    return truth


class ToolArith(Environment):
    name = "tool_arith"
    tools = [calculator]

    def reset(self, task):
        self.truth = _truth(task.ground_truth)
        self.calls = 0

    def step(self, turn):
        if turn.tried_tools:
            self.calls += len(turn.tool_calls) + len(turn.rejected_tool_calls)
            self.tool_errors += len(turn.rejected_tool_calls)
            return Step(self.call_tools(turn), info={"tool_calls": self.calls, "tool_errors": self.tool_errors})
        given = final_number(turn.text)
        correct = given is not None and math.isclose(given, self.truth, rel_tol=1e-6, abs_tol=1e-9)
        return Step(
            done=True,
            reward=1.0 if correct else 0.0,
            info={"answer": given, "correct": correct, "tool_calls": self.calls, "tool_errors": self.tool_errors},
        )


@register_builtin("tool_arith")
def tool_arith_env(ctx: Builtins) -> type[Environment]:
    return ToolArith
