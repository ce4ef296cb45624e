"""An OpenEnv environment as a meshrl Environment: Reset opens a session on the server and
resets it, each Step sends the model's turn as an action, Close ends the session.

    cls = openenv_environment("guess", OpenEnvConfig(url="http://127.0.0.1:8000"))
    serve({"guess": cls}, port=50090)

The mapping (docs/environments.md, "Environments you already have"):
- Reset: OpenEnv reset with the task's `seed` (when set), the episode id and `openenv.reset`;
  its observation becomes one user message (below).
- Step: the action is `{action_field: the model's whole turn, **action_fields}`; the answer's
  observation becomes one user message, its reward this turn's reward, its done the episode's.
- An observation message is its `observation_field` when one is named, else the whole
  observation (less `metadata`) as JSON; the observation's metadata is the turn's info.
The OpenEnv server's own limits apply (its max_concurrent_envs: RESOURCE_EXHAUSTED past it).
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from meshrl.config.openenv import OpenEnvConfig
from meshrl.env_sdk import Environment, EnvError, Reset, Step
from meshrl.services.environment.adapters.openenv.session import Answer, Session


def openenv_environment(name: str, settings: OpenEnvConfig) -> type[Environment]:
    """The Environment class serving `settings.url`'s episodes under the run's environment name."""
    return type("OpenEnvEnvironment", (OpenEnvEnvironment,), {"name": name, "settings": settings, "_http": None})


class OpenEnvEnvironment(Environment):
    settings: OpenEnvConfig
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
        if task.seed:
            data["seed"] = task.seed
        try:
            answer = await self.session.send("reset", data)
        except EnvError:
            await self.session.close()  # no Close follows a failed Reset
            raise
        return Reset([self.message(answer)], info=self.info(answer))

    async def step(self, turn) -> Step:
        action = {**self.settings.action_fields, self.settings.action_field: turn.text}
        answer = await self.session.send("step", action)
        return Step([self.message(answer)], reward=answer.reward, done=answer.done, info=self.info(answer))

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
