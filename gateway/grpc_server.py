"""GatewayService over gRPC: a servicer whose every method hands the request and the
`authorization: Bearer TOKEN` metadata to the Dispatcher, and turns a GatewayError into
the call's status (UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, ...)."""

from __future__ import annotations

from grpc import aio

from meshrl.gateway.auth import bearer
from meshrl.gateway.dispatch import STREAMS, UNARY, Dispatcher
from meshrl.gateway.errors import GatewayError
from meshrl.api.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from meshrl.transport.rpc.server import registration

SERVICE = gateway_pb2.DESCRIPTOR.services_by_name["GatewayService"]


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
