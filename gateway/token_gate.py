"""A gRPC interceptor that refuses a GatewayService call without a known bearer token before
its request message is read: an anonymous caller makes the gateway parse nothing (the
gateway's server also caps a message at gateway.limits.MAX_REQUEST_BYTES).

Roles are still checked per method after the message is read (dispatch.py); this gate only
asks "is this token one of ours". Health and reflection pass untouched.
"""

from __future__ import annotations

import grpc
from grpc import aio

from meshrl.gateway.auth import TokenAuth, bearer
from meshrl.gateway.errors import GatewayError

GATED_PREFIX = "/meshrl.gateway.v1.GatewayService/"


def _refusal(message: str, streaming: bool):
    async def refuse_unary(request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    async def refuse_stream(request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        yield  # never reached: makes this an async generator, as a server stream's handler is

    # No deserializer: the request's bytes are never parsed.
    if streaming:
        return grpc.unary_stream_rpc_method_handler(refuse_stream)
    return grpc.unary_unary_rpc_method_handler(refuse_unary)


class TokenGate(aio.ServerInterceptor):
    def __init__(self, auth: TokenAuth, streaming_methods: set[str]):
        self.auth, self.streaming = auth, streaming_methods

    async def intercept_service(self, continuation, details):
        if not details.method.startswith(GATED_PREFIX):
            return await continuation(details)
        try:
            self.auth.authenticate(bearer(dict(details.invocation_metadata or ()).get("authorization")))
        except GatewayError as err:
            return _refusal(err.message, details.method.removeprefix(GATED_PREFIX) in self.streaming)
        return await continuation(details)
