"""A service process's /metrics endpoint: start it from the run config, announce it, stop it.

Every service main does the same three steps, kept alike here:

    metrics = open_service_metrics(cfg, "reward", replica, run_id)  # None: telemetry.metrics off
    await announce_metrics(bus.state, metrics)   # run KV metrics.reward.<replica> = {"url": ...}
    ...
    await close_service_metrics(bus.state, metrics)

Where the endpoint is announced: the run KV (`bus.state`), key `metrics.<service>.<replica>`,
value {"url", "service", "replica", "pid"}, deleted on a clean stop. Every service already
holds the KV, it is scoped to the run, and a scraper or the gateway finds every replica
there without a shared file system (rollout announces its gRPC address the same way).
The URL is also printed as one line `METRICS http://127.0.0.1:PORT/metrics`.
"""

from __future__ import annotations

import logging
import os

from meshrl.errors import ConfigError
from meshrl.telemetry.metrics import MetricsHandle, start_metrics

log = logging.getLogger(__name__)


def metrics_key(service: str, replica: str) -> str:
    return f"metrics.{service}.{replica}"  # dots: one subject token each (bus permissions)


def open_service_metrics(cfg, service: str, replica: str, run_id: str) -> MetricsHandle | None:
    """Start the endpoint on `telemetry.metrics_port` (0 = a free one), or None when off.

    A taken port is a config problem, so it raises ConfigError naming the key (exit 2).
    """
    if not cfg.telemetry.metrics:
        return None
    port = cfg.telemetry.metrics_port
    try:
        handle = start_metrics(service, replica=replica, run_id=run_id, port=port)
    except OSError as err:
        raise ConfigError(
            f"telemetry.metrics_port={port}: {err}; several processes on one host need telemetry.metrics_port=0"
        ) from err
    print(f"METRICS {handle.url}", flush=True)
    return handle


async def announce_metrics(state, handle: MetricsHandle | None) -> None:
    """Put the endpoint's URL in the run KV (nothing when metrics are off).

    Best effort: the entry is advisory (the URL is printed too), so a missing KV bucket is a
    warning, never a reason for the service to stop.
    """
    if handle is None:
        return
    key = metrics_key(handle.service, handle.replica)
    try:
        await state.put(
            key, {"url": handle.url, "service": handle.service, "replica": handle.replica, "pid": os.getpid()}
        )
    except Exception as err:  # noqa: BLE001
        log.warning("could not announce %s in the run KV: %r", key, err)


async def close_service_metrics(state, handle: MetricsHandle | None) -> None:
    """Withdraw the KV entry (best effort: NATS may be gone already) and stop the endpoint."""
    if handle is None:
        return
    if state is not None:
        key = metrics_key(handle.service, handle.replica)
        try:
            await state.delete(key)
        except Exception as err:  # noqa: BLE001 - the entry is advisory
            log.warning("could not remove %s from the run KV: %r", key, err)
    handle.close()
