"""open_channel and wait_healthy: the client side of every meshrl gRPC hop.

The channel's service config retries only UNAVAILABLE (connection refused / reset,
server restarting): up to 4 attempts with exponential backoff from 0.1 s. Other codes
are the caller's to handle. Message limits match the servers' (64 MiB). A call without a
deadline is rejected (RequireDeadline). For a headless Kubernetes Service pass
`load_balancing="round_robin"` and a `dns:///name:port` address. With MESHRL_GRPC_TLS_CA_FILE
set the channel is TLS (mutual with this process's certificate), see mesh_tls.py.
"""

import asyncio
import json
import time
from typing import Sequence

from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from meshrl.telemetry.spans.grpc import TracingClientInterceptor
from meshrl.transport.rpc import mesh_tls
from meshrl.transport.rpc.deadline import RequireDeadline

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # servers' and channels' alike (gRPC's default is 4 MiB)
RETRY_POLICY = {
    "maxAttempts": 4,
    "initialBackoff": "0.1s",
    "maxBackoff": "2s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}


def message_options(max_bytes: int = MAX_MESSAGE_BYTES) -> list[tuple[str, int]]:
    """The message limits of a server or channel (server.py and tls.py use them too)."""
    return [("grpc.max_send_message_length", max_bytes), ("grpc.max_receive_message_length", max_bytes)]


class ServiceUnhealthy(RuntimeError):
    """A gRPC server did not report SERVING in time."""


def service_config(load_balancing: str = "pick_first", retries: bool = True) -> str:
    config = {"loadBalancingConfig": [{load_balancing: {}}]}
    if retries:
        config["methodConfig"] = [{"name": [{}], "retryPolicy": RETRY_POLICY}]
    return json.dumps(config)


def open_channel(
    address: str,
    *,
    load_balancing: str = "pick_first",
    interceptors: Sequence[aio.ClientInterceptor] = (),
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    require_deadline: bool = True,
    retries: bool = True,
) -> aio.Channel:
    options = [
        *message_options(max_message_bytes),
        ("grpc.enable_retries", int(retries)),
        ("grpc.service_config", service_config(load_balancing, retries)),
    ]
    # Every call carries the current trace context (a no-op while tracing is off).
    chain = [RequireDeadline()] if require_deadline else []
    chain += [TracingClientInterceptor(target=address), *interceptors]
    credentials = mesh_tls.client_credentials()
    if credentials is not None:
        return aio.secure_channel(
            address, credentials, options=options + mesh_tls.client_options(), interceptors=chain or None
        )
    return aio.insecure_channel(address, options=options, interceptors=chain or None)


async def check_status(stub, service: str, timeout: float) -> str:
    """One grpc.health.v1 Check: the serving status's name (SERVING, NOT_SERVING, ...) or the
    call's error code (UNAVAILABLE, UNIMPLEMENTED, DEADLINE_EXCEEDED, ...)."""
    try:
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    except aio.AioRpcError as err:
        return err.code().name


async def is_serving(address: str, service: str = "", timeout: float = 2.0) -> bool:
    """One grpc.health.v1 probe: True when `service` at `address` answers SERVING in time."""
    async with open_channel(address, retries=False) as channel:
        return await check_status(health_pb2_grpc.HealthStub(channel), service, timeout) == "SERVING"


async def wait_healthy(address: str, service: str = "", timeout: float = 10.0) -> None:
    """Return once `service` ("" = the server) at `address` is SERVING, else raise in `timeout` s."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    async with open_channel(address, retries=False) as channel:  # this loop is the retry
        stub = health_pb2_grpc.HealthStub(channel)
        while (left := deadline - time.monotonic()) > 0:
            last = await check_status(stub, service, min(left, 1.0))
            if last == "SERVING":
                return
            await asyncio.sleep(min(0.1, max(deadline - time.monotonic(), 0)))
    raise ServiceUnhealthy(
        f"gRPC service {service or '(whole server)'} at {address} was not SERVING within {timeout:g} s "
        f"(last status: {last}): is the service running and listening there? check its log"
    )


__all__ = ["ServiceUnhealthy", "check_status", "is_serving", "open_channel", "service_config", "wait_healthy"]
