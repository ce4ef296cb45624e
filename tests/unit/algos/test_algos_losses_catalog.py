"""Policy losses GMPO, DPPO (TV, KL), Clip-/KL-Cov, LUSPO, DRO, TRL's δ clip and GSPO's
sequence-ratio cap: values and gradients worked by hand."""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import get_policy_loss, list_policy_losses
from meshrl.config import parts

MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0]])


def run(name, logprobs, old, advantages, mask=MASK, **kwargs):
    """(result, ∂ Σ loss_mat / ∂ log π) for one row of four tokens."""
    logprobs = torch.tensor([logprobs]).requires_grad_(True)
    result = get_policy_loss(name)(
        logprobs=logprobs,
        old_logprobs=torch.tensor([old]),
        advantages=torch.tensor([advantages]),
        response_mask=mask,
        **kwargs,
    )
    result.loss_mat.sum().backward()
    return result, logprobs.grad


def test_trl_delta_clip_caps_the_unclipped_ratio():
    # ρ = (2, 0.5, 3), A = (−1, 1, 1), ε = 0.2, δ = 1.5
    lp = [math.log(2), math.log(0.5), math.log(3), 0.0]
    result, grad = run("ppo", lp, [0.0] * 4, [-1.0, 1.0, 1.0, 0.0], delta=1.5)
    # max(−A·min(ρ, δ), −A·clip(ρ)): (max(1.5, 1.2), max(−0.5, −0.8), max(−1.5, −1.2))
    assert_close(result.loss_mat, torch.tensor([[1.5, -0.5, -1.2, 0.0]]))
    # δ binds on token 0 and the clip on token 2: no gradient; token 1: −A·ρ = −0.5
    assert_close(grad, torch.tensor([[0.0, -0.5, 0.0, 0.0]]))
    plain, plain_grad = run("ppo", lp, [0.0] * 4, [-1.0, 1.0, 1.0, 0.0])
    assert plain.loss_mat[0, 0].item() == pytest.approx(2.0) and plain_grad[0, 0].item() == pytest.approx(2.0)
    with pytest.raises(ValueError, match="delta must be > 1 \\+ epsilon_high"):
        run("ppo", lp, [0.0] * 4, [1.0] * 4, delta=1.1)


def test_gspo_sequence_ratio_cap_stops_the_gradient_like_verl():
    one = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    # one valid token, log-ratio 12 > cap 10, A = −1: the unclipped −A·s binds, s = e^10
    capped, grad = run("gspo", [12.0, 0, 0, 0], [0.0] * 4, [-1.0] * 4, mask=one)
    assert capped.loss_mat[0, 0].item() == pytest.approx(math.exp(10), rel=1e-5)
    assert grad[0, 0].item() == 0.0
    free, grad = run("gspo", [12.0, 0, 0, 0], [0.0] * 4, [-1.0] * 4, mask=one, seq_log_ratio_cap=None)
    assert free.loss_mat[0, 0].item() == pytest.approx(math.exp(12), rel=1e-5)
    assert grad[0, 0].item() == pytest.approx(math.exp(12), rel=1e-5)  # −A·s


def test_luspo_is_gspo_summed_over_each_sequence():
    args = ([0.1, -0.2, 0.05, 0.0], [0.0] * 4, [1.0] * 4)
    luspo, luspo_grad = run("luspo", *args)
    gspo, gspo_grad = run("gspo", *args)
    assert_close(luspo.loss_mat, gspo.loss_mat)
    assert_close(luspo_grad, gspo_grad)
    assert get_policy_loss("luspo").default_agg == "seq-mean-token-sum"
    assert get_policy_loss("luspo").level == "sequence"


def test_gmpo_geometric_mean_with_sign_aware_log_clip():
    lp = [0.1, 0.6, -0.5, 0.0]  # token log-ratios (old = 0), ε = 0.4
    # A > 0: clipped log-ratios (0.1, 0.4, −0.5), mean 0 → r = 1, L = −Ā·r = −1 on each token
    result, grad = run("gmpo", lp, [0.0] * 4, [1.0] * 4)
    assert_close(result.loss_mat, torch.tensor([[-1.0, -1.0, -1.0, 0.0]]))
    # Σ over the 3 tokens of L: ∂/∂l_t = 3·(−Ā·r/3) = −1 where unclipped, 0 at token 1
    assert_close(grad, torch.tensor([[-1.0, 0.0, -1.0, 0.0]]))
    assert result.metrics["clip_ratio/high"].item() == pytest.approx(1 / 3)
    # A < 0: max(l, clamp(l)) = (0.1, 0.6, −0.4), r = e^0.1, L = e^0.1; token 2 clipped
    result, grad = run("gmpo", lp, [0.0] * 4, [-1.0] * 4)
    r = math.exp(0.1)
    assert_close(result.loss_mat, torch.tensor([[r, r, r, 0.0]]))
    assert_close(grad, torch.tensor([[r, r, 0.0, 0.0]]))
    assert result.metrics["clip_ratio/low"].item() == pytest.approx(1 / 3)


def test_dppo_tv_masks_tokens_that_left_the_probability_trust_region():
    # p_old = 0.5; p = (0.8, 0.6, 0.2); A = (1, 1, −1); ε = 0.2 on p − p_old
    lp = [math.log(0.8), math.log(0.6), math.log(0.2), 0.0]
    result, grad = run("dppo_tv", lp, [math.log(0.5)] * 4, [1.0, 1.0, -1.0, 0.0])
    # token 0: +0.3 > 0.2 with A > 0 and token 2: −0.3 < −0.2 with A < 0 are masked;
    # token 1: −A·ρ·log π with ρ = 1.2 (detached), gradient −A·ρ
    assert_close(result.loss_mat, torch.tensor([[0.0, -1.2 * math.log(0.6), 0.0, 0.0]]))
    assert_close(grad, torch.tensor([[0.0, -1.2, 0.0, 0.0]]))
    assert result.metrics["clip_ratio/high"].item() == pytest.approx(1 / 3)
    assert result.metrics["clip_ratio/low"].item() == pytest.approx(1 / 3)


def test_dppo_kl_masks_by_the_binary_kl_in_the_harmful_direction():
    # p_old = 0.5; D(0.5 ‖ 0.8) = D(0.5 ‖ 0.2) = ½ log(0.5/0.8) + ½ log(0.5/0.2) = 0.2231 > 0.2
    lp = [math.log(0.8), math.log(0.9), math.log(0.2), 0.0]
    result, grad = run("dppo_kl", lp, [math.log(0.5)] * 4, [1.0, -1.0, -1.0, 0.0])
    # token 0 (up, A > 0) and token 2 (down, A < 0) masked; token 1 moved up with A < 0:
    # valid whatever D; ρ = 1.8: loss −A·ρ·log π = 1.8·log 0.9, gradient −A·ρ = 1.8
    assert_close(result.loss_mat, torch.tensor([[0.0, 1.8 * math.log(0.9), 0.0, 0.0]]))
    assert_close(grad, torch.tensor([[0.0, 1.8, 0.0, 0.0]]))


# log π = (0, −4, −2), A = (3, 0, ½): means 7/6 and −2, cov = (11/6·2, −7/6·−2, −2/3·0)
COV_LP, COV_A = [0.0, -4.0, -2.0, 0.0], [3.0, 0.0, 0.5, 0.0]


def test_clip_cov_detaches_tokens_with_covariance_in_the_band():
    # cov = (3.67, 2.33, 0): tokens 0 and 1 lie in (1, 5); a share of 1.0 takes both
    result, grad = run("clip_cov", COV_LP, COV_LP, COV_A, clip_cov_ratio=1.0)
    assert_close(result.loss_mat, torch.tensor([[0.0, 0.0, -0.5, 0.0]]))
    assert_close(grad, torch.tensor([[0.0, 0.0, -0.5, 0.0]]))
    assert result.metrics["clip_ratio/dual"].item() == pytest.approx(2 / 3)
    # upper bound 3: only token 1 (2.33) is in the band; token 0 keeps −A·ρ = −3
    result, grad = run("clip_cov", COV_LP, COV_LP, COV_A, clip_cov_ratio=1.0, clip_cov_ub=3.0)
    assert_close(grad, torch.tensor([[-3.0, 0.0, -0.5, 0.0]]))


def test_kl_cov_penalises_the_top_covariance_tokens():
    old = [x - 0.1 for x in COV_LP]  # log ρ = 0.1 on every token
    # share 0.34 of 3 valid tokens → 1 token, the top cov (token 0): −A·ρ + c·|log ρ|, with
    # verl 0.9.1's default coefficient c = ppo_kl_coef = 0.1
    result, grad = run("kl_cov", COV_LP, old, COV_A, kl_cov_ratio=0.34)
    r = math.exp(0.1)
    assert_close(result.loss_mat, torch.tensor([[-3 * r + 0.01, 0.0, -0.5 * r, 0.0]]))
    assert_close(grad, torch.tensor([[-3 * r + 0.1, 0.0, -0.5 * r, 0.0]]))
    _, grad = run("kl_cov", COV_LP, old, COV_A, kl_cov_ratio=0.34, kl_cov_coef=1.0)
    assert_close(grad, torch.tensor([[-3 * r + 1.0, 0.0, -0.5 * r, 0.0]]))


def test_vespo_weights_by_the_gamma_kernel_of_the_sequence_ratio():
    # on-policy: w = 1, φ(1) = e^(λ + 0 − λ) = 1, so L = −A·log π and ∂L/∂log π = −A
    lp = [-0.5, -1.0, -2.0, 0.0]
    result, grad = run("vespo", lp, lp, [1.0, 1.0, 1.0, 0.0])
    assert_close(result.loss_mat, torch.tensor([[0.5, 1.0, 2.0, 0.0]]))
    assert_close(grad, torch.tensor([[-1.0, -1.0, -1.0, 0.0]]))
    # Σ log-ratio = 0.3 + 0.3 + 0.3: w = e^0.9; A > 0: φ = exp(3 + 2·0.9 − 3·e^0.9) = 0.0747
    phi = math.exp(3 + 2 * 0.9 - 3 * math.exp(0.9))
    result, grad = run("vespo", [x + 0.3 for x in lp[:3]] + [0.0], lp, [1.0] * 4)
    assert_close(grad, torch.tensor([[-phi, -phi, -phi, 0.0]]))
    # rollout weights fold in: ρ = (2, 0.5, 1) multiply to 1 (w unchanged); a weight of 0 is
    # log 1e-8, so w = e^0.9·1e-8 and φ = e^(3 + 2·log w − 3w) ≈ 1.1e-14
    _, same = run(
        "vespo", [x + 0.3 for x in lp[:3]] + [0.0], lp, [1.0] * 4, rollout_weights=torch.tensor([[2.0, 0.5, 1.0, 0.0]])
    )
    assert_close(same, grad)
    _, tiny = run(
        "vespo", [x + 0.3 for x in lp[:3]] + [0.0], lp, [1.0] * 4, rollout_weights=torch.tensor([[2.0, 0.0, 1.0, 0.0]])
    )
    log_w = 0.9 + math.log(2.0) + math.log(1e-8)
    assert tiny[0, 0].item() == pytest.approx(-math.exp(3 + 2 * log_w - 3 * math.exp(log_w)), rel=1e-4)
    # A < 0: (k, λ) = (3, 2): φ = exp(2 + 3·0.9 − 2·e^0.9)
    result, grad = run("vespo", [x + 0.3 for x in lp[:3]] + [0.0], lp, [-1.0] * 4)
    phi_neg = math.exp(2 + 3 * 0.9 - 2 * math.exp(0.9))
    assert_close(grad, torch.tensor([[phi_neg, phi_neg, phi_neg, 0.0]]))
    assert result.metrics["vespo/phi_mean"].item() == pytest.approx(phi_neg, rel=1e-5)


def test_dro_is_policy_gradient_with_a_squared_log_ratio_penalty():
    # log π − log π_old = (0.5, −1, 0), A = (1, 2, −1), β = 2: −A·log π + (log π)²
    result, grad = run("dro", [0.5, -1.0, 0.0, 0.0], [0.0] * 4, [1.0, 2.0, -1.0, 0.0], dro_beta=2.0)
    assert_close(result.loss_mat, torch.tensor([[-0.25, 3.0, 0.0, 0.0]]))
    assert_close(grad, torch.tensor([[0.0, -4.0, 1.0, 0.0]]))  # −A + β·(log π − log π_old)


def test_every_loss_honours_or_refuses_the_importance_sampling_level():
    assert {n: get_policy_loss(n).level for n in list_policy_losses()} == {
        n: d.level for n, d in parts.policy_losses().items()
    }
    args = ([0.0] * 4, [0.0] * 4, [1.0] * 4)
    for name in list_policy_losses():
        level = parts.policy_losses()[name].level
        run(name, *args, importance_sampling_level=level)
        other = "sequence" if level == "token" else "token"
        with pytest.raises(ValueError, match=f"per {level}, not per {other}"):
            run(name, *args, importance_sampling_level=other)
