"""ServiceContext: what every hook of a ServiceProcess gets from the runner.

It holds the parsed flags, the loaded RunConfig, the replica id, the metrics endpoint (None
when telemetry.metrics is off), the NATS connection (None until `start`), and the stack of
clean-ups that runs on the way out, last registered first.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import logging
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Callable

from meshrl.addresses import advertise_host, host_port
from meshrl.transport.bus.registry import announce_service, service_key

FORGET_WITHIN_S = 3.0  # per run-KV entry a stopping service withdraws
log = logging.getLogger(__name__)


@dataclass
class ServiceContext:
    service: str
    args: argparse.Namespace
    cfg: Any  # meshrl.config.RunConfig
    replica: str
    cleanups: AsyncExitStack
    metrics: Any = None  # meshrl.telemetry.metrics.MetricsHandle | None
    bus: Any = None  # meshrl.transport.bus.Bus, connected before `start`
    stopping: bool = False  # set by the runner once the work ended: the clean-ups then log their times

    @property
    def run_id(self) -> str:
        return self.args.run_id

    def on_stop(self, fn: Callable, *args: Any) -> None:
        """Call fn(*args) on the way out (a plain or an async function), last registered first.
        Each one logs `stop: NAME done in S s` when it ends, so a slow stop names its part."""
        if inspect.iscoroutinefunction(fn):
            self.cleanups.push_async_callback(timed_async(fn, self), *args)
        else:
            self.cleanups.callback(timed(fn, self), *args)

    async def announce_grpc(self, port: int, **placement) -> str:
        """Put ADVERTISE_HOST:PORT under the run KV key `services.<service>.<replica>` (where
        evaluation and health watches find it); withdrawn on the way out. The host is
        MESHRL_ADVERTISE_HOST, else the bind host (127.0.0.1 by default)."""
        address = host_port(advertise_host(), port)
        await announce_service(self.bus.state, self.service, self.replica, address, **placement)
        self.on_stop(forget_key, self.bus.state, service_key(self.service, self.replica))
        return address


def stop_part_name(fn: Callable, args: tuple) -> str:
    """`forget_key(metrics.rollout.r0)`: the function and its plain-text arguments (two
    withdrawals of the same function tell apart by their key)."""
    texts = [a for a in args if isinstance(a, (str, int, float))]
    name = getattr(fn, "__qualname__", None) or repr(fn)
    return f"{name}({', '.join(map(str, texts))})" if texts else name


def log_stop_part(ctx: ServiceContext, fn: Callable, args: tuple, began: float) -> None:
    """One line per clean-up of a service that worked (a failed start keeps its one line of error)."""
    level = logging.INFO if ctx.stopping else logging.DEBUG
    log.log(level, "%s: stop: %s done in %.2f s", ctx.replica, stop_part_name(fn, args), time.monotonic() - began)


def timed(fn: Callable, ctx: ServiceContext) -> Callable:
    """`fn` wrapped to log how long it took when it ends (a stop phase of the service)."""

    @functools.wraps(fn)
    def run(*args: Any) -> Any:
        began = time.monotonic()
        try:
            return fn(*args)
        finally:
            log_stop_part(ctx, fn, args, began)

    return run


def timed_async(fn: Callable, ctx: ServiceContext) -> Callable:
    """The async twin of `timed`."""

    @functools.wraps(fn)
    async def run(*args: Any) -> Any:
        began = time.monotonic()
        try:
            return await fn(*args)
        finally:
            log_stop_part(ctx, fn, args, began)

    return run


async def forget_key(state, key: str) -> None:
    """Delete a run-KV entry at stop; NATS may be gone already (compose may stop it first), and
    the entry is advisory, so a few seconds at most: the KV's patient retries would hold the
    stop for 45 s per entry, past a container runtime's SIGKILL."""
    try:
        await asyncio.wait_for(state.delete(key), FORGET_WITHIN_S)
    except Exception as err:  # noqa: BLE001 - a stale entry is read as "gone" by its readers
        log.warning("could not remove %s from the run KV: %r", key, err)
