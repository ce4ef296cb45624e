"""`reward_outage`: every group that arrived for `after_s` seconds failed scoring.

A reward component that is down (an external service gone, a verifier crashing) makes every
group arrive with a failed score. `OutageClock` keeps that one fact — since when has nothing
scored — for both this alert rule and the learner, which throttles its prompts and, after
`max_wait_s`, stops (services/learner/gather.py). Fed by `AlertEngine.progress("scored")` and
`progress("score_failed")`; groups dropped for other reasons (stale) say nothing either way.
The same clock, with its own words, times an environment outage (`env_outage.py`).
"""

from __future__ import annotations

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule
from meshrl.alerts.types import Condition


class OutageClock:
    """Since when every arriving group failed (None: the last one went through).

    `failing` says what each group did ("failed scoring"), `check` where to look; the last
    failure's detail (a component's error, a status message) goes into `describe`."""

    def __init__(
        self, failing: str = "failed scoring", check: str = "check the reward service's log and its components"
    ) -> None:
        self.failing, self.check = failing, check
        self.failing_since: float | None = None
        self.failures = 0
        self.last_detail = ""

    def scored(self) -> None:
        self.failing_since, self.failures, self.last_detail = None, 0, ""

    def failed(self, now: float, detail: str = "") -> None:
        if self.failing_since is None:
            self.failing_since = now
        self.failures += 1
        self.last_detail = detail or self.last_detail

    def down_for(self, now: float) -> float:
        return 0.0 if self.failing_since is None else now - self.failing_since

    def describe(self, now: float) -> str:
        last = f" (the last: {self.last_detail[:300]})" if self.last_detail else ""
        return f"every group {self.failing} for {self.down_for(now):.0f} s ({self.failures} groups){last}; {self.check}"


@register_rule("reward_outage")
class RewardOutage(Rule):
    failed_kind, ok_kind = "score_failed", "scored"

    def __init__(self, config):
        super().__init__(config)
        self.clock = self.make_clock()

    @staticmethod
    def make_clock() -> OutageClock:
        return OutageClock()

    def on_progress(self, kind, now):
        if kind == self.ok_kind:
            self.clock.scored()
        elif kind == self.failed_kind:
            self.clock.failed(now)

    def on_poll(self, now, health):
        down = self.clock.down_for(now)
        return [
            Condition(
                self.name,
                down >= self.config.after_s,
                self.clock.describe(now),
                {"down_s": down, "failures": self.clock.failures},
            )
        ]
