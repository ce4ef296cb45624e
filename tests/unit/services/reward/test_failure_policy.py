"""on_failure per component: drop (NaN reward), a stated value, or stop (StopRun)."""

import math

import pytest

from meshrl.config.schema import RewardComponentConfig
from meshrl.services.reward.combine import combine, to_proto
from meshrl.services.reward.failure_policy import StopRun, apply_policies
from meshrl.services.reward.types import ComponentScore, Status, failed, ok


def rows():
    # item 0: both OK; item 1: judge timed out
    return [
        [ComponentScore("math", 1.0, ok(0.5), 0.1), ComponentScore("judge", 2.0, ok(0.75), 0.2)],
        [
            ComponentScore("math", 1.0, ok(1.0), 0.1),
            ComponentScore("judge", 2.0, failed(Status.TIMEOUT, "judge did not answer"), 0.2),
        ],
    ]


def policy(value):
    return RewardComponentConfig(name="judge", kind="external", address="a:1", on_failure=value).on_failure


def test_drop_leaves_the_reward_nan():
    rewards = combine(apply_policies(rows(), {"judge": policy("drop")}))
    assert rewards[0] == pytest.approx(0.5 + 2 * 0.75) and math.isnan(rewards[1])


def test_value_counts_the_failed_score_as_that_value_and_keeps_its_status():
    out = apply_policies(rows(), {"judge": policy({"value": 0.25})})
    assert combine(out).tolist() == pytest.approx([0.5 + 1.5, 1.0 + 2 * 0.25])
    judged = to_proto(out[1][1])
    assert judged.value == 0.25 and judged.status == int(Status.TIMEOUT)
    assert judged.error == "judge did not answer (on_failure: counted as 0.25)"


def test_stop_raises_naming_the_component_and_its_error():
    with pytest.raises(
        StopRun,
        match=r"component 'judge' failed \(TIMEOUT: judge did not answer\) "
        r"and its on_failure is stop",
    ):
        apply_policies(rows(), {"judge": policy("stop")})


def test_non_finite_value_is_a_config_error():
    with pytest.raises(ValueError, match="finite number"):
        policy({"value": float("nan")})
