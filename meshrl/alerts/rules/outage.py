"""`reward_outage`: every group that arrived for `after_s` seconds failed scoring.

A reward component that is down (an external service gone, a verifier crashing) makes every
group arrive with a failed score. `OutageClock` keeps that one fact — since when has nothing
scored — for both this alert rule and the learner, which throttles its prompts and, after
`max_wait_s`, stops (services/learner/gather.py). Fed by `AlertEngine.progress("scored")` and
`progress("score_failed")`; groups dropped for other reasons (stale) say nothing either way.
"""
from __future__ import annotations

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule
from meshrl.alerts.types import Condition


class OutageClock:
    """Since when every arriving group failed scoring (None: the last one scored)."""

    def __init__(self) -> None:
        self.failing_since: float | None = None
        self.failures = 0

    def scored(self) -> None:
        self.failing_since, self.failures = None, 0

    def failed(self, now: float) -> None:
        if self.failing_since is None:
            self.failing_since = now
        self.failures += 1

    def down_for(self, now: float) -> float:
        return 0.0 if self.failing_since is None else now - self.failing_since

    def describe(self, now: float) -> str:
        return (f"every group failed scoring for {self.down_for(now):.0f} s "
                f"({self.failures} groups); check the reward service's log and its components")


@register_rule("reward_outage")
class RewardOutage(Rule):
    def __init__(self, config):
        super().__init__(config)
        self.clock = OutageClock()

    def on_progress(self, kind, now):
        if kind == "scored":
            self.clock.scored()
        elif kind == "score_failed":
            self.clock.failed(now)

    def on_poll(self, now, health):
        down = self.clock.down_for(now)
        return [Condition(self.name, down >= self.config.after_s, self.clock.describe(now),
                          {"down_s": down, "failures": self.clock.failures})]
