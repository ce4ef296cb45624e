"""Shared test helpers: an engine running only the rules under test, on a fake clock."""

from meshrl.alerts import AlertEngine, AlertsConfig
from meshrl.alerts.registry import rule_names


class FakeClock:
    def __init__(self, t: float = 0.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def only(*names: str, **sections) -> AlertsConfig:
    """AlertsConfig with every rule disabled except `names`; `sections` override settings."""
    data = {name: {"enabled": name in names} for name in rule_names()}
    for name, settings in sections.items():
        data[name] = {**data[name], **settings}
    return AlertsConfig.model_validate(data)


def engine(*names: str, sinks=(), clock=None, **sections) -> AlertEngine:
    return AlertEngine(
        only(*names, **sections), sinks, run_id="run-t", clock=clock or FakeClock(), wall_clock=lambda: 1234.5
    )


def feed(eng: AlertEngine, key: str, values, start: int = 1) -> list[list]:
    """Observe one metric over steps; returns the alerts fired at each step."""
    return [eng.observe(step, {key: v}) for step, v in enumerate(values, start=start)]


def fired_at(per_step: list[list], start: int = 1) -> list[int]:
    return [step for step, alerts in enumerate(per_step, start=start) if alerts]
