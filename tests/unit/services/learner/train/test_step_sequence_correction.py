"""A real TrainStep (tiny Llama, CPU) applies rollout correction at the level of the loss's
ratio, on multi-turn episodes (loss masks with holes).

GMPO with token-level truncated IS: each row's loss is scaled by ONE weight, the geometric
mean over its model tokens of w_t = min(π_old/μ, cap) (verl's `geo_mean`). Multiplying token
by token, as a token-level loss does, would scale it by their arithmetic mean instead.
"""
import math

import pytest
import torch

from meshrl.services.learner.train.metrics import MetricSums, Timer
from tests.unit.services.learner.train.helpers import build_tiny_llama
from tests.unit.services.learner.train.test_step_masked_trajectory import grpo_advantages, holey_batch, make_step


def token_weights(old, behaviour, mask, cap=2.0):
    """Per row: the truncated-IS weight of each model token, by hand."""
    return [[min(math.exp(o - b), cap) for o, b, m in zip(*row) if m]
            for row in zip(old, behaviour, mask)]


def run(policy_loss):
    step = make_step(build_tiny_llama(seed=6), policy_loss=policy_loss, kl_coef=0.0,
                     entropy_coeff=0.0, loss_agg_mode="seq-mean-token-mean")
    batch = holey_batch(behaviour_in_holes=-9.0)
    prepared = step.prepare(batch, 0, Timer(torch.device("cpu")), MetricSums())
    weights = token_weights(prepared.old_logprobs.tolist(), batch.behaviour_logprobs.tolist(),
                            batch.loss_mask.tolist())
    return step, batch, prepared, weights


def test_gmpo_rows_get_the_geometric_mean_weight_and_the_loss_uses_it():
    step, batch, prepared, weights = run("gmpo")
    geometric = [math.exp(sum(map(math.log, row)) / len(row)) for row in weights]
    arithmetic = [sum(row) / len(row) for row in weights]
    mask = batch.loss_mask > 0
    for r, g in enumerate(geometric):
        assert prepared.loss_weights[r][mask[r]].tolist() == pytest.approx([g] * len(weights[r]), rel=1e-5)
    assert (prepared.loss_weights[~mask] == 0).all()
    assert max(abs(g - a) for g, a in zip(geometric, arithmetic)) > 1e-3  # the fix is visible
    # one epoch on the weights that made π_old: r_i = 1, so L_i = −Ā_i and the step's
    # seq-mean-token-mean pg_loss is mean_i(−w̄_i·A_i)
    metrics = step(batch, 0)
    hand = sum(-g * a for g, a in zip(geometric, grpo_advantages())) / 4
    assert metrics["pg_loss"] == pytest.approx(hand, rel=1e-5)


def test_a_token_level_loss_keeps_each_tokens_weight():
    _, batch, prepared, weights = run("ppo")
    mask = batch.loss_mask > 0
    for r, row in enumerate(weights):
        assert prepared.loss_weights[r][mask[r]].tolist() == pytest.approx(row, rel=1e-5)
