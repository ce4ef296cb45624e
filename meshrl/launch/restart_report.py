"""Every restart (and the final give-up) of a service, where people and tools will see it.

For each one the reporter:
  - prints one line on the console (through tqdm, so the progress bar stays intact);
  - appends a JSON line to RUN_DIR/restarts.jsonl (service, exit code or signal, how long it
    ran, attempt, back-off, the tail of its log): `meshrl status` shows the count per service;
  - adds 1 to `meshrl_service_restarts_total{service, replica}` when given a counter
    (restart_counts.py: the launcher's /metrics endpoint);
  - raises an alert `service_restart` (warning) or `service_crashloop` (critical) through
    the learner's sinks: the log, RUN_DIR/alerts.jsonl, the webhook when configured, and the
    run's NATS events subject (header `Meshrl-Event: alert`) when NATS is up.

A failing sink is logged, never raised: reporting must not stop the restart it reports.
"""
from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from meshrl.config.schema import RunConfig
from meshrl.alerts.sinks import build_sinks
from meshrl.alerts.types import Alert
from meshrl.launch.restart_counts import RestartCounter
from meshrl.transport.bus import Bus, subjects
from meshrl.transport.bus.publish import publish_with_retry

log = logging.getLogger("meshrl.launch")


def describe_exit(returncode: int) -> str:
    """'exited with code 1' / 'was killed by signal SIGKILL'."""
    if returncode < 0:
        return f"was killed by signal {signal.Signals(-returncode).name}"
    return f"exited with code {returncode}"


@dataclass(frozen=True)
class ServiceExit:
    """One death of a supervised service, as the reporter tells it."""

    key: str  # "reward-0"
    returncode: int
    ran_for_s: float
    log_path: Path
    tail: str

    def to_dict(self) -> dict:
        sig = signal.Signals(-self.returncode).name if self.returncode < 0 else None
        return {"service": self.key, "exit_code": self.returncode if self.returncode >= 0 else None,
                "signal": sig, "ran_for_s": round(self.ran_for_s, 3), "log": str(self.log_path),
                "tail": self.tail}


def nats_alert_sink(url: str, run_id: str, timeout_s: float = 5.0):
    """A sink that publishes one alert on the run's events subject with a short-lived client
    (restarts are rare, so a connection per alert costs nothing that matters)."""
    async def publish(payload: bytes) -> None:
        bus = await Bus.connect(url, run_id, name="meshrl-launcher", timeout=timeout_s)
        try:
            await publish_with_retry(bus.js, subjects.events_subject(run_id), payload,
                                     headers={"Meshrl-Event": "alert"}, attempts=2)
        finally:
            await bus.close()

    def sink(alert: Alert) -> None:
        asyncio.run(asyncio.wait_for(publish(json.dumps(alert.to_dict()).encode()), timeout_s * 2))
    return sink


class RestartReporter:
    def __init__(self, cfg: RunConfig, run_dir: Path, run_id: str, nats_url: str | None = None,
                 counter: RestartCounter | None = None):
        self.run_dir, self.run_id, self.counter = Path(run_dir), run_id, counter
        self.path = self.run_dir / "restarts.jsonl"
        self.sinks = build_sinks(cfg.alerts, run_dir) if cfg.alerts.enabled else []
        if cfg.alerts.enabled and nats_url is not None:
            self.sinks.append(nats_alert_sink(nats_url, run_id, cfg.nats.connect_timeout_s))

    def restarting(self, death: ServiceExit, attempt: int, budget: int, delay_s: float) -> None:
        message = (f"{death.key} {describe_exit(death.returncode)} after {death.ran_for_s:.1f} s; "
                   f"restart {attempt} of {budget} in {delay_s:g} s (log: {death.log_path})")
        self._record(death, "restart", message, attempt=attempt, budget=budget, delay_s=delay_s)
        if self.counter is not None:
            self.counter.add(death.key)
        self._alert("service_restart", "warning", death, message,
                    {"attempt": attempt, "budget": budget, "delay_s": delay_s})

    def gave_up(self, death: ServiceExit, reason: str) -> None:
        message = f"{death.key} {describe_exit(death.returncode)}; not restarted: {reason}"
        self._record(death, "gave_up", message, reason=reason)
        self._alert("service_crashloop", "critical", death, message, {"reason": reason})

    def _record(self, death: ServiceExit, event: str, message: str, **extra) -> None:
        tqdm.write(f"meshrl: {message}", file=sys.stderr)
        row = {"time": time.time(), "run_id": self.run_id, "event": event, **death.to_dict(), **extra}
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")

    def _alert(self, rule: str, severity: str, death: ServiceExit, message: str, values: dict) -> None:
        alert = Alert(rule=rule, key=f"{rule}:{death.key}", severity=severity, action="none",
                      message=message, step=None, time=time.time(), run_id=self.run_id,
                      values={"service": death.key, "returncode": death.returncode, **values})
        for sink in self.sinks:
            try:
                sink(alert)
            except Exception as err:  # a dead webhook or NATS must not stop the restart
                log.error("launcher: alert sink %r failed for %s: %r", sink, alert.key, err)

    def close(self) -> None:
        """Let background sinks (the webhook's thread) deliver what they hold."""
        for sink in self.sinks:
            if hasattr(sink, "close"):
                sink.close()
