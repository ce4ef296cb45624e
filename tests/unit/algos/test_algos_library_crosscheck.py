"""meshrl's parts beside TRL 1.16.0's and verl 0.9.1's own functions (test-only copies in
library_reference.py), on random inputs over masks with holes (tests/unit/algos/holes.py).

Where a library zeroes padding itself, garbage sits in meshrl's holes (it must not matter);
where it reads every column (TRL's VESPO sums its IS ratios over all T, verl's k1 statistic),
its inputs are the same values with the holes at their neutral value.
"""

import pytest
import torch

from meshrl.algos import get_advantage_estimator, get_policy_loss, kl_estimate
from meshrl.algos.correction.level import weights_at_level
from meshrl.algos.kl_weighting import importance_weighted_kl
from meshrl.algos.loss_masks.off_policy import off_policy
from meshrl.algos.loss_masks.top_entropy import top_entropy
from meshrl.algos.rollout_correction import rejection_mask, rollout_correction
from meshrl.services.learner.train.critic import clipped_value_loss
from tests.unit.algos import library_reference as ref
from tests.unit.algos.holes import MASK

HOLES = MASK == 0


def draw(seed, low, high, shape=MASK.shape):
    generator = torch.Generator().manual_seed(seed)
    return low + (high - low) * torch.rand(shape, generator=generator)


def with_garbage(x, seed):
    """x on the model tokens, random garbage in the holes and padding."""
    return torch.where(MASK > 0, x, draw(seed, -9.0, 0.0))


LOGPROBS, OLD, BEHAVIOUR, REF = (draw(s, -2.5, -0.05) for s in (1, 2, 3, 4))
ADVANTAGES = draw(5, -1.5, 1.5)
PER_ROW_A = torch.tensor([[0.8], [-1.1], [0.3], [-0.4], [1.6]])


@pytest.mark.parametrize("advantages", ["per_row", "per_token"])
@pytest.mark.parametrize("with_weights", [False, True])
def test_vespo_is_trls(advantages, with_weights):
    adv = PER_ROW_A.expand_as(MASK) if advantages == "per_row" else ADVANTAGES
    logprobs = (OLD + draw(6, -0.3, 0.3)).requires_grad_(True)  # near π_old: φ far from 0
    rho = draw(7, 0.5, 1.5) if with_weights else None
    ours = get_policy_loss("vespo")(
        logprobs=with_garbage(logprobs, 8),
        old_logprobs=with_garbage(OLD, 9),
        advantages=adv,
        response_mask=MASK,
        rollout_weights=None if rho is None else rho * MASK,
    )
    trl_rho = None if rho is None else torch.where(MASK > 0, rho, torch.ones_like(rho))  # TRL: 1 on padding
    phi = ref.trl_gamma_weights(
        adv if advantages == "per_token" else PER_ROW_A, (logprobs - OLD).detach(), MASK, trl_rho
    )
    trl_loss = -phi * adv * logprobs * MASK
    torch.testing.assert_close(ours.loss_mat, trl_loss, rtol=1e-5, atol=1e-6)
    assert 0.0 < float(phi.min()) and float(phi.max()) < 10.0  # a live case


def test_off_policy_mask_is_trls():
    logprobs = OLD + draw(10, -1.0, 0.2)  # some sequences drift far from their sampler
    keep = off_policy(
        logprobs=with_garbage(logprobs, 11),
        old_logprobs=with_garbage(OLD, 12),
        behaviour_logprobs=with_garbage(BEHAVIOUR, 13),
        advantages=PER_ROW_A.expand_as(MASK),
        response_mask=MASK,
        threshold=0.3,
    )
    trl = ref.trl_off_policy_mask(PER_ROW_A, logprobs, BEHAVIOUR, MASK, 0.3)
    assert torch.equal(keep.float(), (trl * MASK))
    assert 0 < keep.sum() < MASK.sum()


@pytest.mark.parametrize("quantile", [0.0, 0.2, 0.5, 1.0])
def test_top_entropy_is_trls(quantile):
    entropy = draw(14, 0.0, 4.0)
    ours = top_entropy(
        entropy=torch.where(MASK > 0, entropy, draw(15, 5.0, 9.0)), response_mask=MASK, quantile=quantile
    )
    trl = ref.trl_high_entropy_mask(entropy, MASK, 1 - quantile)
    assert torch.equal(ours, trl)


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_bias_corrected_kl_is_trls_value_and_gradient(level):
    ours_lp = LOGPROBS.clone().requires_grad_(True)
    trl_lp = LOGPROBS.clone().requires_grad_(True)
    kl = kl_estimate(ours_lp, REF, "k3", MASK)
    ours = importance_weighted_kl(kl, ours_lp, OLD, MASK, level)
    trl = ref.trl_bias_corrected_kl(trl_lp, OLD, REF, MASK, level) * MASK
    torch.testing.assert_close(ours, trl, rtol=1e-5, atol=1e-6)
    ours.sum().backward()
    trl.sum().backward()
    torch.testing.assert_close(ours_lp.grad, trl_lp.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss, trl_level", [("vespo", "token"), ("gspo", "sequence"), ("ppo", "token")])
def test_each_loss_weighs_its_kl_at_the_level_trl_runs_it(loss, trl_level):
    """TRL weighs the KL by its coef_1, the ratio at importance_sampling_level: VESPO runs at
    "token" there although its own weight w is a sequence's, GSPO at "sequence"."""
    ours_lp = LOGPROBS.clone().requires_grad_(True)
    trl_lp = LOGPROBS.clone().requires_grad_(True)
    kl = kl_estimate(ours_lp, REF, "k3", MASK)
    ours = importance_weighted_kl(kl, ours_lp, OLD, MASK, get_policy_loss(loss).kl_ratio_level)
    trl = ref.trl_bias_corrected_kl(trl_lp, OLD, REF, MASK, trl_level) * MASK
    torch.testing.assert_close(ours, trl, rtol=1e-5, atol=1e-6)
    ours.sum().backward()
    trl.sum().backward()
    torch.testing.assert_close(ours_lp.grad, trl_lp.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["k1", "k2", "k3", "abs", "mse", "k1+", "k3+", "abs+"])
def test_kl_estimators_are_verls_value_and_gradient(kind):
    ours_lp = LOGPROBS.clone().requires_grad_(True)
    verl_lp = LOGPROBS.clone().requires_grad_(True)
    ours = kl_estimate(ours_lp, REF, kind, MASK)
    verl = ref.verl_kl_penalty(verl_lp, REF, kind) * MASK
    torch.testing.assert_close(ours, verl, rtol=1e-5, atol=1e-6)
    ours.sum().backward()
    verl.sum().backward()
    torch.testing.assert_close(ours_lp.grad, verl_lp.grad, rtol=1e-5, atol=1e-6)


def test_vf_clipfrac_is_verls():
    values, old, returns = draw(16, -2.0, 2.0), draw(17, -2.0, 2.0), draw(18, -2.0, 2.0)
    _, metrics = clipped_value_loss(values, old, returns, MASK, clip=0.5)
    verl = ref.verl_vf_clipfrac(values, returns, old, MASK, 0.5)
    assert metrics["critic/vf_clipfrac"].item() == pytest.approx(verl.item(), abs=1e-6)
    assert metrics["critic/vf_clipfrac"].item() < metrics["critic/vf_out_of_range"].item()


CASES = [
    ("token", {}, "token", {}),
    ("sequence", {}, "sequence", {}),
    ("icepop", {"lower": 0.7}, "token", {"lower": 0.7}),
    ("icepop_sequence", {"lower": 0.7}, "sequence", {"lower": 0.7}),
]


@pytest.mark.parametrize("mode, options, level, verl_options", CASES)
@pytest.mark.parametrize("normalize", [False, True])
def test_importance_weights_are_verls(mode, options, level, verl_options, normalize):
    old = OLD + draw(24, -0.5, 0.5) * (draw(20, 0, 1) < 0.7)  # some tokens agree exactly
    weights, metrics = rollout_correction(
        with_garbage(old, 21), with_garbage(OLD, 22), MASK, mode, 1.4, batch_normalize=normalize, **options
    )
    verl = ref.verl_is_weights(old - OLD, MASK, level, 1.4, batch_normalize=normalize, **verl_options)
    torch.testing.assert_close(weights, verl, rtol=1e-5, atol=1e-6)
    assert metrics["truncated_frac"] + metrics["masked_frac"] > 0  # the cap or the bounds bite


def test_geometric_mean_weight_is_verls_geo_mean():
    weights = draw(23, 0.3, 2.0) * MASK
    ours = weights_at_level(weights, MASK, "sequence")
    verl = ref.verl_geo_mean_seq_is_weights(weights, MASK)
    torch.testing.assert_close(ours[:, 0], verl, rtol=1e-6, atol=1e-7)


REJECT = [
    ("token_k1", 1.3),
    ("token_k1", (0.8, 1.1)),
    ("token_k2", 0.02),
    ("token_k3", 0.02),
    ("seq_sum_k1", 1.5),
    ("seq_sum_k2", 0.05),
    ("seq_sum_k3", 0.05),
    ("seq_mean_k1", 1.1),
    ("seq_mean_k2", 0.01),
    ("seq_mean_k3", 0.01),
    ("seq_max_k2", 0.03),
    ("seq_max_k3", 0.03),
]


@pytest.mark.parametrize("name, threshold", REJECT)
def test_rejection_is_verls(name, threshold):
    old = OLD + draw(24, -0.4, 0.4)
    kept, _ = rejection_mask(with_garbage(old, 25), with_garbage(OLD, 26), MASK, {name: threshold})
    if name.endswith("k1"):
        low, high = (1 / threshold, threshold) if isinstance(threshold, float) else threshold
        verl = ref.verl_rejection_mask(old - OLD, MASK, name, lower=low, upper=high)
    else:
        verl = ref.verl_rejection_mask(old - OLD, MASK, name, upper=threshold)
    assert torch.equal(kept, verl), name
    assert 0 < kept.sum() < MASK.sum()  # a live case: some kept, some rejected


@pytest.mark.parametrize("name", ["optimal_token_baseline", "tir_optimal_token_baseline"])
@pytest.mark.parametrize("with_weights", [False, True])
@pytest.mark.parametrize("empty_row", [False, True])
def test_optimal_token_baselines_are_verls(name, with_weights, empty_row):
    """On the holey batch (two groups), with rollout-IS weights (W scaled by ρ̄²) and with a
    row the model wrote nothing in (verl's TIR leaves it out of its group)."""
    mask = MASK.clone()
    if empty_row:
        mask[3] = 0.0  # group 9 keeps one writing row
    token_rewards = draw(27, -0.5, 0.5) * mask
    old, spq = draw(28, -3.0, -0.05), draw(29, 0.05, 0.9)
    rho = draw(30, 0.5, 1.5) * mask if with_weights else None
    groups = torch.tensor([7, 7, 7, 9, 9])
    ours = get_advantage_estimator(name)(
        rewards=torch.zeros(5),
        response_mask=mask,
        group_ids=groups,
        token_rewards=token_rewards,
        old_logprobs=old,
        sum_pi_squared=spq,
        rollout_weights=rho,
    )
    verl_fn = (
        ref.verl_optimal_token_baseline if name == "optimal_token_baseline" else ref.verl_tir_optimal_token_baseline
    )
    advantages, returns = verl_fn(token_rewards, mask, groups.numpy(), old, spq, rho)
    torch.testing.assert_close(ours.advantages, advantages, rtol=1e-5, atol=1e-6)
    # verl leaves reward-to-go in the holes and padding; meshrl's returns are 0 off the mask
    torch.testing.assert_close(ours.returns, returns * mask, rtol=1e-5, atol=1e-6)


# Two groups of four (TRL's view(-1, num_generations) needs equal groups), random holes.
G4 = torch.tensor([3, 3, 3, 3, 8, 8, 8, 8])
MASK8 = (draw(40, 0.0, 1.0, (8, 6)) > 0.3).float()
MASK8[:, 0] = 1.0


@pytest.mark.parametrize("equal_component", [False, True])
def test_normalize_then_sum_is_trls(equal_component):
    components = draw(41, -1.0, 2.0, (8, 3))
    if equal_component:  # a component that says nothing in group 3: exactly 0 there on both sides
        components[:4, 1] = 0.5
    weights = torch.tensor([1.0, 0.5, 2.0])
    ours = get_advantage_estimator("normalize_then_sum")(
        rewards=components.sum(-1), response_mask=MASK8, group_ids=G4, reward_components=components,
        reward_component_weights=weights, eps=1e-4,
    )  # fmt: skip
    trl = ref.trl_normalize_then_sum(components, weights, num_generations=4)
    torch.testing.assert_close(ours.advantages, trl.unsqueeze(-1) * MASK8, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("clip", [None, (0.0, 1.0)])
@pytest.mark.parametrize("beta", [0.0, 0.05])
def test_rloo_with_clip_and_kl_in_the_reward_is_trls(clip, beta):
    """meshrl's pieces in the step's order: clip_rewards, then the KL-in-reward penalty as
    per-token rewards (kl_in: reward, kl_estimator: k1, on π_old), then `rloo`."""
    from meshrl.algos import clip_rewards

    rewards = torch.tensor([1.4, -0.3, 0.2, 0.9, 0.5, 2.0, -1.0, 0.1])
    old, reference = draw(42, -2.5, -0.05, (8, 6)), draw(43, -2.5, -0.05, (8, 6))
    token_rewards = -beta * kl_estimate(old, reference, "k1", MASK8) * MASK8 if beta else None
    ours = get_advantage_estimator("rloo")(
        rewards=clip_rewards(rewards, clip), response_mask=MASK8, group_ids=G4, token_rewards=token_rewards,
    )  # fmt: skip
    trl = ref.trl_rloo_advantages(rewards, old, reference, MASK8, 4, beta, reward_clip_range=clip)
    torch.testing.assert_close(ours.advantages, trl.unsqueeze(-1) * MASK8, rtol=1e-5, atol=1e-6)
