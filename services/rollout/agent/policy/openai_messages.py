"""OpenAI chat-completions shapes: messages in, a completion out, and how calls chain.

- `normalise(messages, parser)`: each message as {role, content[, name, tool_call_id]};
  content given as a list of parts keeps its text parts (anything else is refused); an
  assistant message's tool_calls are written into its content in the model's own tool-call
  format (the parser's `call_text`), as the model wrote them.
- `added_messages(known, sent)`: the messages a call adds to the conversation so far — the
  agent must send back everything it was answered with, its own earlier messages unchanged,
  and add only tool/user messages. Anything else (a rewritten history, a dropped message, a
  new system message) is a reason string: that episode cannot be one trajectory.
- `completion(...)`: the answer: content, tool_calls (id, name, JSON arguments), finish
  reason (tool_calls | length | stop), usage.
"""

from __future__ import annotations

import time

from meshrl.api.common.v1 import common_pb2 as pb

ROLES = ("system", "user", "assistant", "tool")
ADDED_ROLES = ("tool", "user")


class BadRequest(ValueError):
    """A request OpenAI's API would refuse with 400 invalid_request_error; says what and why."""


def _text(content, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise BadRequest(f"{where}: content must be a string or a list of text parts")


def _calls_text(calls, parser, where: str) -> str:
    try:
        return "".join(
            parser.call_text(c["function"]["name"], c["function"].get("arguments") or "{}") for c in calls or []
        )
    except (KeyError, TypeError):
        raise BadRequest(f"{where}: tool_calls are [{{id, type: function, function: {{name, arguments}}}}]") from None


def normalise(messages, parser) -> list[dict]:
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise BadRequest(f"messages[{i}]: role must be one of {', '.join(ROLES)}")
        content = _text(m.get("content"), f"messages[{i}]")
        if m["role"] == "assistant":
            content += _calls_text(m.get("tool_calls"), parser, f"messages[{i}]")
        message = {"role": m["role"], "content": content}
        for key in ("name", "tool_call_id"):
            if m.get(key):
                message[key] = str(m[key])
        out.append(message)
    return out


def same(known: dict, sent: dict) -> bool:
    return known["role"] == sent["role"] and known["content"].strip() == sent["content"].strip()


def added_messages(known: list[dict], sent: list[dict]) -> tuple[list[dict], str]:
    """(messages `sent` adds after `known`, "") or ([], why the call does not extend it)."""
    if len(sent) <= len(known):
        return [], f"a call sent {len(sent)} messages; the conversation already had {len(known)}"
    for i, (a, b) in enumerate(zip(known, sent)):
        if not same(a, b):
            return [], f"a call changed message {i} ({a['role']}) of the conversation"
    added = sent[len(known) :]
    if bad := [m["role"] for m in added if m["role"] not in ADDED_ROLES]:
        return [], f"a call added {bad[0]!r} messages; after a reply only tool and user messages may follow"
    return added, ""


def answer_message(record: pb.Turn, content: str) -> dict:
    """The assistant message the agent is answered with (and sends back in its next call):
    the text outside the tool-call markup, and every call the parser could read."""
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
        for c in record.tool_calls
        if c.name
    ]
    message = {"role": "assistant", "content": content if content or not calls else None}
    if calls:
        message["tool_calls"] = calls
    return message


def completion(record: pb.Turn, message: dict, *, model: str, prompt_tokens: int) -> dict:
    finish = (
        "tool_calls"
        if message.get("tool_calls")
        else "length"
        if record.finish_reason == pb.FINISH_REASON_LENGTH
        else "stop"
    )
    tokens = record.token_end - record.token_start
    return {
        "id": f"chatcmpl-{record.index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": tokens, "total_tokens": prompt_tokens + tokens},
    }
