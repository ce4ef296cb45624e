"""GatewayService over gRPC: a servicer whose every method hands the request and the
`authorization: Bearer TOKEN` metadata to the Dispatcher, and turns a GatewayError into
the call's status (UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, ...).

In front of it, TokenGate refuses a GatewayService call without a known bearer token before
its request message is read: an anonymous caller makes the gateway parse nothing (the
server also caps a message at limits.MAX_REQUEST_BYTES). Roles are still checked per method
after the message is read (dispatch.py); the gate only asks "is this token one of ours".
Health and reflection pass untouched.
"""

from __future__ import annotations

import grpc
from grpc import aio

from meshrl.api.gateway.v1 import gateway_pb2_grpc
from meshrl.gateway.api.dispatch import SERVICE, STREAMS, UNARY, Dispatcher
from meshrl.gateway.auth.tokens import TokenAuth, bearer
from meshrl.gateway.errors import GatewayError
from meshrl.transport.rpc.server import registration

GATED_PREFIX = "/meshrl.gateway.v1.GatewayService/"


def token_of(context: aio.ServicerContext) -> str | None:
    return bearer(dict(context.invocation_metadata() or ()).get("authorization"))


def unary_method(dispatcher: Dispatcher, rpc: str):
    async def method(self, request, context):
        try:
            return await dispatcher.call(rpc, request, token_of(context))
        except GatewayError as err:
            await context.abort(err.code, err.message)

    return method


def stream_method(dispatcher: Dispatcher, rpc: str):
    async def method(self, request, context):
        try:
            async for item in dispatcher.stream(rpc, request, token_of(context)):
                yield item
        except GatewayError as err:
            await context.abort(err.code, err.message)

    return method


def gateway_registration(dispatcher: Dispatcher):
    """A Registration for meshrl.transport.rpc.server.start_server."""
    methods = {rpc: unary_method(dispatcher, rpc) for rpc in UNARY}
    methods |= {rpc: stream_method(dispatcher, rpc) for rpc in STREAMS}
    servicer = type("GatewayServicer", (gateway_pb2_grpc.GatewayServiceServicer,), methods)()
    return registration(gateway_pb2_grpc.add_GatewayServiceServicer_to_server, servicer, SERVICE)


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
    def __init__(self, auth: TokenAuth):
        self.auth = auth

    async def intercept_service(self, continuation, details):
        if not details.method.startswith(GATED_PREFIX):
            return await continuation(details)
        try:
            self.auth.authenticate(bearer(dict(details.invocation_metadata or ()).get("authorization")))
        except GatewayError as err:
            return _refusal(err.message, details.method.removeprefix(GATED_PREFIX) in STREAMS)
        return await continuation(details)
