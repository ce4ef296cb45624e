"""`dropped_in_a_row`: `max_groups` groups in a row were dropped, none kept, for reasons that do
not pass by themselves.

A run whose every group is dropped — an environment that fails every episode, a prompt with
no room for a turn, a rollout publishing malformed groups — would republish prompts forever
and never finish a step. `DropStreak` keeps the one fact (how many in a row, by reason, one
detail each) for both this alert rule and the learner, which checkpoints and stops with the
streak's message (services/learner/gather.py). Fed by `AlertEngine.progress("kept")` and
`progress("dropped:<reason>")`.

Not counted: the mesh's normal flow (`stale`, `orphaned`, `no_signal`: bounded by the
in-flight bound and dynamic sampling) and outages, which have their own clocks and limits
(`failed_reward`: reward_outage; `env_unavailable`, `env_deadline_exceeded`: env_outage).
"""

from __future__ import annotations

from collections import Counter

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule
from meshrl.alerts.rules.drop_fixes import how_to_fix
from meshrl.alerts.rules.env_outage import OUTAGE_CODES
from meshrl.alerts.types import Condition

NOT_COUNTED = frozenset({"stale", "orphaned", "no_signal", "failed_reward"}) | OUTAGE_CODES
DROPPED = "dropped:"  # the progress kind's prefix


class DropStreak:
    """Groups dropped since the last kept one, by reason, with the first detail of each."""

    def __init__(self) -> None:
        self.reasons: Counter = Counter()
        self.details: dict[str, str] = {}

    @property
    def length(self) -> int:
        return sum(self.reasons.values())

    def kept(self) -> None:
        self.reasons.clear()
        self.details.clear()

    def dropped(self, reason: str, detail: str = "") -> None:
        if reason in NOT_COUNTED:
            return
        self.reasons[reason] += 1
        if detail:
            self.details.setdefault(reason, detail)

    def describe(self, limit: int, top: int = 3) -> str:
        """What happened, the top reasons (with an example and how to fix each), the limit."""
        counts = ", ".join(f"{reason} ×{n}" for reason, n in self.reasons.most_common())
        fixes = "; ".join(self._fix(reason) for reason, _ in self.reasons.most_common(top))
        return (
            f"{self.length} groups in a row were dropped and none trained ({counts}); "
            f"{fixes} (the limit: alerts.dropped_in_a_row.max_groups={limit}; each drop is in groups.jsonl)"
        )

    def _fix(self, reason: str) -> str:
        example = f" (e.g. {self.details[reason][:240]})" if reason in self.details else ""
        return f"{reason}{example}: {how_to_fix(reason)}"


@register_rule("dropped_in_a_row")
class DroppedInARow(Rule):
    def __init__(self, config):
        super().__init__(config)
        self.streak = DropStreak()

    def on_progress(self, kind, now):
        if kind == "kept":
            self.streak.kept()
        elif kind.startswith(DROPPED):
            self.streak.dropped(kind[len(DROPPED) :])

    def on_poll(self, now, health):
        limit = self.config.max_groups
        return [
            Condition(
                self.name,
                self.streak.length >= limit,
                self.streak.describe(limit),
                {"dropped": self.streak.length, "max_groups": limit},
            )
        ]
