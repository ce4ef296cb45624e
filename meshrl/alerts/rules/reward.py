"""`reward_nan` and `reward_flat`: the reward signal is broken or carries no information.

NaN: a reward function or the aggregation produced NaN/inf (null in metrics.jsonl).
Flat: the population std of the last `window` step-mean rewards is below `min_std` — the
policy is not improving (or the task is saturated, or every sample gets the same score).
"""

import statistics
from collections import deque

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule, finite, is_nonfinite
from meshrl.alerts.types import Condition


@register_rule("reward_nan")
class RewardNaN(Rule):
    def on_step(self, step, metrics, now):
        key = self.config.metric
        if key not in metrics:
            return ()
        bad = is_nonfinite(metrics, key)
        return [
            Condition(
                self.name,
                bad,
                f"{key} is {metrics[key]!r} (not finite) at step {step}",
                {key: None if bad else metrics[key]},
            )
        ]


@register_rule("reward_flat")
class RewardFlat(Rule):
    def __init__(self, config):
        super().__init__(config)
        self.window: deque[float] = deque(maxlen=config.window)

    def on_step(self, step, metrics, now):
        c = self.config
        reward = finite(metrics.get(c.metric))
        if reward is None:
            return ()
        self.window.append(reward)
        if len(self.window) < c.window:
            return ()
        std = statistics.pstdev(self.window)
        mean = statistics.fmean(self.window)
        message = (
            f"{c.metric} flat: std {std:.3g} < {c.min_std:g} over the last {c.window} "
            f"steps (mean {mean:.4g}, steps {step - c.window + 1}-{step})"
        )
        return [Condition(self.name, std < c.min_std, message, {"std": std, "mean": mean})]
