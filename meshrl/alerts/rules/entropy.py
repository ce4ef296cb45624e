"""`entropy_collapse`: entropy below `min_fraction` × its mean over the first steps.

Entropy collapse (the policy becoming near-deterministic) ends exploration: group rewards
stop varying and GRPO-style advantages go to zero (DAPO, Yu et al. 2025, §3.1). The baseline
is the mean of the first `baseline_steps` finite values; those steps are not judged.
"""

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule, finite
from meshrl.alerts.types import Condition


@register_rule("entropy_collapse")
class EntropyCollapse(Rule):
    def __init__(self, config):
        super().__init__(config)
        self.first_values: list[float] = []

    def on_step(self, step, metrics, now):
        c = self.config
        entropy = finite(metrics.get(c.metric))
        if entropy is None:
            return ()
        if len(self.first_values) < c.baseline_steps:
            self.first_values.append(entropy)
            return ()
        baseline = sum(self.first_values) / len(self.first_values)
        bound = c.min_fraction * baseline
        message = (
            f"{c.metric} {entropy:.4g} < {c.min_fraction:g} × first-{c.baseline_steps}-"
            f"steps mean {baseline:.4g} (= {bound:.4g}) at step {step}"
        )
        return [
            Condition(self.name, entropy < bound, message, {c.metric: entropy, "baseline": baseline, "bound": bound})
        ]
