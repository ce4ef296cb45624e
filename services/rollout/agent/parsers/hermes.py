"""Hermes / Qwen tool calls: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.

The format of NousResearch's Hermes function-calling models, adopted by Qwen2/2.5/3 chat
templates: each call is one JSON object between `<tool_call>` and `</tool_call>`, any
number per turn, text around them allowed. The tools are shown in the system prompt as
JSON function signatures between `<tools>` and `</tools>` (`tools_system_prompt`, used when
the model's own chat template cannot render tools), and a tool's answer, for a template with
no "tool" role, as a user message `<tool_response>...</tool_response>` (Qwen's rendering).

What a model may get wrong, and the error it then reads (the call is never sent):
  an empty call; a body that is not JSON, or JSON with NaN/Infinity; JSON that is not an
  object; no "name" string; "arguments" that is neither an object nor a string holding a
  JSON object; a `<tool_call>` never closed (e.g. the turn was cut at its token limit).
"""

from __future__ import annotations

import json
from dataclasses import replace

from meshrl.services.rollout.agent.parsers import ParsedCall, ParsedTurn, register_tool_parser

OPEN, CLOSE = "<tool_call>", "</tool_call>"
CALL_SHAPE = '{"name": "<tool name>", "arguments": {<arguments>}}'


class CallError(ValueError):
    """What is wrong with one call, in words the model reads."""


def _no_constants(name: str):
    raise CallError(f"the call is not standard JSON ({name} is not allowed)")


def _json_object(body: str, what: str) -> dict:
    try:
        value = json.loads(body, parse_constant=_no_constants)
    except json.JSONDecodeError as err:
        raise CallError(f"{what} is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    if not isinstance(value, dict):
        raise CallError(f"{what} must be a JSON object, got a JSON {type(value).__name__}")
    return value


def read_call(body: str) -> ParsedCall:
    """One call from the text between the tags."""
    if not body.strip():
        return ParsedCall(name="", error=f"empty {OPEN}{CLOSE}: write {CALL_SHAPE} between the tags")
    try:
        call = _json_object(body, "the call")
    except CallError as err:
        return ParsedCall(name="", error=f"{err}; write {CALL_SHAPE}")
    name = call.get("name")
    if not isinstance(name, str) or not name:
        return ParsedCall(name="", error=f'the call has no "name" string; write {CALL_SHAPE}')
    try:
        arguments = call.get("arguments", {})
        if isinstance(arguments, str):  # some models write the arguments as a JSON string (OpenAI style)
            arguments = _json_object(arguments, '"arguments"')
        if not isinstance(arguments, dict):
            raise CallError(f'"arguments" must be a JSON object, got a JSON {type(arguments).__name__}')
    except CallError as err:
        return ParsedCall(name=name, error=str(err))
    return ParsedCall(name=name, arguments_json=json.dumps(arguments, ensure_ascii=False))


@register_tool_parser("hermes")
class HermesParser:
    def parse(self, text: str) -> ParsedTurn:
        calls, content, pos = [], [], 0
        while (start := text.find(OPEN, pos)) != -1:
            content.append(text[pos:start])
            body_start = start + len(OPEN)
            end = text.find(CLOSE, body_start)
            if end == -1:
                calls.append(ParsedCall(name="", error=f"{OPEN} is never closed by {CLOSE}", raw_text=text[start:]))
                pos = len(text)
                break
            pos = end + len(CLOSE)
            calls.append(replace(read_call(text[body_start:end]), raw_text=text[start:pos]))
        content.append(text[pos:])
        return ParsedTurn(content="".join(content).strip(), calls=calls)

    def tools_system_prompt(self, tools: list[dict]) -> str:
        signatures = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
        return (
            "# Tools\n\nYou may call one or more functions to help with the user's request.\n\n"
            "The functions are described as JSON signatures within <tools></tools> tags:\n"
            f"<tools>\n{signatures}\n</tools>\n\n"
            "To call a function, write a JSON object with its name and arguments within "
            f"{OPEN}{CLOSE} tags:\n{OPEN}\n{CALL_SHAPE}\n{CLOSE}"
        )

    def tool_response_text(self, content: str) -> str:
        return f"<tool_response>\n{content}\n</tool_response>"

    def call_text(self, name: str, arguments_json: str) -> str:
        try:
            arguments = json.loads(arguments_json)
        except json.JSONDecodeError:
            arguments = arguments_json  # written back as the string it was
        return f"{OPEN}{json.dumps({'name': name, 'arguments': arguments}, ensure_ascii=False)}{CLOSE}"
