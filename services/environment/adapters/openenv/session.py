"""One episode on an OpenEnv server: a WebSocket session on its `/ws` endpoint.

OpenEnv's HTTP `/reset` and `/step` make a fresh environment per request (no state between
them), so an episode is a WebSocket: the server gives each connection its own environment,
and the messages are small JSON objects:

    → {"type": "reset", "data": {"seed": 7, "episode_id": "g/0", ...}}
    → {"type": "step", "data": {<the action's fields>}}
    → {"type": "close"}
    ← {"type": "observation", "data": {"observation": {...}, "reward": 1.0, "done": false}}
    ← {"type": "error", "data": {"message": "...", "code": "VALIDATION_ERROR"}}

aiohttp (already meshrl's) speaks it, so the adapter needs none of OpenEnv's packages. Every
failure becomes the env.proto status the rollout acts on: a server that cannot be reached or
hangs up is UNAVAILABLE (an outage: the env_outage alert sees it), one with no free session is
RESOURCE_EXHAUSTED (the rollout tries another replica), an answer that is not the protocol
(malformed JSON, an error message, a reward that is no number) is INTERNAL naming it, and no
answer within `timeout_s` is DEADLINE_EXCEEDED.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from typing import Any

import aiohttp
import grpc

from meshrl.env_sdk import EnvError

MAX_MESSAGE_BYTES = 16 << 20


@dataclass
class Answer:
    observation: dict[str, Any]
    reward: float | None
    done: bool
    metadata: dict[str, Any]


class Session:
    """One WebSocket session on the server at `ws_url`; `send` returns the server's Answer."""

    def __init__(self, http: aiohttp.ClientSession, ws_url: str, timeout_s: float):
        self.http, self.ws_url, self.timeout_s = http, ws_url, timeout_s
        self.ws: aiohttp.ClientWebSocketResponse | None = None

    async def open(self) -> None:
        try:
            self.ws = await self.http.ws_connect(
                self.ws_url,
                timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=2.0),
                max_msg_size=MAX_MESSAGE_BYTES,
            )
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as err:
            raise EnvError.unavailable(f"OpenEnv server {self.ws_url} cannot be reached: {_why(err)}") from None

    async def send(self, kind: str, data: dict[str, Any]) -> Answer:
        try:
            await self.ws.send_str(json.dumps({"type": kind, "data": data}))
            message = await asyncio.wait_for(self.ws.receive(), self.timeout_s)
        except asyncio.TimeoutError:
            raise EnvError(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"OpenEnv server {self.ws_url} did not answer {kind} within {self.timeout_s:g} s (openenv.timeout_s)",
            ) from None
        except (aiohttp.ClientError, OSError, RuntimeError) as err:
            raise EnvError.unavailable(
                f"OpenEnv server {self.ws_url} lost the session at {kind}: {_why(err)}"
            ) from None
        if message.type != aiohttp.WSMsgType.TEXT:
            raise EnvError.unavailable(
                f"OpenEnv server {self.ws_url} closed the session at {kind} ({message.type.name}): the "
                f"server stopped or dropped it; the episode cannot go on"
            )
        return parse_answer(message.data, kind, self.ws_url)

    async def close(self) -> None:
        if self.ws is None or self.ws.closed:
            return
        try:
            await self.ws.send_str(json.dumps({"type": "close"}))
        except (aiohttp.ClientError, OSError, RuntimeError):
            pass  # the server already went: nothing to release there
        await self.ws.close()


def parse_answer(text: str, kind: str, where: str) -> Answer:
    """The server's answer to `kind`, or the status that says why it is none."""
    try:
        message = json.loads(text)
    except ValueError as err:
        raise EnvError(
            grpc.StatusCode.INTERNAL,
            f"OpenEnv server {where} answered {kind} with malformed JSON ({err}): {text[:200]!r}",
        ) from None
    if not isinstance(message, dict) or not isinstance(message.get("data"), dict):
        raise EnvError(
            grpc.StatusCode.INTERNAL, f"OpenEnv server {where} answered {kind} with {text[:200]!r}, not {{type, data}}"
        )
    if message.get("type") == "error":
        raise error_status(message["data"], kind, where)
    return observation_of(message["data"], kind, where)


def error_status(data: dict[str, Any], kind: str, where: str) -> EnvError:
    code = data.get("code", "")
    text = f"OpenEnv server {where} refused {kind}: {code}: {data.get('message', '')}"
    if code == "CAPACITY_REACHED":
        return EnvError.full(text + " (raise the server's max_concurrent_envs or add servers)")
    if code == "VALIDATION_ERROR":
        return EnvError.invalid(f"{text} {json.dumps(data.get('errors', ''), default=str)[:500]}")
    return EnvError(grpc.StatusCode.INTERNAL, text)


def observation_of(data: dict[str, Any], kind: str, where: str) -> Answer:
    observation, reward, done = data.get("observation"), data.get("reward"), data.get("done", False)
    bad = (
        "observation is not an object"
        if not isinstance(observation, dict)
        else "done is not true/false"
        if not isinstance(done, bool)
        else "reward is not a finite number"
        if reward is not None and not _finite(reward)
        else ""
    )
    if bad:
        raise EnvError(
            grpc.StatusCode.INTERNAL, f"OpenEnv server {where} answered {kind}: {bad}: {json.dumps(data)[:200]}"
        )
    metadata = data.get("metadata") or observation.get("metadata") or {}
    return Answer(
        observation, None if reward is None else float(reward), done, metadata if isinstance(metadata, dict) else {}
    )


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _why(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
