"""DPOStep trains the preference loss the config names (policy_loss, or a weighted list)."""
import pytest

from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.dpo import DPOStep
from meshrl.services.learner.train.policy import build_policy
from tests.unit.train.helpers import build_tiny_llama
from tests.unit.train.test_dpo import pairs, with_reference


def first_loss(**algo):
    trainer = TrainerConfig(micro_batch_size=3, optim={"lr": 3e-3})
    step = DPOStep(build_policy(build_tiny_llama(), trainer, total_steps=10),
                   AlgorithmConfig(offline=True, beta=0.5, **algo), trainer)
    return step(with_reference(step, pairs()), 0)["loss"], step


def test_ipo_reads_response_lengths_and_a_weighted_list_sums():
    # policy = reference at the first step: every log-ratio is 0, so h̄ = 0 and
    # ipo = (0 − 1/(2β))² = 1, sigmoid = log 2, hinge = 1
    ipo, _ = first_loss(policy_loss="ipo")
    assert ipo == pytest.approx(1.0, abs=1e-5)
    summed, _ = first_loss(policy_loss="dpo", dpo_loss_type=["sigmoid", "hinge"],
                           dpo_loss_weights=[1.0, 0.5])
    assert summed == pytest.approx(0.693147 + 0.5, abs=1e-5)


def test_bco_pair_keeps_its_running_mean_on_the_step():
    _, step = first_loss(policy_loss="bco_pair")
    assert step.loss_state["bco_count"] == 12  # 6 pairs: 6 chosen + 6 rejected rewards
