"""An environment's answers, read leniently and checked against the contract.

- **Parsing** is meshrl.env_sdk.wire's `parse_answer`: bad UTF-8 repaired, bytes that are no
  protobuf named (the client turns them into `InvalidAnswer`; the episode is dropped).
- **The contract** is meshrl.env_sdk.contract, the one check `meshrl env check` and the SDK
  use too: `check_reset` / `check_step` raise `InvalidAnswer` naming every problem (a role
  the turn may not carry, a tool name or schema, info_json that is not a JSON object, a
  reward that is not finite), so an environment the kit passes is one the rollout accepts.
"""

from __future__ import annotations

from meshrl.api.env.v1 import env_pb2
from meshrl.env_sdk import contract
from meshrl.env_sdk.wire import parse_answer
from meshrl.services.rollout.agent.failures import InvalidAnswer
from meshrl.services.rollout.agent.tool_calls import ToolSpec, tool_spec

__all__ = ["check_reset", "check_step", "observation", "parse_answer", "reward", "tools"]


def _raise(problems: list[str]) -> None:
    if problems:
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        raise InvalidAnswer("; ".join(problems[:3]) + more)


def check_reset(answer: env_pb2.ResetResponse) -> None:
    _raise(contract.reset_problems(answer, "Reset"))


def check_step(answer: env_pb2.StepResponse, turn: int) -> None:
    _raise(contract.step_problems(answer, f"Step turn {turn}"))


def observation(messages) -> list[dict]:
    """Checked messages as the dicts chat templates take (tool keys on tool messages)."""
    out = []
    for m in messages:
        message = {"role": m.role, "content": m.content}
        if m.role == "tool":
            message.update(name=m.name, tool_call_id=m.tool_call_id)
        out.append(message)
    return out


def tools(answer: env_pb2.ResetResponse) -> dict[str, ToolSpec]:
    """A checked Reset's tools by name."""
    return {t.name: tool_spec(t.name, t.description, t.parameters_json) for t in answer.tools}


def reward(answer: env_pb2.StepResponse) -> float | None:
    return answer.reward if answer.HasField("reward") else None
