"""Messages between verifiers and meshrl, on the library's side (runs in the verifiers venv).

verifiers keeps chat messages as pydantic models (`vf.UserMessage`, `vf.ToolMessage`, ...);
meshrl's environment contract speaks plain dicts (`role`, `content`, `tool_call_id`). The
model's turn arrives as meshrl parsed it (its text and its tool calls) and becomes the
`vf.Response` the environment's rollout loop would have had from an OpenAI-compatible server
with the same tool parser: the content is the text before the first `<tool_call>` (what
vLLM's hermes parser leaves), the calls are verifiers' `ToolCall`s with meshrl's ids.
"""

import json
import time

from verifiers.types import Response, ResponseMessage, ToolCall

TOOL_CALL_TAG = "<tool_call>"


def text_of(content) -> str:
    """A message's content as text: a string, or the text parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        text = part.get("text") if isinstance(part, dict) else getattr(part, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "".join(parts)


def field_of(message, name: str):
    return message.get(name) if isinstance(message, dict) else getattr(message, name, None)


def to_plain(message) -> dict:
    """One verifiers message as meshrl's {role, content[, tool_call_id]}."""
    plain = {"role": str(field_of(message, "role")), "content": text_of(field_of(message, "content"))}
    call_id = field_of(message, "tool_call_id")
    if call_id:
        plain["tool_call_id"] = str(call_id)
    return plain


def same_messages(ours: list, theirs: list) -> bool:
    """True when meshrl's prompt is the environment's (roles and texts, in order)."""
    mine = [(m.get("role"), text_of(m.get("content"))) for m in ours]
    env = [(str(field_of(m, "role")), text_of(field_of(m, "content"))) for m in theirs]
    return mine == env


def model_response(text: str, tool_calls: list, truncated: bool) -> Response:
    """The model's turn as the `vf.Response` the environment's loop consumes."""
    calls = [ToolCall(id=c["id"], name=c["name"], arguments=c.get("arguments_json") or "{}") for c in tool_calls]
    content = text.split(TOOL_CALL_TAG, 1)[0].strip() if calls else text
    finish = "length" if truncated else ("tool_calls" if calls else "stop")
    message = ResponseMessage(content=content, tool_calls=calls or None, finish_reason=finish, is_truncated=truncated)
    return Response(id=f"meshrl-{time.time_ns()}", created=int(time.time()), model="meshrl", message=message)


def tool_spec(tool) -> dict:
    """A verifiers `Tool` as meshrl's {name, description, parameters} (a JSON Schema object)."""
    parameters = field_of(tool, "parameters") or {"type": "object", "properties": {}}
    return {
        "name": str(field_of(tool, "name")),
        "description": str(field_of(tool, "description") or ""),
        "parameters": json.loads(json.dumps(parameters, default=str)),
    }
