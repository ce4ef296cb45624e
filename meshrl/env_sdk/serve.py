"""`start` (async) and `serve` (blocking): environments on a gRPC port, with health,
reflection, tracing (meshrl.transport.rpc.start_server), TLS from MESHRL_GRPC_TLS_* and a
bearer token when one is configured (auth.py)."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Iterable, Mapping

from grpc import aio

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from meshrl.env_sdk.auth import BearerAuth, server_token
from meshrl.env_sdk.environment import Environment
from meshrl.env_sdk.episodes import background
from meshrl.env_sdk.limits import Limits
from meshrl.env_sdk.servicer import EnvironmentServicer
from meshrl.telemetry.tracing import init_tracing, shutdown_tracing
from meshrl.transport.rpc.malformed import MalformedRequests
from meshrl.transport.rpc.server import registration, start_server, stop_server

log = logging.getLogger(__name__)
SERVICE = env_pb2.DESCRIPTOR.services_by_name["EnvironmentService"]
Served = type[Environment] | Iterable[type[Environment]] | Mapping[str, type[Environment]]


def by_name(environments: Served) -> dict[str, type[Environment]]:
    """{name: class} from one class, several, or a mapping (the first is the default for "")."""
    if isinstance(environments, Mapping):
        table = dict(environments)
    elif isinstance(environments, type):
        table = {environments.name: environments}
    else:
        table = {cls.name: cls for cls in environments}
    for name, cls in table.items():
        if not (isinstance(cls, type) and issubclass(cls, Environment)):
            raise TypeError(f"environment {name!r}: serve subclasses of meshrl.env_sdk.Environment, got {cls!r}")
    return table


async def start(
    environments: Served,
    *,
    port: int = 0,
    host: str | None = None,
    token: str | None = None,
    token_env: str | None = None,
    token_file: str | None = None,
    max_episodes: int = 256,
    idle_s: float = 900.0,
    max_workers: int = 16,
    limits: Limits = Limits(),
) -> tuple[aio.Server, int]:
    """Serve and return (server, bound port); stop with `await stop(server)`. `host` None:
    MESHRL_BIND_HOST (default 127.0.0.1). `token` (tests) or `token_env`/`token_file`, else
    $MESHRL_ENV_TOKEN_FILE / $MESHRL_ENV_TOKEN: when set, every call needs it."""
    servicer = EnvironmentServicer(
        by_name(environments), max_episodes=max_episodes, idle_s=idle_s, max_workers=max_workers, limits=limits
    )
    token = token if token is not None else server_token(token_env, token_file)
    reg = registration(env_pb2_grpc.add_EnvironmentServiceServicer_to_server, servicer, SERVICE)
    interceptors = [BearerAuth(token)] if token else []
    server, bound = await start_server([reg], port=port, host=host, interceptors=[*interceptors, MalformedRequests()])
    server.env_servicer = servicer
    return server, bound


async def stop(server: aio.Server, grace: float = 2.0) -> None:
    """NOT_SERVING, drain for `grace` s, then close every open episode."""
    await stop_server(server, grace=grace)
    episodes = server.env_servicer.episodes
    await asyncio.gather(*(background(episodes.close(k)) for k in list(episodes.open)), return_exceptions=True)
    server.env_servicer.close()


async def _serve_until_signal(environments: Served, port: int, name: str, **options) -> None:
    init_tracing(name, str(port), run_id="")  # spans only when OTEL_EXPORTER_OTLP_* is set
    server, bound = await start(environments, port=port, **options)
    served = ", ".join(server.env_servicer.episodes.environments)
    log.info("environment server %r on port %d (%s; grpc.health.v1, reflection)", name, bound, served)
    stop_event = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop_event.set)
    await stop_event.wait()
    await stop(server)
    shutdown_tracing()


def serve(environments: Served, *, port: int, name: str = "env", **options) -> None:
    """Serve until SIGTERM or Ctrl-C; options as for `start`.

    Each environment is served under a name, and a run's Resets carry its config's
    environment.name: the two must be equal, or every Reset is INVALID_ARGUMENT "not served
    here" and the run drops every group. `serve({"mulenv": Mul})` serves Mul as "mulenv";
    `serve(Mul)` or `serve([Mul])` as its class name "Mul" (or its `name` class attribute).
    `name` here is only the server's name in logs and traces."""
    asyncio.run(_serve_until_signal(environments, port, name, **options))
