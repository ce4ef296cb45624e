"""How many times each service of a run was restarted, counted where people look.

Live, as a Prometheus counter on the launcher's own /metrics endpoint:

    meshrl_service_restarts_total{service="reward", replica="0", run="RUN_ID"}  1

Why the launcher and not a service: the launcher is what restarts, so it counts at the
moment of the restart, even while the service that died is the learner (a count kept by the
learner would miss its own deaths and start again from 0 after each resume). Its endpoint
(a free port) is announced in the run KV under `metrics.launcher.0`, as every service's is
(meshrl.telemetry.service_metrics), and printed once on the console. Every service the
launcher started has its series at 0 from the start, so `increase()` sees the first restart.
A `--resume` is a new launcher, and its counter starts at 0, as Prometheus expects of a
restarted process.

Afterwards, from the file: `restart_counts(run_dir)` counts the `restart` rows of
RUN_DIR/restarts.jsonl (written by restart_report.py), every launcher of the run included;
`meshrl status` shows it as `restarts: reward-0 ×1, rollout-1 ×2`.
"""
from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from tqdm import tqdm

if TYPE_CHECKING:  # the CLI imports this module for `meshrl status`: OpenTelemetry only when counting
    from meshrl.telemetry.metrics import MetricsHandle

log = logging.getLogger("meshrl.launch")

RESTARTS_METRIC = "meshrl_service_restarts_total"
LAUNCHER = ("launcher", "0")


def split_key(key: str) -> tuple[str, str]:
    """'reward_model-1' -> ('reward_model', '1'): a supervised child's service and replica."""
    service, _, replica = key.rpartition("-")
    return (service, replica) if service else (key, "0")


class RestartCounter:
    """`meshrl_service_restarts_total` on a metrics handle; `add(key)` counts one restart."""

    def __init__(self, handle: MetricsHandle, started: Iterable[str] = ()):
        self.handle = handle
        self.counter = handle.counter(RESTARTS_METRIC, "restarts of a service by the launcher")
        for key in started:  # the series exist at 0 before any restart
            self.add(key, 0)

    def add(self, key: str, n: int = 1) -> None:
        service, replica = split_key(key)
        self.counter.add(n, {"service": service, "replica": replica})


def restart_counts(run_dir: str | Path) -> dict[str, int]:
    """Restarts per service key from RUN_DIR/restarts.jsonl ({} when there is none).

    A line that does not parse (cut by a crash mid-write) is skipped, never fatal: this is
    read for a status display.
    """
    path = Path(run_dir) / "restarts.jsonl"
    if not path.is_file():
        return {}
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("event") == "restart":
            counts[str(row.get("service", "?"))] += 1
    return dict(sorted(counts.items()))


def restarts_line(counts: dict[str, int]) -> str:
    """'restarts: reward-0 ×1, rollout-1 ×2' / 'restarts: none'."""
    return "restarts: " + (", ".join(f"{key} ×{n}" for key, n in counts.items()) or "none")


async def _announce(nats_url: str, run_id: str, handle: MetricsHandle, timeout_s: float, *, withdraw: bool) -> None:
    from meshrl.telemetry.service_metrics import announce_metrics, metrics_key  # lazy: opentelemetry/prometheus at CLI start-up (the CLI imports this module)
    from meshrl.transport.bus import Bus  # lazy: nats/aiohttp at CLI start-up (the CLI imports this module)

    async with await Bus.connect(nats_url, run_id, name="meshrl-launcher", timeout=timeout_s) as bus:
        if withdraw:
            await bus.state.delete(metrics_key(handle.service, handle.replica))
        else:
            await announce_metrics(bus.state, handle)


def announce(nats_url: str, run_id: str, handle: MetricsHandle, timeout_s: float, *, withdraw: bool = False) -> None:
    """Put (or withdraw) the launcher's endpoint in the run KV; best effort, like a service's."""
    try:
        asyncio.run(asyncio.wait_for(_announce(nats_url, run_id, handle, timeout_s, withdraw=withdraw), timeout_s * 2))
    except Exception as err:  # noqa: BLE001 - the entry is advisory; the URL is printed too
        log.warning("launcher: could not %s its metrics endpoint in the run KV: %r",
                    "withdraw" if withdraw else "announce", err)


def open_restart_counter(cfg, run_id: str, nats_url: str, started: Iterable[str]) -> RestartCounter | None:
    """The launcher's endpoint with its restart counter (None when telemetry.metrics is off).

    Always on a free port: telemetry.metrics_port is the services' setting, and a fixed one
    is taken by the first process on this host.
    """
    from meshrl.telemetry.metrics import start_metrics  # lazy: opentelemetry/prometheus at CLI start-up (the CLI imports this module)

    if not cfg.telemetry.metrics:
        return None
    handle = start_metrics(*LAUNCHER, run_id=run_id, port=0)
    tqdm.write(f"meshrl: launcher metrics (service restarts) at {handle.url}", file=sys.stderr)
    announce(nats_url, run_id, handle, cfg.nats.connect_timeout_s)
    return RestartCounter(handle, started)


def close_restart_counter(counter: RestartCounter | None, nats_url: str, run_id: str, timeout_s: float) -> None:
    if counter is None:
        return
    announce(nats_url, run_id, counter.handle, min(timeout_s, 2.0), withdraw=True)  # NATS may be gone
    counter.handle.close()
