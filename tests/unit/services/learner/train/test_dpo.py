"""DPOStep lowers the DPO loss on a fixed set of preference pairs; split-invariant."""

import math

import numpy as np
import pytest
import torch

from meshrl.algos.batch import PreferenceBatch
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.dpo import DPOStep, policy_sequence_logprobs
from meshrl.services.learner.train.policy import build_policy
from tests.unit.services.learner.train.helpers import build_tiny_llama, weights_of


def pairs() -> PreferenceBatch:
    rng = np.random.default_rng(1)
    prompts = [rng.integers(1, 64, rng.integers(2, 5)) for _ in range(6)]
    chosen = [np.full(rng.integers(2, 5), 7) for _ in range(6)]  # "prefer token 7"
    rejected = [rng.integers(20, 64, rng.integers(2, 5)) for _ in range(6)]
    return PreferenceBatch.from_sequences(prompts, chosen, rejected, pad_id=0)


def make(micro_batch_size=2):
    trainer = TrainerConfig(micro_batch_size=micro_batch_size, optim={"lr": 3e-3})
    policy = build_policy(build_tiny_llama(), trainer, total_steps=100)
    return DPOStep(policy, AlgorithmConfig(name="dpo", policy_loss="dpo", offline=True, beta=0.5), trainer)


def with_reference(step: DPOStep, batch: PreferenceBatch) -> PreferenceBatch:
    """Reference = the starting policy (its summed log-probs), as the reference service gives."""
    with torch.no_grad():
        chosen, rejected = policy_sequence_logprobs(step.policy, batch)
    batch.ref_chosen_logps, batch.ref_rejected_logps = chosen, rejected
    return batch


def test_dpo_loss_falls_over_a_few_steps():
    step = make()
    batch = with_reference(step, pairs())
    losses = [step(batch, i)["loss"] for i in range(6)]
    assert losses[0] == pytest.approx(math.log(2.0), abs=1e-5)  # policy == reference: -log σ(0)
    assert losses[-1] < losses[0] - 0.1, losses


def test_dpo_update_independent_of_micro_batch_size():
    results = []
    for size in (1, 3, 6):
        step = make(size)
        metrics = step(with_reference(step, pairs()), 0)
        results.append((metrics["loss"], weights_of(step.policy.model)))
    for loss, weights in results[1:]:
        assert loss == pytest.approx(results[0][0], abs=1e-6)
        for name, tensor in weights.items():
            torch.testing.assert_close(tensor, results[0][1][name], atol=1e-5, rtol=0)


def test_dpo_without_reference_sums_is_an_error():
    with pytest.raises(ValueError, match="ref_chosen_logps"):
        make()(pairs(), 0)
