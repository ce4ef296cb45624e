"""The `openenv:` block of the run's environment: an OpenEnv environment server the adapter
(services/environment/adapters/openenv) plays episodes on, one WebSocket session per episode.

    environment:
      name: guess
      openenv:
        url: http://127.0.0.1:8000    # the OpenEnv server (its own process or container)
        action_field: message         # the model's whole turn goes into this field of the action, or
        action_tool: ""               # a tool of this name is offered, its parameters the server's
                                      # action schema (GET /schema), and a call's arguments are the action
        action_fields: {}             # constant fields added to every action
        observation_field: ""         # the observation's field shown to the model ("" = all of it, as JSON)
        reset: {}                     # extra keyword arguments of the server's reset()
        timeout_s: 30                 # one reset/step answer from the server

With no `address`, `meshrl train` launches the environment service that runs the adapter
(like a builtin), after checking the server answers GET /health.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from meshrl.config.algorithm import Strict


class OpenEnvConfig(Strict):
    url: str
    action_field: str = Field("message", min_length=1)
    action_tool: str = Field("", pattern=r"^$|^[A-Za-z0-9_\-]{1,64}$")
    action_fields: dict[str, Any] = {}
    observation_field: str = ""
    reset: dict[str, Any] = {}
    timeout_s: float = Field(30.0, gt=0.0)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        try:
            port_ok = parts.port is None or parts.port > 0  # .port raises for no number or out of range
        except ValueError:
            port_ok = False
        if not port_ok or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"environment.openenv.url={url!r}: expected http(s)://host:port of an OpenEnv server")
        return url.rstrip("/")

    @property
    def ws_url(self) -> str:
        """The server's session endpoint: one WebSocket per episode."""
        return "ws" + self.url.removeprefix("http") + "/ws"
