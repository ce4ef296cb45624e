"""An OpenEnv environment as a meshrl Environment: Reset opens a session on the server and
resets it, each Step sends the model's turn as an action, Close ends the session.

    cls = openenv_environment("guess", OpenEnvConfig(url="http://127.0.0.1:8000"))
    serve({"guess": cls}, port=50090)

The mapping (docs/environments.md, "Environments you already have"):
- Reset: OpenEnv reset with the group's seed (`group_seed`, else the episode's `seed`; when set), the episode id and `openenv.reset`;
  its observation becomes one user message (below).
- Step: the action is `{action_field: the model's whole turn, **action_fields}`; the answer's
  observation becomes one user message, its reward this turn's reward, its done the episode's.
- Or, with `action_tool`, the episode offers one tool of that name whose parameters are the
  server's action schema: a turn's first call is the action (its arguments, `**action_fields`),
  answered by a role "tool" message; arguments the server's Action model refuses are an error
  message the model reads (the episode goes on), as is a turn without a call.
- An observation message is its `observation_field` when one is named, else the whole
  observation (less `metadata`) as JSON; the observation's metadata is the turn's info.
The OpenEnv server's own limits apply (its max_concurrent_envs: RESOURCE_EXHAUSTED past it).
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import grpc

from meshrl.config.openenv import OpenEnvConfig
from meshrl.env_sdk import EnvError, Environment, FunctionTool, Reset, Step, tool_result
from meshrl.services.environment.adapters.openenv.session import Answer, Session


def openenv_environment(name: str, settings: OpenEnvConfig, action_schema: dict | None = None) -> type[Environment]:
    """The Environment class serving `settings.url`'s episodes under the run's environment name
    (`action_schema`: the server's Action JSON Schema, for `action_tool`)."""
    attrs = {"name": name, "settings": settings, "_http": None, "action_schema": action_schema}
    return type("OpenEnvEnvironment", (OpenEnvEnvironment,), attrs)


class ActionTool(FunctionTool):
    """The server's action offered as a tool, known by its schema: the server acts on the call."""

    def __init__(self, name: str, parameters: dict[str, Any]):
        self.fn, self.is_async, self.arguments = None, False, None
        self.name, self.parameters = name, parameters
        self.description = "Act in the environment: the arguments are the action."


class OpenEnvEnvironment(Environment):
    settings: OpenEnvConfig
    action_schema: dict[str, Any] | None
    _http: aiohttp.ClientSession | None  # one per served class, made on the server's loop

    def __init__(self) -> None:
        super().__init__()
        self.session: Session | None = None

    @classmethod
    def http(cls) -> aiohttp.ClientSession:
        if cls._http is None or cls._http.closed:
            cls._http = aiohttp.ClientSession()
        return cls._http

    async def reset(self, task) -> Reset:
        self.session = Session(self.http(), self.settings.ws_url, self.settings.timeout_s)
        await self.session.open()
        data = {**self.settings.reset, "episode_id": task.episode_id}
        if seed := task.group_seed or task.seed:  # the group's: a GRPO group's episodes play one task
            data["seed"] = seed
        try:
            answer = await self.session.send("reset", data)
        except EnvError:
            await self.session.close()  # no Close follows a failed Reset
            raise
        tools = [ActionTool(self.settings.action_tool, self.action_schema)] if self.settings.action_tool else None
        return Reset([self.message(answer)], tools=tools, info=self.info(answer))

    async def step(self, turn) -> Step:
        if self.settings.action_tool:
            return await self.tool_step(turn)
        action = {**self.settings.action_fields, self.settings.action_field: turn.text}
        answer = await self.session.send("step", action)
        return Step([self.message(answer)], reward=answer.reward, done=answer.done, info=self.info(answer))

    async def tool_step(self, turn) -> Step:
        """The turn's first call is the action; a turn without one, or refused arguments, is told so."""
        name = self.settings.action_tool
        if not turn.tool_calls:
            return Step([f"error: act by calling the {name} tool (its arguments are the action)"])
        call, *extra = turn.tool_calls
        skipped = [tool_result(c, "error: one action per turn; this call was not made") for c in extra]
        arguments = _object(call.arguments_json)
        if call.name != name or arguments is None:
            return Step([tool_result(call, f"error: call {name} with a JSON object of the action's fields"), *skipped])
        try:
            answer = await self.session.send("step", {**self.settings.action_fields, **arguments})
        except EnvError as err:
            if err.code != grpc.StatusCode.INVALID_ARGUMENT:
                raise
            return Step([tool_result(call, f"error: {err.message}"), *skipped])
        shown = [tool_result(call, self.message(answer)), *skipped]
        return Step(shown, reward=answer.reward, done=answer.done, info=self.info(answer))

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()

    def message(self, answer: Answer) -> str:
        """What the model reads: the named field of the observation, else all of it as JSON."""
        field = self.settings.observation_field
        shown = {k: v for k, v in answer.observation.items() if k != "metadata"}
        if not field:
            return json.dumps(shown, ensure_ascii=False, default=str)
        if field not in shown:
            raise EnvError.invalid(
                f"the OpenEnv observation has no field {field!r} (environment.openenv.observation_field); "
                f"its fields: {', '.join(shown) or 'none'}"
            )
        value = shown[field]
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)

    @staticmethod
    def info(answer: Answer) -> dict[str, Any]:
        return json.loads(json.dumps(answer.metadata, default=str))


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
