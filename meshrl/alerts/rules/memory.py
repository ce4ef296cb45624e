"""`memory_growth`: resident memory rising every step, by more than `min_growth_pct` in all.

A leak (tensors kept alive by a list of metrics, a growing cache) shows as RSS that never
comes down. Samples come from the step's `metric` (default `memory/rss_bytes`); a step
without it samples this process and its children with psutil.
"""

from collections import deque

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule, finite
from meshrl.alerts.types import Condition
from meshrl.telemetry.resources import ProcessSampler


@register_rule("memory_growth")
class MemoryGrowth(Rule):
    def __init__(self, config):
        super().__init__(config)
        self.samples: deque[float] = deque(maxlen=config.steps)
        self._sampler = None

    def _own_rss(self) -> float:
        if self._sampler is None:
            self._sampler = ProcessSampler()
        return float(self._sampler.rss_bytes())

    def on_step(self, step, metrics, now):
        c = self.config
        rss = finite(metrics.get(c.metric))
        self.samples.append(rss if rss is not None else self._own_rss())
        if len(self.samples) < c.steps:
            return ()
        s = list(self.samples)
        growth = 100.0 * (s[-1] - s[0]) / s[0] if s[0] > 0 else 0.0
        rising = all(b >= a for a, b in zip(s, s[1:]))
        message = (
            f"RSS rose every step for {c.steps} steps: {s[0] / 2**20:.0f} MiB -> "
            f"{s[-1] / 2**20:.0f} MiB (+{growth:.1f}% > {c.min_growth_pct:g}%) "
            f"up to step {step}"
        )
        return [
            Condition(
                self.name,
                rising and growth > c.min_growth_pct,
                message,
                {"first_bytes": s[0], "last_bytes": s[-1], "growth_pct": growth},
            )
        ]
