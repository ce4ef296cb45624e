"""Bounds on what a request may carry, checked before any environment code runs.

A request beyond them is INVALID_ARGUMENT naming the field, its size and the bound (gRPC
itself refuses a whole message over the server's receive limit with RESOURCE_EXHAUSTED).
The defaults are far above what meshrl sends (a turn is at most a few thousand tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

from meshrl.api.env.v1 import env_pb2
from meshrl.env_sdk.errors import EnvError


@dataclass(frozen=True)
class Limits:
    episode_id_chars: int = 512
    name_chars: int = 256  # environment and tool names
    text_chars: int = 1 << 20  # a turn's text, one prompt message, a JSON field
    tool_calls: int = 64  # per turn
    prompt_messages: int = 256


def _size(what: str, n: int, bound: int, unit: str = "characters") -> None:
    if n > bound:
        raise EnvError.invalid(f"{what} has {n} {unit}, more than the {bound} this server accepts")


def _episode_id(episode_id: str, limits: Limits) -> None:
    if not episode_id:
        raise EnvError.invalid(
            "episode_id is empty: meshrl sends '<group_id>/<sample index>'; give every episode a unique id"
        )
    _size("episode_id", len(episode_id), limits.episode_id_chars)


def check_reset(request: env_pb2.ResetRequest, limits: Limits) -> None:
    _episode_id(request.episode_id, limits)
    _size("environment", len(request.environment), limits.name_chars)
    _size("prompt_messages", len(request.prompt_messages), limits.prompt_messages, "messages")
    for i, m in enumerate(request.prompt_messages):
        _size(f"prompt_messages[{i}].content", len(m.content), limits.text_chars)
    for name in ("ground_truth_json", "extra_json", "data_source"):
        _size(name, len(getattr(request, name)), limits.text_chars)


def check_step(request: env_pb2.StepRequest, limits: Limits) -> None:
    _episode_id(request.episode_id, limits)
    _size("text", len(request.text), limits.text_chars)
    _size("tool_calls", len(request.tool_calls), limits.tool_calls, "calls")
    for i, call in enumerate(request.tool_calls):
        _size(f"tool_calls[{i}].name", len(call.name), limits.name_chars)
        _size(f"tool_calls[{i}].arguments_json", len(call.arguments_json), limits.text_chars)
        _size(f"tool_calls[{i}].id", len(call.id), limits.episode_id_chars)
    _size("rejected_tool_calls", len(request.rejected_tool_calls), limits.tool_calls, "calls")
    for i, call in enumerate(request.rejected_tool_calls):
        for name in ("raw_text", "reason", "arguments_json"):
            _size(f"rejected_tool_calls[{i}].{name}", len(getattr(call, name)), limits.text_chars)


def check_close(request: env_pb2.CloseRequest, limits: Limits) -> None:
    _episode_id(request.episode_id, limits)
