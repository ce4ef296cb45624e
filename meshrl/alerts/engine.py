"""AlertEngine: feeds each step's metrics (and a clock, and health checks) to the rules and
emits an alert once per episode: when a condition turns bad, not again while it stays bad,
and again only after it has cleared (re-armed).

    engine = AlertEngine.from_config(cfg.alerts, run_dir, run_id=run_id, publish=bus_publish)
    for step ...:
        alerts = engine.observe(step, metrics)      # step rules + clock/health rules
        if strongest_action(alerts) != "none": checkpoint, then pause or stop
    while waiting for a batch:
        engine.progress("groups")  # when groups arrive;  engine.poll() now and then
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from meshrl.alerts.registry import rule_class, rule_names
from meshrl.alerts.rules.base import Rule
from meshrl.alerts.sinks import build_sinks
from meshrl.alerts.types import Alert, Condition
from meshrl.config.alerts import AlertsConfig

log = logging.getLogger("meshrl.alerts")
Sink = Callable[[Alert], None]


def build_rules(config: AlertsConfig) -> list[Rule]:
    """One rule per registered name that `config` has an enabled section for."""
    if not config.enabled:
        return []
    sections = {name: getattr(config, name, None) for name in rule_names()}
    return [rule_class(name)(section) for name, section in sections.items() if section is not None and section.enabled]


class AlertEngine:
    def __init__(
        self,
        config: AlertsConfig,
        sinks: Iterable[Sink] = (),
        *,
        run_id: str = "",
        clock: Callable[[], float] = time.monotonic,
        health_check: Callable[[], Mapping[str, bool]] | None = None,
        wall_clock: Callable[[], float] = time.time,
    ):
        self.config, self.sinks, self.run_id = config, list(sinks), run_id
        self.clock, self.wall_clock, self.health_check = clock, wall_clock, health_check
        self.rules = build_rules(config)
        self.active: set[str] = set()  # condition keys whose alert has fired and not cleared
        self.last_step: int | None = None
        now = clock()
        for rule in self.rules:
            rule.on_progress("start", now)

    @classmethod
    def from_config(
        cls, config: AlertsConfig, run_dir: str | Path | None = None, *, publish=None, **kwargs
    ) -> "AlertEngine":
        """The engine with the sinks `config` asks for (see `meshrl.alerts.sinks.build_sinks`)."""
        return cls(config, build_sinks(config, run_dir, publish), **kwargs)

    def observe(self, step: int, metrics: Mapping[str, Any]) -> list[Alert]:
        """Judge one learner step; returns the alerts that fired now (already sent to sinks)."""
        now = self.clock()
        self.last_step = step
        found = [(r, c) for r in self.rules for c in r.on_step(step, metrics, now)]
        return self._fire(found + self._poll_conditions(now, None))

    def poll(self, health: Mapping[str, bool] | None = None) -> list[Alert]:
        """Judge the clock and health rules between steps (stall, service down)."""
        return self._fire(self._poll_conditions(self.clock(), health))

    def progress(self, kind: str = "groups") -> None:
        """Record that `kind` moved forward now (e.g. a group arrived)."""
        now = self.clock()
        for rule in self.rules:
            rule.on_progress(kind, now)

    def _poll_conditions(self, now: float, health) -> list[tuple[Rule, Condition]]:
        if health is None and self.health_check is not None:
            try:
                health = self.health_check()
            except Exception:  # a broken checker is not a down service
                log.exception("alerts: the health check callback failed; skipping it this time")
        return [(r, c) for r in self.rules for c in r.on_poll(now, health)]

    def _fire(self, found: list[tuple[Rule, Condition]]) -> list[Alert]:
        fired = []
        for rule, cond in found:
            if not cond.active:
                self.active.discard(cond.key)
            elif cond.key not in self.active:
                self.active.add(cond.key)
                fired.append(self._alert(rule, cond))
        for alert in fired:
            self._send(alert)
        return fired

    def _alert(self, rule: Rule, cond: Condition) -> Alert:
        c = rule.config
        return Alert(
            rule=rule.name,
            key=cond.key,
            severity=c.severity,
            action=c.action,
            message=cond.message,
            step=self.last_step,
            time=self.wall_clock(),
            run_id=self.run_id,
            values=dict(cond.values),
        )

    def _send(self, alert: Alert) -> None:
        for sink in self.sinks:
            try:
                sink(alert)
            except Exception:  # one broken sink must not hide the alert from the others
                log.exception("alerts: sink %r failed for %s", sink, alert.key)

    def close(self) -> None:
        """Flush and close sinks that hold resources (the webhook's sender thread, files)."""
        for sink in self.sinks:
            close = getattr(sink, "close", None)
            if close is not None:
                close()
