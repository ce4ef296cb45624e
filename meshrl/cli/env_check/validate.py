"""Check a ResetResponse / StepResponse against the contract: problems as texts."""

from __future__ import annotations

import json
import math
import re

from meshrl.api.env.v1 import env_pb2

ROLES = {"system", "user", "assistant", "tool"}
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _info(text: str, where: str) -> list[str]:
    if not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return [f"{where}: info_json is not JSON ({text[:60]!r})"]
    return [] if isinstance(value, dict) else [f"{where}: info_json is not a JSON object"]


def _observation(messages, where: str) -> list[str]:
    return [
        f"{where}: observation[{i}] has role {m.role!r} (use system, user, assistant or tool)"
        for i, m in enumerate(messages)
        if m.role not in ROLES
    ]


def _tool(tool: env_pb2.Tool, where: str) -> list[str]:
    problems = [] if TOOL_NAME.match(tool.name) else [f"{where}: tool name {tool.name!r} (use 1-64 of A-Z a-z 0-9 _ -)"]
    try:
        schema = json.loads(tool.parameters_json or "{}")
    except ValueError:
        return problems + [f"{where}: tool {tool.name!r} parameters_json is not JSON"]
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        problems.append(f"{where}: tool {tool.name!r} parameters_json must be a JSON Schema of type object")
    return problems


def reset_problems(reply: env_pb2.ResetResponse, where: str) -> list[str]:
    names = [t.name for t in reply.tools]
    repeated = sorted({n for n in names if names.count(n) > 1})
    problems = [f"{where}: tools named twice: {repeated}"] if repeated else []
    for tool in reply.tools:
        problems += _tool(tool, where)
    return problems + _observation(reply.observation, where) + _info(reply.info_json, where)


def step_problems(reply: env_pb2.StepResponse, where: str) -> list[str]:
    problems = _observation(reply.observation, where) + _info(reply.info_json, where)
    if reply.HasField("reward") and not math.isfinite(reply.reward):
        problems.append(f"{where}: reward {reply.reward!r} is not finite")
    return problems
