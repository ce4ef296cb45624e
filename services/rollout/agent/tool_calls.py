"""A turn's tool calls checked against the tools its episode offers.

The parser says whether a call could be read; this says whether it can be sent: the tool
must be one of the episode's (`ResetResponse.tools`), its arguments must validate against
that tool's JSON Schema (`jsonschema`, the draft the schema names, 2020-12 by default), and
a turn may make at most `max_calls` calls. Every call becomes a `ToolCallRecord`
(id `call_<turn>_<index>`); one with an `error` is not sent to the environment as a call:
the model reads `error_observation(record)` instead, it is counted as a parse failure, and
the environment gets it in `StepRequest.rejected_tool_calls` (`rejected_calls`: the reason
and the call as written), so a turn whose calls were all refused is not mistaken for one
without any.

An environment whose tool has a `parameters_json` that is not a JSON Schema object breaks
the contract: `InvalidAnswer`, and the episode is dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import jsonschema

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.api.env.v1 import env_pb2
from meshrl.env_sdk.contract import tool_schema
from meshrl.services.rollout.agent.failures import InvalidAnswer
from meshrl.services.rollout.agent.parsers import ParsedTurn


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict
    validator: jsonschema.protocols.Validator

    def as_openai(self) -> dict:
        """The shape chat templates and OpenAI's API take (`tools=`)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def tool_spec(name: str, description: str, parameters_json: str) -> ToolSpec:
    """A tool from an environment's answer; InvalidAnswer when its schema is not one
    (meshrl.env_sdk.contract decides, as for `meshrl env check`)."""
    if not name:
        raise InvalidAnswer("a tool has an empty name")
    try:
        schema, cls = tool_schema(name, parameters_json)
    except ValueError as err:
        raise InvalidAnswer(str(err)) from None
    return ToolSpec(name, description, schema, cls(schema))


def call_problem(name: str, arguments_json: str, tools: dict[str, ToolSpec]) -> str:
    """Why a well-formed call cannot be sent ("" when it can)."""
    if name not in tools:
        offered = ", ".join(sorted(tools)) or "none"
        return f"unknown tool {name!r}; the tools are: {offered}"
    error = jsonschema.exceptions.best_match(tools[name].validator.iter_errors(json.loads(arguments_json)))
    if error is None:
        return ""
    where = "/".join(map(str, error.absolute_path)) or "(the arguments)"
    return f"the arguments do not match {name}'s parameters: {error.message} (at {where})"


def check_calls(parsed: ParsedTurn, tools: dict[str, ToolSpec], turn: int, max_calls: int) -> list[pb.ToolCallRecord]:
    records = []
    for index, call in enumerate(parsed.calls):
        error = call.error or call_problem(call.name, call.arguments_json, tools)
        if not error and index >= max_calls:
            error = f"too many tool calls in one turn: at most {max_calls} are answered"
        records.append(
            pb.ToolCallRecord(
                id=f"call_{turn}_{index}", name=call.name, arguments_json=call.arguments_json, error=error
            )
        )
    return records


def rejected_calls(parsed: ParsedTurn, records: list[pb.ToolCallRecord]) -> list[env_pb2.RejectedToolCall]:
    """The calls of `records` not sent, as StepRequest.rejected_tool_calls (the environment sees
    what was refused and why, e.g. so as not to take the turn for a final answer)."""
    return [
        env_pb2.RejectedToolCall(
            id=r.id,
            name=r.name,
            raw_text=call.raw_text,
            reason=r.error,
            arguments_json=r.arguments_json if call.name and not call.error else "",
        )
        for call, r in zip(parsed.calls, records)
        if r.error
    ]


def error_observation(record: pb.ToolCallRecord) -> dict:
    """The tool message a model reads for a call that was not sent."""
    return {
        "role": "tool",
        "name": record.name or "error",
        "tool_call_id": record.id,
        "content": f"error: {record.error}",
    }
