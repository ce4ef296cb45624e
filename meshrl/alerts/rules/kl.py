"""`kl_high`: KL to the reference above `max_kl` for `consecutive_steps` steps in a row.

A sustained high KL means the policy has drifted far from the reference: the KL penalty is
too weak, the learning rate too high, or reward hacking has started. One noisy step is not
enough to alert, hence the run length.
"""

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule, finite
from meshrl.alerts.types import Condition


@register_rule("kl_high")
class KLHigh(Rule):
    def __init__(self, config):
        super().__init__(config)
        self.run_length = 0

    def on_step(self, step, metrics, now):
        c = self.config
        kl = finite(metrics.get(c.metric))
        if kl is None:
            return ()
        self.run_length = self.run_length + 1 if kl > c.max_kl else 0
        first = step - self.run_length + 1
        message = f"{c.metric} {kl:.4g} > {c.max_kl:g} for {self.run_length} consecutive steps (steps {first}-{step})"
        return [
            Condition(
                self.name,
                self.run_length >= c.consecutive_steps,
                message,
                {c.metric: kl, "max_kl": c.max_kl, "steps": self.run_length},
            )
        ]
