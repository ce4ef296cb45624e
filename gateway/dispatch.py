"""The one door to the handlers: authenticate the bearer token, check the RPC's role, call.

    reply = await dispatch.call("PauseRun", request, token)        # unary
    async for record in dispatch.stream("StreamMetrics", request, token): ...

Both transports (grpc_server.py, http_app.py) go through here, so a rule holds for both.
"""

from __future__ import annotations

import contextlib
import logging
from typing import AsyncIterator

import grpc

from meshrl.gateway.auth import TokenAuth
from meshrl.gateway.errors import GatewayError
from meshrl.gateway.handlers import ROLE, STREAM_FILES, Handlers
from meshrl.errors import ConfigError
from meshrl.errors import LaunchError
from meshrl.gateway.limits import FollowSlots

log = logging.getLogger("meshrl.gateway")
STREAMS = tuple(STREAM_FILES)
UNARY = tuple(rpc for rpc in ROLE if rpc not in STREAMS)


def as_gateway_error(err: Exception) -> GatewayError:
    if isinstance(err, GatewayError):
        return err
    if isinstance(err, (LaunchError, ConfigError, ValueError)):
        return GatewayError(grpc.StatusCode.FAILED_PRECONDITION, str(err))
    log.exception("gateway handler failed")
    return GatewayError(grpc.StatusCode.INTERNAL, f"{type(err).__name__}: {err}")


class Dispatcher:
    def __init__(self, handlers: Handlers, auth: TokenAuth, follows: FollowSlots | None = None):
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
