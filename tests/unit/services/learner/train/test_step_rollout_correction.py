"""A real TrainStep (tiny Llama, CPU) applies rollout correction on multi-turn episodes (loss
masks with holes): weights at the level of the loss's ratio, rejected tokens out of the mask.

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
    return [[min(math.exp(o - b), cap) for o, b, m in zip(*row) if m] for row in zip(old, behaviour, mask)]


def run(policy_loss):
    step = make_step(
        build_tiny_llama(seed=6),
        policy_loss=policy_loss,
        kl_coef=0.0,
        entropy_coeff=0.0,
        loss_agg_mode="seq-mean-token-mean",
    )
    batch = holey_batch(behaviour_in_holes=-9.0)
    prepared = step.prepare(batch, 0, Timer(torch.device("cpu")), MetricSums())
    weights = token_weights(prepared.old_logprobs.tolist(), batch.behaviour_logprobs.tolist(), batch.loss_mask.tolist())
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


def test_rejected_tokens_leave_the_loss_mask_for_the_whole_step():
    """reject: {token_k1: u}, u = the median of the model tokens' |d|: the tokens with
    |log π_old − log μ| > log u leave the loss mask the advantages, losses and counts use
    (verl rewrites response_mask); the observation holes stay out; lengths stay the model's."""
    probe = make_step(build_tiny_llama(seed=6), kl_coef=0.0, entropy_coeff=0.0)
    batch = holey_batch(behaviour_in_holes=-9.0)
    old = probe.prepare(batch, 0, Timer(torch.device("cpu")), MetricSums()).old_logprobs
    d = (old - batch.behaviour_logprobs)[batch.loss_mask > 0].abs()
    u = math.exp(d.median().item())
    step = make_step(
        build_tiny_llama(seed=6),
        kl_coef=0.0,
        entropy_coeff=0.0,
        rollout_correction={"mode": "token", "cap": 2.0, "reject": {"token_k1": u}},
    )
    sums = MetricSums()
    prepared = step.prepare(batch, 0, Timer(torch.device("cpu")), sums)
    hand = batch.loss_mask * ((old - batch.behaviour_logprobs).abs() <= math.log(u))
    assert torch.equal(prepared.loss_mask, hand)
    assert 0 < hand.sum() < batch.loss_mask.sum()
    assert (prepared.advantages[hand == 0] == 0).all() and (prepared.loss_weights[hand == 0] == 0).all()
    rejected = 1 - hand.sum().item() / batch.loss_mask.sum().item()
    assert sums.reduce(step.dist)["rollout_correction/rejected_frac"] == pytest.approx(rejected)
    metrics = step(batch, 0)
    assert metrics["completions/mean_length"] == 3.5  # the model wrote 5 + 3 + 3 + 3 tokens


def test_rejection_and_batch_normalisation_make_the_old_log_prob_pass_run():
    for rc in ({"reject": {"seq_mean_k3": 0.1}}, {"batch_normalize": True}):
        step = make_step(build_tiny_llama(seed=6), kl_coef=0.0, old_logprobs="auto", rollout_correction=rc)
        assert step.old_source == "recompute"
    assert make_step(build_tiny_llama(seed=6), kl_coef=0.0, old_logprobs="auto").old_source == "current"
