"""`Task` (a Reset request) and `Turn` (a Step request) decoded for the environment's code.

JSON fields are parsed here; text that is not JSON is the caller's mistake, reported as
INVALID_ARGUMENT naming the field, before any environment code runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from meshrl.api.env.v1 import env_pb2
from meshrl.env_sdk.errors import EnvError
from meshrl.env_sdk.messages import RejectedToolCall, ToolCall, from_proto


@dataclass(frozen=True)
class Task:
    episode_id: str
    environment: str = ""  # the component name the run config gave it
    messages: list[dict[str, str]] = field(default_factory=list)  # the dataset row's prompt
    ground_truth: Any = None  # decoded JSON; None when the row has none
    data_source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # the row's extra_info
    seed: int = 0  # this episode's own (differs within a group); 0 = unseeded
    run_id: str = ""
    group_seed: int = 0  # the same for every episode of the group: draw the task from it (0: seed)


@dataclass(frozen=True)
class Turn:
    index: int  # 0-based
    text: str  # the model's whole turn, tool-call markup included
    tool_calls: tuple[ToolCall, ...] = ()
    truncated: bool = False  # cut at the model's token limit
    rejected_tool_calls: tuple[RejectedToolCall, ...] = ()  # refused by meshrl; the model reads why

    @property
    def tried_tools(self) -> bool:
        """The model called a tool this turn (sent, or refused by meshrl): not a final answer.
        With every call refused, answer done=False: the model reads meshrl's errors and retries."""
        return bool(self.tool_calls or self.rejected_tool_calls)


def _json(text: str, name: str, empty: Any) -> Any:
    if not text:
        return empty
    try:
        return json.loads(text)
    except ValueError as err:
        raise EnvError.invalid(f"{name} is not JSON ({err}): send JSON text, or '' when there is none") from None


def task_from_proto(request: env_pb2.ResetRequest) -> Task:
    extra = _json(request.extra_json, "extra_json", {})
    if not isinstance(extra, dict):
        raise EnvError.invalid(f"extra_json must be a JSON object, got {type(extra).__name__}")
    return Task(
        episode_id=request.episode_id,
        environment=request.environment,
        messages=[from_proto(m) for m in request.prompt_messages],
        ground_truth=_json(request.ground_truth_json, "ground_truth_json", None),
        data_source=request.data_source,
        extra=extra,
        seed=request.seed,
        run_id=request.run_id,
        group_seed=request.group_seed or request.seed,
    )


def turn_from_proto(request: env_pb2.StepRequest) -> Turn:
    calls = tuple(
        ToolCall(c.id or f"call_{request.turn}_{i}", c.name, c.arguments_json or "{}")
        for i, c in enumerate(request.tool_calls)
    )
    rejected = tuple(
        RejectedToolCall(c.id, c.name, c.raw_text, c.reason, c.arguments_json) for c in request.rejected_tool_calls
    )
    return Turn(
        index=request.turn,
        text=request.text,
        tool_calls=calls,
        truncated=request.truncated,
        rejected_tool_calls=rejected,
    )
