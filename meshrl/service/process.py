"""ServiceProcess: the parts of a service process that are its own; the runner calls them.

Order (meshrl.service.startup): flags → config → tracing → metrics endpoint →
`prepare` → NATS → `start` → `work` until it ends or a stop; then every clean-up
registered with `ctx.on_stop`, last registered first. One instance serves one process, so
the hooks keep what they build on `self`.
"""

from __future__ import annotations

import argparse

from meshrl.service.context import ServiceContext


class ServiceProcess:
    name: str = ""  # the service kind, e.g. "reward": log lines, KV keys, error messages
    default_replica: str | None = None  # None: "<name>-<pid>"
    creates_the_run: bool = False  # True for the learner; the others wait until it has (nats.run_wait_s)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Flags beyond --nats, --run-id, --config and --replica-id (none by default)."""

    async def prepare(self, ctx: ServiceContext) -> None:
        """Start-up work that needs no NATS (checks, a model load), so bad input fails without it."""

    async def start(self, ctx: ServiceContext) -> None:
        """Build and serve with `ctx.bus` connected; register each part's clean-up with ctx.on_stop."""

    async def work(self, ctx: ServiceContext) -> None:
        """The service's job: returns when done, raises when it fails, is cancelled on a stop."""
        raise NotImplementedError(f"{type(self).__name__} must define work(ctx)")

    def stop_gracefully(self, reason: str) -> bool:
        """Asked on the first SIGTERM/SIGINT while `work` runs. True: `work` will now end by
        itself (the learner finishes its step and checkpoints); False (default): cancel it."""
        return False
