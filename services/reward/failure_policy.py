"""What a failed score does to the run, per component (`on_failure` in its config).

- `drop` (default): the score stays failed, the sample's reward is NaN and the learner drops
  the group (combine.py) — what every failure did before this option existed;
- `{value: X}`: the failed score counts as X in the reward; the component still reports its
  ERROR/TIMEOUT status and why, with "(on_failure: counted as X)" added to the error;
- `stop`: the reward replica stops the run: the group is nak'ed (not published, so a resumed
  run scores it again) and the service exits with status 2 (StopRun), which the launcher's
  keeper treats as final, naming the component and its error.

Applied on the run path only (GroupScorer.score_group); direct RewardService calls (the
learner's evaluation, `meshrl eval`) see the raw statuses.
"""

from __future__ import annotations

import math
from dataclasses import replace

from meshrl.config.external_calls import FailurePolicy, FailureValue
from meshrl.service.errors import StartupFailed
from meshrl.services.reward.types import ComponentScore


class StopRun(StartupFailed):
    """A component with `on_failure: stop` failed. A StartupFailed so that the service
    runner prints it as one line and exits 2 (final: the launcher does not restart it)."""

    def __init__(self, message: str):
        super().__init__("reward", RuntimeError(message))


def apply_policy(score: ComponentScore, policy: FailurePolicy) -> ComponentScore:
    if score.score.ok or policy == "drop":
        return score
    if policy == "stop":
        raise StopRun(
            f"component {score.name!r} failed ({score.score.status.name}: "
            f"{score.score.error}) and its on_failure is stop: the run stops. Fix the "
            f"component, then resume the run (its group will be scored again)"
        )
    assert isinstance(policy, FailureValue) and math.isfinite(policy.value)
    kept = replace(
        score.score, value=policy.value, error=f"{score.score.error} (on_failure: counted as {policy.value:g})"
    )
    return replace(score, score=kept)


def apply_policies(rows: list[list[ComponentScore]], policies: dict[str, FailurePolicy]) -> list[list[ComponentScore]]:
    """rows[i] = item i's component scores; components without a policy are `drop`."""
    return [[apply_policy(c, policies.get(c.name, "drop")) for c in row] for row in rows]
