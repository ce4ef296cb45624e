"""How the learner splits a step's time: busy stages as interval unions, mesh overhead share."""

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.services.learner.step_metrics import component_metrics, covered, overhead_share, stage_times


def test_covered_is_the_union_of_intervals():
    assert covered([]) == 0.0
    assert covered([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]) == 4.0  # [0,3] ∪ [5,6]
    assert covered([(0.0, 10.0), (2.0, 3.0)]) == 10.0  # nested


def test_stage_times_mean_and_busy():
    g1 = common_pb2.Group(
        timings=[
            common_pb2.StageTiming(stage="generate", start_unix=0, end_unix=4),
            common_pb2.StageTiming(stage="reward", start_unix=4, end_unix=5),
        ]
    )
    g2 = common_pb2.Group(
        timings=[
            common_pb2.StageTiming(stage="generate", start_unix=1, end_unix=3),
            common_pb2.StageTiming(stage="reward", start_unix=5, end_unix=7),
        ]
    )
    t = stage_times([g1, g2])
    assert t["time/generate"] == 3.0 and t["time/generate_busy"] == 4.0  # mean of 4 and 2; [0,4]
    assert t["time/reward"] == 1.5 and t["time/reward_busy"] == 3.0  # [4,7]
    assert t["time/services_busy"] == 7.0  # [0,7]


def test_overhead_share_counts_everything_but_compute():
    # 10 s step: 6 s training, 3 s of services busy → 1 s (10%) is the mesh's own.
    assert overhead_share({"time/step": 10.0, "time/train": 6.0, "time/services_busy": 3.0}) == pytest.approx(0.1)
    assert overhead_share({"time/step": 0.0}) == 0.0


def test_component_metrics_average_only_what_was_scored():
    ok, err = common_pb2.SCORE_STATUS_OK, common_pb2.SCORE_STATUS_TIMEOUT
    samples = [
        common_pb2.Sample(
            reward_components=[
                common_pb2.RewardComponent(name="math", value=1.0, status=ok),
                common_pb2.RewardComponent(name="fmt", value=0.5, status=ok),
            ]
        ),
        common_pb2.Sample(
            reward_components=[
                common_pb2.RewardComponent(name="math", value=0.0, status=err),
                common_pb2.RewardComponent(name="fmt", value=0.0, status=ok),
            ]
        ),
    ]
    assert component_metrics(samples) == {
        "reward/math": 1.0,
        "reward/fmt": 0.25,
        "reward/math_failed": 1.0,
        "reward/fmt_failed": 0.0,
    }


def test_each_step_is_one_log_line_with_its_reward_times_and_version():
    from meshrl.services.learner.step_metrics import step_line

    metrics = {"reward": 0.625, "time/step": 41.23, "time/train": 33.08, "time/wait_for_batch": 8.0}
    assert step_line(2, 10, {**metrics, "weights_version": 3.0}) == (
        "step 3/10: reward 0.625, 41.2 s (train 33.1 s, waited 8.0 s), policy v3"
    )
    assert step_line(9, 10, {"weights_version": 10.0, "eval/accuracy": 0.90625}) == (
        "step 10/10: reward -, - (train -, waited -), policy v10, held-out accuracy 0.906"
    )
