"""start_server: a grpc.aio server with health, reflection and 64 MiB message limits.

    server, port = await start_server([registration(
        reward_pb2_grpc.add_RewardServiceServicer_to_server, MyReward(), "meshrl.reward.v1.RewardService")])
    ...
    await stop_server(server, grace=5)

Each registered service gets its own grpc.health.v1 status (SERVING once started; "" is
the whole server) and is listed by reflection. `server.health` is the HealthServicer, for
a service that wants to report NOT_SERVING (e.g. while its engine reloads).
With MESHRL_GRPC_TLS_CERT_FILE / _KEY_FILE set the server serves TLS only, and with
MESHRL_GRPC_TLS_CLIENT_AUTH=1 requires client certificates (mesh_tls.py) and authorises each
method by the caller's kind (authz.py).
"""

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from google.protobuf.descriptor import ServiceDescriptor
from grpc import aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from meshrl.addresses import bind_host
from meshrl.telemetry.spans.grpc import TracingServerInterceptor
from meshrl.transport.rpc import mesh_tls
from meshrl.transport.rpc.authz import KindAuthorization
from meshrl.transport.rpc.channel import MAX_MESSAGE_BYTES, message_options

SERVING = health_pb2.HealthCheckResponse.SERVING


@dataclass(frozen=True)
class Registration:
    add_to_server: Callable  # the generated add_FooServiceServicer_to_server
    servicer: object
    service_name: str  # full name, e.g. "meshrl.reward.v1.RewardService"


def registration(add_to_server: Callable, servicer: object, service: str | ServiceDescriptor) -> Registration:
    """Build a Registration; `service` is a full name or a pb2 ServiceDescriptor."""
    name = service.full_name if isinstance(service, ServiceDescriptor) else service
    if "." not in name:
        raise ValueError(f"service name {name!r} must be fully qualified, e.g. 'meshrl.reward.v1.RewardService'")
    return Registration(add_to_server, servicer, name)


def _bind(server: aio.Server, host: str, port: int) -> int:
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    credentials = mesh_tls.server_credentials()
    try:
        bound = (
            server.add_secure_port(address, credentials)
            if credentials is not None
            else server.add_insecure_port(address)
        )
    except RuntimeError as err:
        raise OSError(
            f"cannot bind gRPC server to {address}: is the port in use? pick another or pass port=0 ({err})"
        ) from err
    if bound == 0:
        raise OSError(f"cannot bind gRPC server to {address}: is the port in use? pick another or pass port=0")
    return bound


async def start_server(
    registrations: Iterable[Registration],
    *,
    port: int = 0,
    host: str | None = None,
    interceptors: Sequence[aio.ServerInterceptor] = (),
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    max_receive_bytes: int | None = None,
) -> tuple[aio.Server, int]:
    """Start serving; returns (server, bound_port). Every service is marked SERVING.
    `host` None: MESHRL_BIND_HOST (default 127.0.0.1, see meshrl.addresses).
    `max_receive_bytes`: a smaller cap on requests than on answers (the gateway's)."""
    registrations = list(registrations)
    options = _message_options(max_message_bytes, max_receive_bytes)
    server = aio.server(interceptors=_interceptor_chain(interceptors), options=options)
    health_servicer = _add_services(server, registrations)
    bound = _bind(server, bind_host() if host is None else host, port)
    await server.start()
    for name in ["", *(reg.service_name for reg in registrations)]:
        await health_servicer.set(name, SERVING)
    server.health = health_servicer
    return server, bound


def _interceptor_chain(interceptors: Sequence[aio.ServerInterceptor]) -> list:
    """Tracing first (every server joins the caller's trace; a no-op while this process has no
    tracer), then, under mutual TLS, each method for the kinds that call it, then the caller's."""
    chain = [TracingServerInterceptor(), *interceptors]
    kind = mesh_tls.authorised_kind()
    if kind is not None:
        chain.insert(1, KindAuthorization(kind))
    return chain


def _message_options(max_message_bytes: int, max_receive_bytes: int | None) -> list:
    options = message_options(max_message_bytes)
    if max_receive_bytes is not None:
        options = [*options[:1], ("grpc.max_receive_message_length", max_receive_bytes)]
    return options


def _add_services(server: aio.Server, registrations: list[Registration]):
    """Health, then each registered service, all listed by reflection; returns the HealthServicer."""
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for reg in registrations:
        reg.add_to_server(reg.servicer, server)
    names = [reg.service_name for reg in registrations]
    reflection.enable_server_reflection(
        [*names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME], server
    )
    return health_servicer


async def stop_serving(server: aio.Server) -> None:
    """Report NOT_SERVING for the server and every service on it, for good (later `set`s
    are ignored): clients and probes drain away while the server still answers."""
    health_servicer = getattr(server, "health", None)
    if health_servicer is not None:
        await health_servicer.enter_graceful_shutdown()


async def stop_server(server: aio.Server, grace: float | None = 5.0) -> None:
    """Report NOT_SERVING everywhere (clients drain away), then stop after `grace` s."""
    await stop_serving(server)
    await server.stop(grace)


__all__ = ["Registration", "registration", "start_server", "stop_server", "stop_serving"]
