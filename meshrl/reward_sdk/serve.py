"""`start` (async) and `serve` (blocking): a reward function on a gRPC port, with health,
reflection and tracing from meshrl.transport.rpc.start_server."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any, Callable

from grpc import aio

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.reward_sdk.servicer import FunctionServicer
from meshrl.telemetry.tracing import init_tracing, shutdown_tracing
from meshrl.transport.rpc.server import registration, start_server, stop_server

log = logging.getLogger(__name__)
SERVICE = reward_pb2.DESCRIPTOR.services_by_name["RewardService"]


async def start(
    fn: Callable[..., Any], *, port: int = 0, host: str | None = None, max_workers: int = 8
) -> tuple[aio.Server, int]:
    """Serve `fn` and return (server, bound port); stop it with `await server.stop(grace)`.
    `host` None: MESHRL_BIND_HOST, default 127.0.0.1 (pass "0.0.0.0" to serve other hosts)."""
    servicer = FunctionServicer(fn, max_workers=max_workers)
    reg = registration(reward_pb2_grpc.add_RewardServiceServicer_to_server, servicer, SERVICE)
    server, bound = await start_server([reg], port=port, host=host)
    server.reward_servicer = servicer
    return server, bound


async def _serve_until_signal(fn, port: int, host: str | None, max_workers: int, name: str) -> None:
    # Spans go out only when OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT is set (else tracing is off).
    init_tracing(name, str(port), run_id="")
    server, bound = await start(fn, port=port, host=host, max_workers=max_workers)
    log.info("reward service %r on port %d (RewardService, grpc.health.v1, reflection)", name, bound)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    await stop_server(server, grace=2)  # NOT_SERVING first, so callers drain away
    server.reward_servicer.close()
    shutdown_tracing()


def serve(
    fn: Callable[..., Any], *, port: int, host: str | None = None, max_workers: int = 8, name: str = "reward-fn"
) -> None:
    """Serve `fn` until SIGTERM or Ctrl-C (see the package docstring)."""
    asyncio.run(_serve_until_signal(fn, port, host, max_workers, name))
