"""`env_drop_rate`: too many groups dropped by the rollout, i.e. environments failing.

An agent's episode whose environment fails, hangs past its deadline or loses the episode is
never trained: the rollout drops its group with `Group.drop_reason` and the learner counts it
(`groups/rollout_dropped_total`, by reason in `groups_dropped{reason}`). Over the last
`window` steps, with D groups so dropped and T trained (both from the learner's running
totals), the rule fires when

    D / (D + T) > max_fraction      and      D + T ≥ min_groups
"""

from collections import deque

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule, finite
from meshrl.alerts.types import Condition

DROPPED, TRAINED = "groups/rollout_dropped_total", "groups/trained_total"


@register_rule("env_drop_rate")
class EnvDropRate(Rule):
    def __init__(self, config):
        super().__init__(config)
        # (dropped, trained) totals at the step before the window and at each step in it
        self.totals: deque[tuple[float, float]] = deque(maxlen=config.window + 1)

    def on_step(self, step, metrics, now):
        dropped, trained = finite(metrics.get(DROPPED)), finite(metrics.get(TRAINED))
        if dropped is None or trained is None:
            return ()
        if not self.totals:
            self.totals.append((0.0, 0.0))  # the run's start: nothing dropped or trained yet
        self.totals.append((dropped, trained))
        d = dropped - self.totals[0][0]
        n = d + trained - self.totals[0][1]
        c = self.config
        if n < c.min_groups:
            return ()
        steps = len(self.totals) - 1
        message = (
            f"{d:.0f} of {n:.0f} groups ({d / n:.0%}) in the last {steps} steps were dropped "
            f"by the rollout (> {c.max_fraction:.0%}): their environment failed; see "
            f"groups_dropped by reason, the learner's groups.jsonl and the environment service"
        )
        return [
            Condition(
                self.name, d / n > c.max_fraction, message, {"dropped": d, "groups": n, "max_fraction": c.max_fraction}
            )
        ]
