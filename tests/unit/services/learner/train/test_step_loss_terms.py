"""A real TrainStep (tiny Llama, CPU) on multi-turn episodes with the loss's extra terms:
loss masks, the adaptive entropy coefficient, the importance-weighted KL, and VESPO taking
the rollout-correction weights itself."""

import pytest
import torch

from meshrl.algos.kl_control import controller_state, restore_controller
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.metrics import MetricSums, Timer
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from tests.unit.services.learner.train.helpers import build_tiny_llama, weights_of
from tests.unit.services.learner.train.test_step_masked_trajectory import holey_batch, make_step

PLAIN = dict(kl_coef=0.0, entropy_coeff=0.0, rollout_correction={"mode": "none"})


def trained(seed=7, **algo):
    """(weights after one step, its metrics, the step) from the same initial model."""
    model = build_tiny_llama(seed=seed)
    step = make_step(model, **{**PLAIN, **algo})
    metrics = step(holey_batch(), 0)
    return weights_of(model), metrics, step


def same(a, b) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def test_top_entropy_keeps_one_token_a_micro_batch_at_quantile_zero():
    """Four episodes, micro-batches of two: 8 + 6 model tokens; ρ = 0 keeps only each micro-
    batch's highest-entropy token, so the kept fraction is (1 + 1) / 14 and the update differs."""
    masked, metrics, _ = trained(loss_masks={"top_entropy": {"quantile": 0.0}})
    assert metrics["loss_masks/top_entropy/kept"] == pytest.approx(2 / 14)
    full, full_metrics, _ = trained(loss_masks={"top_entropy": {"quantile": 1.0}})
    assert full_metrics["loss_masks/top_entropy/kept"] == 1.0
    plain, _, _ = trained()
    assert same(full, plain) and not same(masked, plain)


def test_off_policy_mask_drops_nothing_on_policy_at_a_positive_threshold():
    """One epoch on the weights that sampled (π_old recomputed, so D = mean(μ − π) is the small
    engine/trainer gap): every sequence is kept and the update is the plain one."""
    kept, metrics, _ = trained(loss_masks={"off_policy": {"threshold": 5.0}})
    assert metrics["loss_masks/off_policy/kept"] == 1.0
    assert same(kept, trained()[0])


def test_adaptive_entropy_above_target_applies_no_bonus_and_lowers_the_coefficient():
    """A random tiny model's entropy (≈ log 64 ≈ 4.2 nats) is far above a 0.2 target: no bonus
    (the same weights as without one) and α falls by δ per optimizer step (two mini-batches)."""
    adaptive = {"entropy_coeff": 0.01, "adaptive_entropy": {"enabled": True, "target": 0.2, "delta": 0.004}}
    weights, metrics, step = trained_with_minis(adaptive)
    assert same(weights, trained_with_minis({})[0])
    assert step.entropy_ctrl.value == pytest.approx(0.002)  # 0.01 − 2 × 0.004
    assert metrics["entropy_coef"] == pytest.approx((0.006 + 0.002) / 2)
    assert 3.0 < step.entropy_ctrl.last_entropy < 4.3
    saved = controller_state(step)
    assert saved["entropy_ctrl"]["value"] == pytest.approx(0.002)
    other = make_step(build_tiny_llama(seed=7), **{**PLAIN, **adaptive})
    restore_controller(other, saved)
    assert other.entropy_ctrl.value == pytest.approx(0.002) and other.entropy_ctrl.applied == 0.0


def trained_with_minis(algo, seed=7):
    """One step with two mini-batches (two optimizer steps)."""
    model = build_tiny_llama(seed=seed)
    trainer = TrainerConfig(
        micro_batch_size=2, mini_batches=2, old_logprobs="recompute", optim={"lr": 1e-2, "max_grad_norm": 1e6}
    )
    settings = dict(advantage_estimator="grpo", policy_loss="ppo", loss_agg_mode="token-mean", **{**PLAIN, **algo})
    step = TrainStep(build_policy(model, trainer, total_steps=4), AlgorithmConfig(**settings), trainer, max_staleness=0)
    metrics = step(holey_batch(), 0)
    return weights_of(model), metrics, step


def test_adaptive_entropy_at_or_below_target_turns_the_bonus_on_in_the_next_update():
    adaptive = {"entropy_coeff": 0.01, "adaptive_entropy": {"enabled": True, "target": 10.0, "delta": 0.004}}
    weights, metrics, step = trained_with_minis(adaptive)
    assert step.entropy_ctrl.value == pytest.approx(0.018)  # 0.01 + 2 × 0.004
    assert metrics["entropy_coef"] == pytest.approx((0.014 + 0.018) / 2)
    assert not same(weights, trained_with_minis({})[0])  # the second update had a bonus of 0.014


def test_bias_corrected_kl_keeps_the_value_and_changes_the_gradient_on_policy():
    """ρ = 1 in value on the weights that sampled, but its gradient adds k3·∇log π."""
    kl = {"kl_coef": 0.5, "kl_in": "loss", "kl_estimator": "k3"}
    plain, plain_metrics, _ = trained(**kl)
    weighted, metrics, _ = trained(use_bias_correction_kl=True, **kl)
    assert metrics["loss"] == pytest.approx(plain_metrics["loss"], rel=1e-6)
    assert not same(plain, weighted)


def test_vespo_takes_the_correction_weights_token_by_token():
    """VESPO folds the weights into its sequence weight: the step hands it each token's own
    (not the geometric mean a sequence-level loss multiplies by)."""
    step = make_step(build_tiny_llama(seed=7), policy_loss="vespo", kl_coef=0.0, entropy_coeff=0.0)
    batch = holey_batch(behaviour_in_holes=-9.0)
    prepared = step.prepare(batch, 0, Timer(torch.device("cpu")), MetricSums())
    old, mask = prepared.old_logprobs, batch.loss_mask > 0
    token = torch.exp(old - batch.behaviour_logprobs).clamp(max=2.0)
    torch.testing.assert_close(prepared.loss_weights[mask], token[mask])
    assert len(set(prepared.loss_weights[0][mask[0]].tolist())) > 1
    metrics = step(batch, 0)
    # φ peaks at w = k/λ: e·(2/3)² = 1.21 where A ≥ 0, 1.5³/e = 1.24 where A < 0
    assert 0 < metrics["vespo/phi_mean"] < 1.25


def test_pf_ppo_redraws_whole_rows_by_reward():
    """max_min on rewards 1, 0, 0.5, 2: only rows 1 (min) and 3 (max) can be drawn; each drawn
    row carries its own loss mask, advantages and old log-probs (computed before the draw)."""
    batch, timer = holey_batch(), Timer(torch.device("cpu"))
    plain = make_step(build_tiny_llama(seed=7), **PLAIN).prepare(batch, 0, timer, MetricSums())
    step = make_step(build_tiny_llama(seed=7), pf_ppo={"enabled": True, "reweight_method": "max_min"}, **PLAIN)
    sums = MetricSums()
    drawn = step.prepare(batch, 0, timer, sums)
    rows = [int(torch.nonzero((plain.response_ids == r).all(-1))[0]) for r in drawn.response_ids]
    assert set(rows) <= {1, 3} and len(rows) == 4
    for name in ("loss_mask", "advantages", "old_logprobs", "rewards"):
        assert torch.equal(getattr(drawn, name), getattr(plain, name)[rows]), name
    assert sums.reduce(step.dist)["pf_ppo/unique_frac"] == len(set(rows)) / 4
    assert step(batch, 0)["grad_norm"] > 0


def test_reward_clip_range_clips_before_the_estimator():
    """reward_clip_range=(0.4, 0.6) turns the rewards into the clipped ones the estimator sees:
    the same advantages as the batch with those rewards written in, and other than unclipped."""
    batch = holey_batch()
    clipped = holey_batch()
    clipped.rewards = batch.rewards.clamp(0.4, 0.6)
    timer = Timer(torch.device("cpu"))
    ours = make_step(build_tiny_llama(seed=7), reward_clip_range=(0.4, 0.6), **PLAIN).prepare(
        batch, 0, timer, MetricSums()
    )
    by_hand = make_step(build_tiny_llama(seed=7), **PLAIN).prepare(clipped, 0, timer, MetricSums())
    unclipped = make_step(build_tiny_llama(seed=7), **PLAIN).prepare(holey_batch(), 0, timer, MetricSums())
    torch.testing.assert_close(ours.advantages, by_hand.advantages)
    assert not torch.allclose(ours.advantages, unclipped.advantages)
