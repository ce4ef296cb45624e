"""Chat messages and tool calls as the environment's code sees them, and their protos.

An environment returns observations as `Message`s, plain strings (a "user" message) or
dicts with the same keys; `to_proto` checks each one, so a bug in the environment (an
unknown role, a non-string content) is reported as such instead of reaching the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from meshrl.api.env.v1 import env_pb2

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class Message:
    role: str
    content: str
    tool_call_id: str = ""  # role "tool": the call this message answers
    name: str = ""  # role "tool": the tool that answered


@dataclass(frozen=True)
class ToolCall:
    """One tool call of the model's turn, as meshrl parsed it."""

    id: str
    name: str
    arguments_json: str = "{}"


@dataclass(frozen=True)
class RejectedToolCall:
    """A call of the model's turn that meshrl refused (not in `Turn.tool_calls`); the model
    reads meshrl's error for it, so an environment does not answer it again."""

    id: str
    name: str  # "" when it could not be read
    raw_text: str  # the call as written, markup included
    reason: str  # what the model is told
    arguments_json: str = ""  # "" when they could not be read


def user(content: str) -> Message:
    return Message("user", content)


def tool_result(call: ToolCall, content: str) -> Message:
    """The observation answering `call` (role "tool", its id and the tool's name)."""
    return Message("tool", content, tool_call_id=call.id, name=call.name)


def as_message(value: Message | str | dict[str, Any]) -> Message:
    """A Message from what an environment returned; ValueError naming what is wrong."""
    if isinstance(value, str):
        return user(value)
    if isinstance(value, dict):
        unknown = set(value) - {"role", "content", "tool_call_id", "name"}
        if unknown or "content" not in value:
            raise ValueError(
                f"an observation dict needs 'role' and 'content' (and optionally "
                f"'tool_call_id', 'name'); got keys {sorted(value)}"
            )
        value = Message(
            value.get("role", "user"), value["content"], value.get("tool_call_id", ""), value.get("name", "")
        )
    if not isinstance(value, Message):
        raise ValueError(f"an observation must be a Message, a str or a dict; got {type(value).__name__}")
    if value.role not in ROLES:
        raise ValueError(f"an observation has role {value.role!r}; use one of {', '.join(ROLES)}")
    if not all(isinstance(v, str) for v in (value.content, value.tool_call_id, value.name)):
        raise ValueError(f"an observation's content, tool_call_id and name must be str; got {value!r:.200}")
    return value


def to_proto(value: Message | str | dict[str, Any]) -> env_pb2.ChatMessage:
    m = as_message(value)
    return env_pb2.ChatMessage(role=m.role, content=m.content, tool_call_id=m.tool_call_id, name=m.name)


def from_proto(m: env_pb2.ChatMessage) -> dict[str, str]:
    """A prompt message as the dict chat templates take ({"role", "content"} and tool keys when set)."""
    out = {"role": m.role, "content": m.content}
    if m.tool_call_id:
        out["tool_call_id"] = m.tool_call_id
    if m.name:
        out["name"] = m.name
    return out


def info_json(info: dict[str, Any] | None, who: str) -> str:
    """The `info` an environment returned as JSON object text (ValueError when it is not one)."""
    if info is None:
        return "{}"
    if not isinstance(info, dict):
        raise ValueError(f"{who}: info must be a dict, got {type(info).__name__}")
    try:
        return json.dumps(info, allow_nan=False, default=str)
    except ValueError as err:
        raise ValueError(f"{who}: info is not JSON-serialisable ({err})") from None
