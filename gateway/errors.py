"""GatewayError: what went wrong in a call, with the gRPC code and HTTP status that say it.

Every room raises it; api/grpc_server.py aborts the call with `code`, an HTTP answer is
`error_response(err)`: `http_status` with {"error": message, "code": name}. The message
tells the caller what to fix.
"""

from __future__ import annotations

import grpc
from aiohttp import web

HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}


class GatewayError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message

    @property
    def http_status(self) -> int:
        return HTTP_STATUS.get(self.code, 500)


def invalid(message: str) -> GatewayError:
    return GatewayError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> GatewayError:
    return GatewayError(grpc.StatusCode.NOT_FOUND, message)


def precondition(message: str) -> GatewayError:
    return GatewayError(grpc.StatusCode.FAILED_PRECONDITION, message)


def error_response(err: GatewayError) -> web.Response:
    return web.json_response({"error": err.message, "code": err.code.name}, status=err.http_status)
