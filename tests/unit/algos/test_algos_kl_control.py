"""The adaptive KL controller (Ziegler et al. 2019) by hand, and in the train step."""

import pytest
import torch

from meshrl.algos.kl_control import AdaptiveKLController, kl_controller
from meshrl.config.algorithm import AlgorithmConfig


def test_adaptive_controller_moves_beta_by_the_clipped_proportional_error():
    ctrl = kl_controller("adaptive", 0.1, target=6.0, horizon=10000)
    ctrl.update(current_kl=9.0, n_steps=1000)  # e = clip(9/6 − 1) = 0.2 → β·(1 + 0.2·0.1)
    assert ctrl.value == pytest.approx(0.102)
    ctrl.update(current_kl=5.4, n_steps=1000)  # e = −0.1 → β·(1 − 0.01)
    assert ctrl.value == pytest.approx(0.102 * 0.99)
    again = AdaptiveKLController(1.0)
    again.load_state_dict(ctrl.state_dict())
    assert again.value == ctrl.value


def test_fixed_controller_and_bad_settings():
    fixed = kl_controller("fixed", 0.3)
    fixed.update(current_kl=100.0, n_steps=10)
    assert fixed.value == 0.3
    with pytest.raises(ValueError, match="adaptive KL needs kl_coef > 0"):
        kl_controller("adaptive", 0.0)
    with pytest.raises(ValueError, match="kl_ctrl='adaptive' adapts the KL-in-reward"):
        AlgorithmConfig(kl_ctrl="adaptive", kl_coef=0.1, kl_in="loss")


def test_train_step_penalises_with_the_old_coefficient_then_adapts_it():
    from meshrl.services.learner.train.metrics import MetricSums, Timer
    from tests.unit.services.learner.train.helpers import random_batch
    from tests.unit.services.learner.train.test_step import make_step

    batch = random_batch()
    step = make_step(kl_in="reward", kl_coef=0.5, kl_ctrl="adaptive", kl_target=1e-9, kl_horizon=batch.batch_size)
    sums = MetricSums()
    step.prepare(batch, 0, Timer(torch.device("cpu")), sums)
    metrics = sums.reduce(step.dist)
    assert metrics["kl"] > 0 and metrics["kl_coef"] == pytest.approx(0.5)
    # KL ≫ target: e = +0.2, n = horizon → β = 0.5 · 1.2
    assert step.kl_ctrl.value == pytest.approx(0.6)


def test_the_adapted_coefficient_survives_a_checkpoint_round_trip():
    import json

    from meshrl.algos.kl_control import controller_state, restore_controller
    from tests.unit.services.learner.train.test_step import make_step

    before = make_step(kl_in="reward", kl_coef=0.5, kl_ctrl="adaptive")
    before.kl_ctrl.value = 0.73  # as if adapted over some steps
    saved = json.loads(json.dumps(controller_state(before)))  # the loop's snapshot is JSON
    after = make_step(kl_in="reward", kl_coef=0.5, kl_ctrl="adaptive")
    restore_controller(after, saved)
    assert after.kl_ctrl.value == 0.73
    restore_controller(after, {})  # a checkpoint from before the controller: unchanged
    assert after.kl_ctrl.value == 0.73
