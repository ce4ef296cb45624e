"""Bearer-token authentication for an environment server (a grpc.aio server interceptor).

Every call but grpc.health.v1 must carry `authorization: Bearer <token>`; a missing or
wrong one is UNAUTHENTICATED before any handler runs. Health stays open because Kubernetes'
gRPC probes and load balancers cannot send metadata (it says only SERVING or not).
The token comes from the server's environment (`token_env`) or a file (`token_file`),
never from code or a command line; it is compared in constant time and never logged.
"""

from __future__ import annotations

import hmac
import os

import grpc
from grpc import aio

from meshrl.config.secrets import read_secret

TOKEN_ENV = "MESHRL_ENV_TOKEN"  # defaults the SDK reads when neither source is given
TOKEN_FILE_ENV = "MESHRL_ENV_TOKEN_FILE"
OPEN_PREFIXES = ("/grpc.health.v1.Health/",)
DENIED = (
    "missing or wrong bearer token: send metadata 'authorization: Bearer <token>' with the "
    "token this environment server was given (meshrl: environment.token_env)"
)


def server_token(token_env: str | None = None, token_file: str | None = None) -> str | None:
    """The token to require: the named source, else $MESHRL_ENV_TOKEN(_FILE), else None (open)."""
    if token_env is None and token_file is None:
        if os.environ.get(TOKEN_FILE_ENV):
            token_file = os.environ[TOKEN_FILE_ENV]
        elif os.environ.get(TOKEN_ENV):
            token_env = TOKEN_ENV
    return read_secret(
        env_name=token_env,
        file=token_file,
        env_label="environment server: token_env",
        file_label="environment server: token_file",
    )


def _refusal(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """A handler of the same kind as `handler` that answers UNAUTHENTICATED."""

    async def deny(request_or_iterator, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, DENIED)

    kinds = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }
    make = kinds[(handler.request_streaming, handler.response_streaming)]
    return make(
        deny, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer
    )


class BearerAuth(aio.ServerInterceptor):
    def __init__(self, token: str):
        self._expected = f"Bearer {token}".encode()

    def __repr__(self) -> str:
        return "BearerAuth(<redacted>)"

    def allowed(self, metadata) -> bool:
        sent = next((v for k, v in (metadata or ()) if k == "authorization"), "")
        sent = sent.encode() if isinstance(sent, str) else sent
        return hmac.compare_digest(sent, self._expected)

    async def intercept_service(self, continuation, details: grpc.HandlerCallDetails):
        handler = await continuation(details)
        if handler is None or details.method.startswith(OPEN_PREFIXES) or self.allowed(details.invocation_metadata):
            return handler
        return _refusal(handler)
