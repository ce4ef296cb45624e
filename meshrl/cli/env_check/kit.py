"""The kit's caller: every call with a deadline and the token, answers or statuses as values.

Answers are read as the rollout reads them (meshrl.env_sdk.wire: bad UTF-8 repaired, bytes
that are no protobuf an `invalid` answer, never an exception), so a broken server makes a
FAIL row, not a traceback.

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

from meshrl.api.env.v1 import env_pb2
from meshrl.env_sdk.wire import parse_answer

SERVICE = "/meshrl.env.v1.EnvironmentService/"
METHODS = {
    "Reset": (env_pb2.ResetRequest, env_pb2.ResetResponse),
    "Step": (env_pb2.StepRequest, env_pb2.StepResponse),
    "Close": (env_pb2.CloseRequest, env_pb2.CloseResponse),
}


@dataclass(frozen=True)
class Answer:
    """A call's outcome: `reply` (OK), `code` + `details` (a status), or `invalid` (OK with
    bytes that are no answer: what they were)."""

    reply: Any = None
    code: grpc.StatusCode | None = None
    details: str = ""
    invalid: str = ""

    @property
    def ok(self) -> bool:
        return self.code is None and not self.invalid

    def status(self) -> str:
        if self.invalid:
            return f"INVALID_ANSWER: answered {self.invalid[:300]}"
        return "OK" if self.ok else f"{self.code.name}: {self.details[:300]}"


@dataclass
class Kit:
    channel: aio.Channel
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
        request_cls, response_cls = METHODS[method]
        rpc = self.channel.unary_unary(
            SERVICE + method,
            request_serializer=request_cls.SerializeToString,
            response_deserializer=parse_answer(response_cls),
        )
        try:
            reply, detail = await rpc(
                request, timeout=timeout_s or self.timeout_s, metadata=self.metadata if metadata is None else metadata
            )
        except aio.AioRpcError as err:
            return Answer(code=err.code(), details=err.details() or "")
        return Answer(invalid=detail) if reply is None else Answer(reply=reply)

    async def reset(self, episode_id: str, **changes) -> Answer:
        return await self.call("Reset", self.reset_request(episode_id, **changes))

    async def step(self, episode_id: str, turn: int, text: str = "I am done.", tool_calls=(), **kw) -> Answer:
        return await self.call(
            "Step", env_pb2.StepRequest(episode_id=episode_id, turn=turn, text=text, tool_calls=list(tool_calls)), **kw
        )

    async def close(self, episode_id: str) -> Answer:
        return await self.call("Close", env_pb2.CloseRequest(episode_id=episode_id))
