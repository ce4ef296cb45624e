"""What meshrl accepts from an environment: one check of Reset and Step answers.

The rollout (which drops an episode whose answer breaks it), `meshrl env check` (which
FAILs the row) and this SDK (which turns its own environment's bad answer into INTERNAL)
all call these functions, so the three can never disagree about an answer.

    problems = reset_problems(answer, "Reset")             # [] when the answer is fine
    problems = step_problems(answer, "Step turn 2")

- **Roles.** A first observation (Reset) may hold system, user and tool messages; a step's
  only tool and user messages: an environment cannot write the model's own (assistant)
  turns, nor rewrite its instructions mid-episode.
- **Tools.** Names of 1-64 letters, digits, '_' and '-' (what chat templates and OpenAI's
  API take), each offered once; `parameters_json` a JSON Schema object that is a valid
  schema for the draft it names (2020-12 by default).
- **info_json** a JSON object, or "". **Rewards** finite numbers.
"""

from __future__ import annotations

import json
import math
import re

import jsonschema

from meshrl.api.env.v1 import env_pb2

FIRST_ROLES = ("system", "user", "tool")
STEP_ROLES = ("tool", "user")
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def tool_schema(name: str, parameters_json: str) -> tuple[dict, type]:
    """(the schema, its jsonschema validator class); ValueError naming what is wrong."""
    try:
        schema = json.loads(parameters_json or "{}")
    except json.JSONDecodeError as err:
        raise ValueError(f"tool {name!r}: parameters_json is not JSON ({err.msg})") from None
    if not isinstance(schema, dict):
        raise ValueError(f"tool {name!r}: parameters_json must be a JSON Schema object, got {type(schema).__name__}")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as err:
        raise ValueError(f"tool {name!r}: parameters_json is not a valid JSON Schema ({err.message})") from None
    if schema.get("type", "object") != "object":
        raise ValueError(f"tool {name!r}: parameters_json must be a JSON Schema of type object (the arguments)")
    return schema, cls


def tool_problems(tools, where: str) -> list[str]:
    names = [t.name for t in tools]
    repeated = sorted({n for n in names if names.count(n) > 1})
    problems = [f"{where} offered a tool name twice: {repeated}"] if repeated else []
    for tool in tools:
        if not TOOL_NAME.match(tool.name):
            problems.append(f"{where}: tool name {tool.name!r} (use 1-64 of A-Z a-z 0-9 _ -)")
        try:
            tool_schema(tool.name, tool.parameters_json)
        except ValueError as err:
            problems.append(f"{where}: {err}")
    return problems


def observation_problems(messages, allowed: tuple[str, ...], where: str) -> list[str]:
    return [
        f"{where}'s observation has a message with role {m.role!r}; allowed: {', '.join(allowed)}"
        for m in messages
        if m.role not in allowed
    ]


def info_problems(text: str, where: str) -> list[str]:
    if not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return [f"{where}: info_json is not JSON ({text[:60]!r})"]
    return [] if isinstance(value, dict) else [f"{where}: info_json is not a JSON object"]


def reset_problems(answer: env_pb2.ResetResponse, where: str = "Reset") -> list[str]:
    return (
        tool_problems(answer.tools, where)
        + observation_problems(answer.observation, FIRST_ROLES, where)
        + info_problems(answer.info_json, where)
    )


def step_problems(answer: env_pb2.StepResponse, where: str) -> list[str]:
    problems = observation_problems(answer.observation, STEP_ROLES, where) + info_problems(answer.info_json, where)
    if answer.HasField("reward") and not math.isfinite(answer.reward):
        problems.append(f"{where} answered reward={answer.reward}: a reward must be a finite number")
    return problems
