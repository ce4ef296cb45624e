"""A service process's start-up, in one order for every service:

  1. load the RunConfig (`--config`);
  2. start tracing (off when telemetry.tracing is false);
  3. open the Prometheus endpoint (telemetry.metrics on telemetry.metrics_port; prints
     `METRICS http://127.0.0.1:PORT/metrics`) before anything slow, so a taken port fails fast;
  4. the service's `prepare` (work that needs no NATS: a bad config fails without it);
  5. connect to NATS (`nats.connect_timeout_s`); unless this service creates the run (the
     learner), wait up to `nats.run_wait_s` for the run's streams to exist (services start
     together in compose and Kubernetes); announce the metrics URL under the run KV key
     `metrics.<service>.<replica>` (meshrl.telemetry.service_metrics);
  6. the service's `start` (build and serve).
Each part's clean-up goes on `cleanups` as soon as the part exists, so a failure at any
step undoes exactly what was done. A start-up error (meshrl.service.errors) is raised
as StartupFailed naming the service.
"""

from __future__ import annotations

import argparse
import logging
import os
from contextlib import AsyncExitStack

from meshrl.config import load_config
from meshrl.service.context import ServiceContext, forget_key
from meshrl.service.errors import StartupFailed, startup_errors
from meshrl.telemetry.service_metrics import announce_metrics, metrics_key, open_service_metrics
from meshrl.telemetry.tracing import set_broker, shutdown_tracing, start_tracing
from meshrl.transport.bus import Bus
from meshrl.transport.bus.run_wait import wait_for_run as wait_for_run_streams

log = logging.getLogger(__name__)


async def start_up(process, args: argparse.Namespace, cleanups: AsyncExitStack) -> ServiceContext:
    """Steps 1-6 above; returns the context `work` runs with."""
    try:
        ctx = open_context(process, args, cleanups)
        await process.prepare(ctx)
        await connect_bus(ctx, wait_for_run=not process.creates_the_run)
        await process.start(ctx)
    except startup_errors() as err:
        raise StartupFailed(process.name, err) from err
    return ctx


def open_context(process, args: argparse.Namespace, cleanups: AsyncExitStack) -> ServiceContext:
    """Config, tracing and the metrics endpoint: what every service has before its own parts."""
    cfg = load_config(args.config)
    replica = args.replica_id or process.default_replica or f"{process.name}-{os.getpid()}"
    ctx = ServiceContext(process.name, args, cfg, replica, cleanups)
    start_tracing(cfg, process.name, replica, args.run_id)
    ctx.on_stop(shutdown_tracing)
    ctx.metrics = open_service_metrics(cfg, process.name, replica, args.run_id)
    if ctx.metrics is not None:
        ctx.on_stop(ctx.metrics.close)
    return ctx


async def connect_bus(ctx: ServiceContext, wait_for_run: bool = True) -> None:
    """Connect to NATS (BusUnavailable within nats.connect_timeout_s), wait for the run to
    exist (RunNotFound after nats.run_wait_s) and announce /metrics."""
    # replicas: a learner that creates the run's streams (none yet) copies them to nats.replicas nodes
    ctx.bus = await Bus.connect(
        ctx.args.nats,
        ctx.run_id,
        name=ctx.replica,
        timeout=ctx.cfg.nats.connect_timeout_s,
        replicas=ctx.cfg.nats.replicas,
    )
    ctx.on_stop(ctx.bus.close)
    if wait_for_run:
        await wait_for_run_streams(
            ctx.bus.js,
            ctx.run_id,
            timeout_s=ctx.cfg.nats.run_wait_s,
            on_wait=lambda text: log.info("%s: %s", ctx.replica, text),
        )
    set_broker(ctx.args.nats)  # group spans name the NATS server (server.address), never its credentials
    if ctx.metrics is not None:
        await announce_metrics(ctx.bus.state, ctx.metrics)
        ctx.on_stop(forget_key, ctx.bus.state, metrics_key(ctx.service, ctx.replica))
