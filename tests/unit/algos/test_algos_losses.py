"""Policy losses ppo, gspo, cispo: values, gradients and metrics, worked by hand."""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import aggregate_loss, get_policy_loss

# PPO fixture: old log-probs 0, so ratio ρ = exp(logprobs). ε = 0.2 → clip to [0.8, 1.2].
RATIOS = torch.tensor([[1.5, 0.5, 1.1, 1.0], [0.5, 1.5, 4.0, 1.0]])
ADVANTAGES = torch.tensor([[1.0, 1.0, -1.0, -2.0], [-1.0, -1.0, -1.0, 5.0]])
MASK = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]])  # 7 valid tokens


def ppo(**kwargs):
    logprobs = RATIOS.log().requires_grad_(True)
    result = get_policy_loss("ppo")(
        logprobs=logprobs, old_logprobs=torch.zeros(2, 4), advantages=ADVANTAGES, response_mask=MASK, **kwargs
    )
    result.loss_mat.sum().backward()
    return result, logprobs.grad


def test_ppo_clipped_surrogate_values_and_gradients():
    # L = max(−Aρ, −A·clip(ρ, 0.8, 1.2)):
    # row 0: ρ=1.5,A=1: max(−1.5, −1.2) = −1.2 (high clip, grad 0); ρ=0.5,A=1: max(−0.5, −0.8)
    #        = −0.5; ρ=1.1,A=−1: 1.1; ρ=1,A=−2: 2
    # row 1: ρ=0.5,A=−1: max(0.5, 0.8) = 0.8 (low clip, grad 0); ρ=1.5,A=−1: max(1.5, 1.2) = 1.5;
    #        ρ=4,A=−1: 4; padding: 0
    result, grad = ppo()
    assert_close(result.loss_mat, torch.tensor([[-1.2, -0.5, 1.1, 2.0], [0.8, 1.5, 4.0, 0.0]]))
    # ∂(−Aρ)/∂log π = −Aρ where unclipped, 0 where clipped
    assert_close(grad, torch.tensor([[0.0, -0.5, 1.1, 2.0], [0.0, 1.5, 4.0, 0.0]]))


def test_ppo_metrics():
    result, _ = ppo()
    m = {k: v.item() for k, v in result.metrics.items()}
    assert m["clip_ratio/low"] == pytest.approx(1 / 7)  # row 1 t0 (ρ < 0.8, A < 0)
    assert m["clip_ratio/high"] == pytest.approx(1 / 7)  # row 0 t0 (ρ > 1.2, A > 0)
    assert m["clip_ratio/dual"] == 0.0
    assert m["ratio/min"] == pytest.approx(0.5) and m["ratio/max"] == pytest.approx(4.0)
    # (1.5 + 0.5 + 1.1 + 1 + 0.5 + 1.5 + 4) / 7 = 10.1 / 7
    assert m["ratio/mean"] == pytest.approx(10.1 / 7)
    # k3 per token ρ − 1 − ln ρ: 1.5 → 0.094535, 0.5 → 0.193147, 1.1 → 0.004690, 1 → 0,
    # 0.5 → 0.193147, 1.5 → 0.094535, 4 → 1.613706; sum 2.193760 / 7 = 0.313394
    assert m["approx_kl"] == pytest.approx(0.313394, abs=1e-5)
    assert all(not v.requires_grad for v in result.metrics.values())


def test_ppo_dual_clip_caps_negative_advantages_only():
    # c = 3: where A < 0, L = min(L, −A·3) = min(L, 3): row 1 t2 (ρ=4): min(4, 3) = 3, grad 0.
    # row 0 t3 (A=−2, ρ=1): L = 2 < 6, unchanged. A > 0 tokens are never dual-clipped.
    result, grad = ppo(dual_clip_c=3.0)
    assert_close(result.loss_mat, torch.tensor([[-1.2, -0.5, 1.1, 2.0], [0.8, 1.5, 3.0, 0.0]]))
    assert grad[1, 2].item() == 0.0 and grad[1, 1].item() == pytest.approx(1.5)
    assert result.metrics["clip_ratio/dual"].item() == pytest.approx(1 / 7)
    with pytest.raises(ValueError, match="dual_clip_c must be > 1"):
        ppo(dual_clip_c=0.5)


def test_ppo_clip_higher():
    # ε_low = 0.2, ε_high = 0.28: ρ=1.5, A=1 → −1.28 (instead of −1.2); ρ=1.25, A=1 → −1.25
    # (inside the widened range, while the symmetric clip gives −1.2)
    logprobs = torch.tensor([[1.5, 1.25, 0.7]]).log()
    args = dict(
        logprobs=logprobs,
        old_logprobs=torch.zeros(1, 3),
        advantages=torch.tensor([[1.0, 1.0, -1.0]]),
        response_mask=torch.ones(1, 3),
    )
    decoupled = get_policy_loss("ppo")(**args, epsilon=0.2, epsilon_high=0.28)
    # ρ=0.7, A=−1: max(0.7, 0.8) = 0.8 (low bound still 0.8)
    assert_close(decoupled.loss_mat, torch.tensor([[-1.28, -1.25, 0.8]]))
    symmetric = get_policy_loss("ppo")(**args, epsilon=0.2)
    assert_close(symmetric.loss_mat, torch.tensor([[-1.2, -1.2, 0.8]]))
    assert decoupled.metrics["clip_ratio/high"].item() == pytest.approx(1 / 3)
    assert symmetric.metrics["clip_ratio/high"].item() == pytest.approx(2 / 3)


def gspo(logprobs, old_logprobs, advantages, mask, **kwargs):
    logprobs = logprobs.clone().requires_grad_(True)
    result = get_policy_loss("gspo")(
        logprobs=logprobs, old_logprobs=old_logprobs, advantages=advantages, response_mask=mask, **kwargs
    )
    return result, logprobs


def test_gspo_gradient_reaches_every_token():
    # token log-ratios (0.001, −0.001, 0): sequence ratio s = exp(mean) = exp(0) = 1, A = 2.
    # Every token's loss is −A·s = −2 (the sequence's value, not the token's own ratio), and
    # ∂L_t/∂log π_t = −A·s = −2; seq-mean-token-mean over one sequence of 3 tokens → −2/3 each.
    old = torch.tensor([[-1.0, -2.0, -0.5]])
    logprobs = old + torch.tensor([[0.001, -0.001, 0.0]])
    result, leaf = gspo(logprobs, old, torch.full((1, 3), 2.0), torch.ones(1, 3))
    assert_close(result.loss_mat, torch.full((1, 3), -2.0))
    aggregate_loss(result.loss_mat, torch.ones(1, 3), "seq-mean-token-mean").backward()
    assert_close(leaf.grad, torch.full((1, 3), -2.0 / 3))
    assert result.metrics["ratio/mean"].item() == pytest.approx(1.0)


def test_gspo_sequence_ratio_and_its_clip():
    # ε = 0.2, ε_high = None (symmetric; overriding GSPO's small defaults) → clip to [0.8, 1.2].
    # row 0: token log-ratios (0.3, 0.1, 0.2) → mean 0.2 → s = e^0.2 = 1.221403 > 1.2, A = +1:
    #        L = max(−1.221403, −1.2) = −1.2 on each token, gradient 0, high clip on 3 tokens
    # row 1: (0, 0.02, pad 5) → mean over 2 valid = 0.01 → s = e^0.01 = 1.010050, A = −1:
    #        L = 1.010050 per valid token, ∂L/∂log π_t = −A·s = 1.010050
    old = torch.zeros(2, 3)
    logprobs = torch.tensor([[0.3, 0.1, 0.2], [0.0, 0.02, 5.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    advantages = torch.tensor([[1.0, 1.0, 1.0], [-1.0, -1.0, 0.0]])
    result, leaf = gspo(logprobs, old, advantages, mask, epsilon=0.2, epsilon_high=None)
    assert_close(result.loss_mat, torch.tensor([[-1.2, -1.2, -1.2], [1.010050, 1.010050, 0.0]]))
    result.loss_mat.sum().backward()
    assert_close(leaf.grad, torch.tensor([[0.0, 0.0, 0.0], [1.010050, 1.010050, 0.0]]))
    assert result.metrics["clip_ratio/high"].item() == pytest.approx(3 / 5)
    assert result.metrics["ratio/max"].item() == pytest.approx(math.exp(0.2), rel=1e-5)


def test_gspo_default_clip_range_is_its_own():
    # s = e^0.001 = 1.0010005 > 1 + 4e-4 with A = 1 → clipped at 1.0004 (GSPO's ε_high)
    result, _ = gspo(torch.full((1, 2), 0.001), torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2))
    assert_close(result.loss_mat, torch.full((1, 2), -1.0004))
    assert get_policy_loss("gspo").default_agg == "seq-mean-token-mean"


def test_cispo_clips_the_weight_but_keeps_every_gradient():
    # ε_low = 0.2, ε_high = 0.28; ρ = (1.5, 0.5, 1.0); ŵ = clip(ρ, 0.8, 1.28) = (1.28, 0.8, 1)
    # log π = (−0.5, −1, −2), A = (1, −1, 2); L = −ŵ·A·log π:
    #   t0: −1.28·1·(−0.5) = 0.64; t1: −0.8·(−1)·(−1) = −0.8; t2: −1·2·(−2) = 4
    # ∂L/∂log π = −ŵ·A = (−1.28, 0.8, −2): non-zero even where the weight was clipped
    logprobs = torch.tensor([[-0.5, -1.0, -2.0]], requires_grad=True)
    old = logprobs.detach() - torch.tensor([[1.5, 0.5, 1.0]]).log()
    result = get_policy_loss("cispo")(
        logprobs=logprobs,
        old_logprobs=old,
        advantages=torch.tensor([[1.0, -1.0, 2.0]]),
        response_mask=torch.ones(1, 3),
        epsilon=0.2,
        epsilon_high=0.28,
    )
    assert_close(result.loss_mat, torch.tensor([[0.64, -0.8, 4.0]]))
    result.loss_mat.sum().backward()
    assert_close(logprobs.grad, torch.tensor([[-1.28, 0.8, -2.0]]))
    assert result.metrics["clip_ratio/low"].item() == pytest.approx(1 / 3)
    assert result.metrics["clip_ratio/high"].item() == pytest.approx(1 / 3)
    assert result.metrics["clip_ratio/dual"].item() == 0.0


def test_cispo_preset_epsilon_one_disables_the_lower_bound():
    # ε_low = 1 → lower bound 0: ρ = 0.5 keeps weight 0.5: L = −0.5·1·(−1) = 0.5
    logprobs = torch.tensor([[-1.0]])
    result = get_policy_loss("cispo")(
        logprobs=logprobs,
        old_logprobs=logprobs - math.log(0.5),
        advantages=torch.ones(1, 1),
        response_mask=torch.ones(1, 1),
        epsilon=1.0,
        epsilon_high=0.28,
    )
    assert_close(result.loss_mat, torch.tensor([[0.5]]))


@pytest.mark.parametrize("name", ["ppo", "gspo", "cispo"])
def test_losses_are_zero_on_padding_and_finite_with_extreme_ratios(name):
    # padding holds garbage log-probs; a valid token has log-ratio 80 (exp would overflow)
    logprobs = torch.tensor([[80.0, -1.0, 30.0]])
    result = get_policy_loss(name)(
        logprobs=logprobs,
        old_logprobs=torch.zeros(1, 3),
        advantages=torch.tensor([[-1.0, 1.0, 1.0]]),
        response_mask=torch.tensor([[1.0, 1.0, 0.0]]),
    )
    assert result.loss_mat[0, 2].item() == 0.0
    assert torch.isfinite(result.loss_mat).all()
    assert all(torch.isfinite(v) for v in result.metrics.values())
    assert set(result.metrics) >= {
        "clip_ratio/low",
        "clip_ratio/high",
        "clip_ratio/dual",
        "approx_kl",
        "ratio/min",
        "ratio/mean",
        "ratio/max",
    }


def test_single_token_response():
    # one valid token, ρ = 1, A = 3 → L = −3
    result = get_policy_loss("ppo")(
        logprobs=torch.tensor([[-1.0, 0.0]]),
        old_logprobs=torch.tensor([[-1.0, 0.0]]),
        advantages=torch.tensor([[3.0, 3.0]]),
        response_mask=torch.tensor([[1.0, 0.0]]),
    )
    assert_close(result.loss_mat, torch.tensor([[-3.0, 0.0]]))
    assert aggregate_loss(result.loss_mat, torch.tensor([[1.0, 0.0]]), "token-mean").item() == -3.0
