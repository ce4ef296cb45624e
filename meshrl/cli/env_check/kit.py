"""The kit's caller: every call with a deadline and the token, answers or statuses as values.

Episode ids are unique per kit run ("meshrl-env-check-<random>/<n>"), so several kits (or a
kit and a run) never collide on one server.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc import aio

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc


@dataclass(frozen=True)
class Answer:
    """A call's outcome: `reply` (OK) or `code` + `details` (a status)."""

    reply: Any = None
    code: grpc.StatusCode | None = None
    details: str = ""

    @property
    def ok(self) -> bool:
        return self.code is None

    def status(self) -> str:
        return "OK" if self.ok else f"{self.code.name}: {self.details[:300]}"


@dataclass
class Kit:
    stub: env_pb2_grpc.EnvironmentServiceStub
    task: env_pb2.ResetRequest  # the template every Reset copies (fields from --task)
    timeout_s: float
    metadata: tuple = ()
    run: str = field(default_factory=lambda: f"meshrl-env-check-{uuid.uuid4().hex[:8]}")
    counter: itertools.count = field(default_factory=itertools.count)

    def new_id(self) -> str:
        return f"{self.run}/{next(self.counter)}"

    def reset_request(self, episode_id: str, **changes) -> env_pb2.ResetRequest:
        request = env_pb2.ResetRequest()
        request.CopyFrom(self.task)
        request.episode_id = episode_id
        for name, value in changes.items():
            setattr(request, name, value)
        return request

    async def call(self, method: str, request, *, timeout_s: float | None = None, metadata=None) -> Answer:
        try:
            reply = await getattr(self.stub, method)(
                request, timeout=timeout_s or self.timeout_s, metadata=self.metadata if metadata is None else metadata
            )
        except aio.AioRpcError as err:
            return Answer(code=err.code(), details=err.details() or "")
        return Answer(reply=reply)

    async def reset(self, episode_id: str, **changes) -> Answer:
        return await self.call("Reset", self.reset_request(episode_id, **changes))

    async def step(self, episode_id: str, turn: int, text: str = "I am done.", tool_calls=(), **kw) -> Answer:
        return await self.call(
            "Step", env_pb2.StepRequest(episode_id=episode_id, turn=turn, text=text, tool_calls=list(tool_calls)), **kw
        )

    async def close(self, episode_id: str) -> Answer:
        return await self.call("Close", env_pb2.CloseRequest(episode_id=episode_id))
