"""The one door to the handlers: authenticate the bearer token, check the RPC's role, call.

    reply = await dispatch.call("PauseRun", request, token)        # unary
    async for record in dispatch.stream("StreamMetrics", request, token): ...

Both transports (grpc_server.py, http_app.py) go through here, so a rule holds for both.
`ROLE` says which role each RPC needs: a viewer reads, an operator also steers a run, an
admin also submits and rolls back (auth/tokens.py).
"""

from __future__ import annotations

import contextlib
import logging
from typing import AsyncIterator

import grpc

from meshrl.api.gateway.v1 import gateway_pb2
from meshrl.errors import ConfigError, LaunchError
from meshrl.gateway.auth.tokens import TokenAuth
from meshrl.gateway.errors import GatewayError
from meshrl.gateway.limits import FollowSlots

log = logging.getLogger("meshrl.gateway")
VIEW = (
    "ListRuns",
    "GetRunStatus",
    "ListCheckpoints",
    "ListSamples",
    "GetGroupTrace",
    "StreamMetrics",
    "StreamAlerts",
    "StreamEvents",
)
OPERATE = ("PauseRun", "ResumeRun", "CheckpointRun", "StopRun", "ScaleService", "ExportRun")
ADMIN = ("SubmitRun", "RollbackRun")
ROLE = {**{r: "viewer" for r in VIEW}, **{r: "operator" for r in OPERATE}, **{r: "admin" for r in ADMIN}}
SERVICE = gateway_pb2.DESCRIPTOR.services_by_name["GatewayService"]
STREAMS = tuple(m.name for m in SERVICE.methods if m.server_streaming)
UNARY = tuple(rpc for rpc in ROLE if rpc not in STREAMS)


def as_gateway_error(err: Exception) -> GatewayError:
    if isinstance(err, GatewayError):
        return err
    if isinstance(err, (LaunchError, ConfigError, ValueError)):
        return GatewayError(grpc.StatusCode.FAILED_PRECONDITION, str(err))
    log.exception("gateway handler failed")
    return GatewayError(grpc.StatusCode.INTERNAL, f"{type(err).__name__}: {err}")


class Dispatcher:
    """`handlers`: one async method (or async generator, for a stream) per RPC (handlers.py)."""

    def __init__(self, handlers, auth: TokenAuth, follows: FollowSlots | None = None):
        self.handlers, self.auth = handlers, auth
        self.follows = follows or FollowSlots()  # live streams per user (limits.py)

    async def call(self, rpc: str, request, token: str | None):
        who = self.auth.authorize(token, ROLE[rpc], rpc)
        try:
            return await getattr(self.handlers, rpc)(request, who)
        except Exception as err:  # noqa: BLE001 - every failure leaves as a GatewayError
            raise as_gateway_error(err) from None

    async def stream(self, rpc: str, request, token: str | None, *, slot_held: bool = False) -> AsyncIterator:
        """`slot_held`: the caller took the follow slot already (SSE: before its headers go out)."""
        who = self.auth.authorize(token, ROLE[rpc], rpc)
        slot = self.follows.taken(who.name) if request.follow and not slot_held else contextlib.nullcontext()
        with slot:  # a stream that follows a run holds its slot until it ends
            try:
                async for item in getattr(self.handlers, rpc)(request, who):
                    yield item
            except Exception as err:  # noqa: BLE001
                raise as_gateway_error(err) from None
