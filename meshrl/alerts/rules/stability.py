"""`nonfinite` and `spike`: the optimisation itself is going wrong (loss, grad norm).

Non-finite: NaN/inf in any watched metric — the update has diverged or a bad batch got in.
Spike: |value| > factor × max(median |value| over the previous `window` steps, floor); a
median (not a mean) so that one earlier spike does not raise the bar for the next.
"""

import statistics
from collections import deque

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule, finite, is_nonfinite
from meshrl.alerts.types import Condition


@register_rule("nonfinite")
class NonFinite(Rule):
    def on_step(self, step, metrics, now):
        return [
            Condition(
                f"{self.name}:{key}",
                is_nonfinite(metrics, key),
                f"{key} is {metrics[key]!r} (not finite) at step {step}",
                {key: None},
            )
            for key in self.config.metrics
            if key in metrics
        ]


@register_rule("spike")
class Spike(Rule):
    def __init__(self, config):
        super().__init__(config)
        self.history = {key: deque(maxlen=config.window) for key in config.metrics}

    def _judge(self, key: str, value: float, step: int) -> Condition | None:
        c, history = self.config, self.history[key]
        verdict = None
        if len(history) >= c.min_history:
            median = statistics.median(history)
            bound = c.factor * max(median, c.floor)
            message = (
                f"{key} {value:.4g} spiked: |{key}| > {c.factor:g} × running median "
                f"{median:.4g} (bound {bound:.4g}, last {len(history)} steps) at step {step}"
            )
            verdict = Condition(
                f"{self.name}:{key}", abs(value) > bound, message, {key: value, "median": median, "bound": bound}
            )
        history.append(abs(value))
        return verdict

    def on_step(self, step, metrics, now):
        verdicts = []
        for key in self.config.metrics:
            value = finite(metrics.get(key))
            if value is not None:
                verdicts.append(self._judge(key, value, step))
        return [v for v in verdicts if v is not None]
