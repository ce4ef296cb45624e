"""Channels to services outside the mesh: TLS / mutual TLS, a bearer token, fast reconnect.

    creds = mesh_tls.channel_credentials(ca_file="ca.pem", cert_file="client.pem", key_file="client.key")
    token = read_token(token_env="JUDGE_TOKEN", token_file=None, who="reward component 'judge'")
    channel = open_external_channel("judge:50051", credentials=creds, token=token)

- `channel_credentials` (from mesh_tls.py, where every TLS file is read): TLS trusting
  `ca_file` (None = the system roots); with a client certificate and key, mutual TLS.
- `read_token`: the token from an environment variable or a file (stripped); the config
  names where it is, never the token itself. The file is read when the channel is opened,
  so a rotated token is picked up at the next channel (callers reopen after an outage).
- `BearerToken`: a client interceptor adding `authorization: Bearer <token>` to every call.
  An interceptor rather than grpc's call credentials, which gRPC refuses on plaintext
  channels; a token over plaintext is allowed (a sidecar may terminate TLS) but logged.
- `FAST_RECONNECT`: gRPC's default reconnect back-off grows to 120 s (1 s × 1.6ⁿ, so ~14 s
  after a short outage); these options cap it at 1 s so a service that comes back is used
  within about a second. The circuit breaker keeps calls from hammering it meanwhile.
"""

from __future__ import annotations

import logging
from typing import Sequence

import grpc
from grpc import aio

from meshrl.config.secrets import read_secret
from meshrl.telemetry.spans.grpc import TracingClientInterceptor
from meshrl.transport.rpc.channel import message_options, service_config
from meshrl.transport.rpc.deadline import RequireDeadline

log = logging.getLogger(__name__)

FAST_RECONNECT = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


def read_token(token_env: str | None, token_file: str | None, *, who: str) -> str | None:
    """The bearer token, or None when neither source is configured (meshrl.config.secrets)."""
    return read_secret(
        env_name=token_env, file=token_file, env_label=f"{who}: token_env", file_label=f"{who}: token_file"
    )


class BearerToken(aio.UnaryUnaryClientInterceptor):
    """Adds `authorization: Bearer <token>` to every unary call (the token is never logged)."""

    def __init__(self, token: str):
        self._header = ("authorization", f"Bearer {token}")

    def __repr__(self) -> str:
        return "BearerToken(<redacted>)"

    async def intercept_unary_unary(self, continuation, details, request):
        metadata = aio.Metadata(*(tuple(details.metadata or ())))
        metadata.add(*self._header)
        return await continuation(details._replace(metadata=metadata), request)


def open_external_channel(
    address: str,
    *,
    credentials: grpc.ChannelCredentials | None = None,
    token: str | None = None,
    server_name: str | None = None,
    options: Sequence[tuple[str, object]] = (),
) -> aio.Channel:
    """Like open_channel (deadline required, traced, 64 MiB) but with no retries of its own
    (the caller's retry policy decides), plus TLS, the token and FAST_RECONNECT."""
    # No channel-level retries: the caller retries (with back-off and a circuit breaker).
    opts = [
        *message_options(),
        ("grpc.enable_retries", 0),
        ("grpc.service_config", service_config(retries=False)),
        *FAST_RECONNECT,
        *options,
    ]
    if server_name:
        opts.append(("grpc.ssl_target_name_override", server_name))
    chain = [RequireDeadline(), TracingClientInterceptor()]
    if token is not None:
        if credentials is None:
            log.warning("sending a bearer token to %s over plaintext: configure tls for it", address)
        chain.append(BearerToken(token))
    if credentials is not None:
        return aio.secure_channel(address, credentials, options=opts, interceptors=chain)
    return aio.insecure_channel(address, options=opts, interceptors=chain)
