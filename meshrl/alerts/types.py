"""What a rule reports (`Condition`) and what the engine emits (`Alert`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

ACTION_ORDER = ("none", "pause", "stop")
SEVERITY_ORDER = ("info", "warning", "critical")


@dataclass(frozen=True)
class Condition:
    """One rule's verdict on one thing it watches (`key`, e.g. "spike:grad_norm").

    `active` True = the bad condition holds now; False = it has cleared (re-arms the alert).
    A rule that cannot judge (metric missing this step) reports nothing for that key.
    """

    key: str
    active: bool
    message: str = ""
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Alert:
    rule: str
    key: str
    severity: str
    action: str
    message: str
    step: int | None
    time: float  # wall clock (time.time()), for humans and event logs
    run_id: str = ""
    values: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict; NaN/inf in `values` become None (as in metrics.jsonl)."""
        data = asdict(self)
        data["values"] = {
            k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in data["values"].items()
        }
        return data


def strongest_action(alerts: list[Alert]) -> str:
    """ "stop" beats "pause" beats "none": what the learner should do after these alerts."""
    return max((a.action for a in alerts), key=ACTION_ORDER.index, default="none")


def at_least(severity: str, minimum: str) -> bool:
    return SEVERITY_ORDER.index(severity) >= SEVERITY_ORDER.index(minimum)
