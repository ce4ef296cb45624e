"""`MalformedRequests`: a request whose bytes are not the method's message is INVALID_ARGUMENT.

grpc.aio parses a request before the handler runs and answers a parse failure with UNKNOWN
(and an error log of its own); a contract that promises a status per failure needs
INVALID_ARGUMENT naming the message type. This server interceptor takes over parsing of
unary-request methods: the raw bytes reach it, it parses them, then calls the handler.
"""

from __future__ import annotations

import grpc
from google.protobuf.message import DecodeError
from grpc import aio


def _parsing(handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
    parse = handler.request_deserializer
    streaming = handler.response_streaming
    behaviour = handler.unary_stream if streaming else handler.unary_unary

    async def parsed(raw: bytes, context):
        try:
            request = parse(raw)
        except (DecodeError, ValueError) as err:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the request to {method} is not a valid protobuf message of its type ({err})",
            )
        return await behaviour(request, context)

    make = grpc.unary_stream_rpc_method_handler if streaming else grpc.unary_unary_rpc_method_handler
    return make(parsed, request_deserializer=None, response_serializer=handler.response_serializer)


class MalformedRequests(aio.ServerInterceptor):
    async def intercept_service(self, continuation, details: grpc.HandlerCallDetails):
        handler = await continuation(details)
        if (
            handler is None
            or handler.request_streaming
            or handler.request_deserializer is None
            or handler.response_streaming
        ):
            return handler
        return _parsing(handler, details.method)
