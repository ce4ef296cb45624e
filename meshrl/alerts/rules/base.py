"""The interface every alert rule implements, and the number test they share.

A rule keeps its own state (windows, counters) and answers three events; each returns the
`Condition`s it can judge now. The engine turns an inactive→active change into one alert.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from meshrl.alerts.types import Condition


class Rule:
    name = "rule"

    def __init__(self, config):
        self.config = config

    def on_step(self, step: int, metrics: Mapping[str, Any], now: float) -> Iterable[Condition]:
        return ()

    def on_progress(self, kind: str, now: float) -> None:
        """Something moved forward (`kind` e.g. "groups"): time-based rules reset their clock."""

    def on_poll(self, now: float, health: Mapping[str, bool] | None) -> Iterable[Condition]:
        return ()


def finite(value: Any) -> float | None:
    """The value as a float if it is a finite number, else None (null, NaN, inf, text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def is_nonfinite(metrics: Mapping[str, Any], key: str) -> bool:
    """True when `key` was logged but is not a finite number (NaN/inf, null in jsonl)."""
    return key in metrics and finite(metrics[key]) is None
