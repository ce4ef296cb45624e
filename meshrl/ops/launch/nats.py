"""The run's NATS: an embedded server in the run dir, or the one `nats.url` names.

An embedded server that dies is restarted on the same port and store dir (nats_restart.py).

Streams are created once here, before any service starts, so no two services race to
create them with different settings.
"""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Iterator

from meshrl.config.schema import RunConfig
from meshrl.ops.launch.errors import LaunchError


@contextlib.contextmanager
def nats_url(cfg: RunConfig, run_dir: Path) -> Iterator[str]:
    """Yield the NATS url for the run; an embedded server lives exactly as long as the block."""
    if cfg.nats.url != "embedded":
        yield cfg.nats.url
        return
    from meshrl.transport.bus import EmbeddedNats

    from meshrl.transport.bus.errors import BusUnavailable

    try:
        server = EmbeddedNats(run_dir / "nats")  # started by the constructor
    except BusUnavailable as err:
        raise LaunchError(f"could not start the embedded nats-server in {run_dir / 'nats'}: {err}") from None
    from meshrl.ops.launch.nats_restart import kept_alive
    from meshrl.ops.launch.restart_policy import RestartPolicy
    from meshrl.ops.launch.restart_report import RestartReporter

    # A killed server would end the run: restarted on the same port and store (nats_restart.py).
    with kept_alive(server, RestartReporter(cfg, run_dir, cfg.run.name), RestartPolicy.from_config(cfg.launch)):
        yield server.url


async def _create_streams(url: str, run_id: str, timeout_s: float, replicas: int) -> None:
    from meshrl.transport.bus import Bus, BusUnavailable

    try:
        bus = await Bus.connect(url, run_id, name="meshrl-launcher", timeout=timeout_s, replicas=replicas)
    except BusUnavailable as err:  # its message names the url and how to start a server
        raise LaunchError(f"{err}; or set nats.url=embedded") from None
    try:
        await bus.ensure_streams()
    finally:
        await bus.close()


def create_streams(url: str, run_id: str, *, timeout_s: float = 5.0, replicas: int = 1) -> None:
    """Connect, create the run's streams (idempotent), disconnect. LaunchError if unreachable."""
    asyncio.run(_create_streams(url, run_id, timeout_s, replicas))
