"""Policy losses gpg and sapo: values and gradients worked by hand."""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import get_policy_loss

MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0]])


def run(name, ratios, advantages, old=0.0, **kwargs):
    old_logprobs = torch.full((1, 4), old)
    logprobs = (old_logprobs + torch.tensor([ratios]).log()).requires_grad_(True)
    result = get_policy_loss(name)(
        logprobs=logprobs,
        old_logprobs=old_logprobs,
        advantages=torch.tensor([advantages]),
        response_mask=MASK,
        **kwargs,
    )
    result.loss_mat.sum().backward()
    return result, logprobs.grad


def test_gpg_is_minus_advantage_times_logprob():
    # old log π = −1; ratios 1, 2, 0.5 → log π = −1, −1 + ln 2, −1 − ln 2; L = −A·log π
    result, grad = run("gpg", [1.0, 2.0, 0.5, 1.0], [2.0, -1.0, 3.0, 5.0], old=-1.0)
    ln2 = math.log(2)
    assert_close(result.loss_mat, torch.tensor([[2.0, -1.0 + ln2, 3.0 * (1 + ln2), 0.0]]))
    assert_close(grad, torch.tensor([[-2.0, 1.0, -3.0, 0.0]]))  # ∂L/∂log π = −A, 0 on padding
    assert result.metrics["clip_ratio/high"].item() == 0.0
    assert result.metrics["ratio/max"].item() == pytest.approx(2.0)


def sig(x):
    return 1 / (1 + math.exp(-x))


def test_sapo_soft_gate_values_and_gradients():
    # τ_pos = 1 (A > 0), τ_neg = 2 (A < 0). L = −σ(τ(ρ−1))·4/τ·A, ∂L/∂log π = −A·ρ·4σ(1−σ)
    result, grad = run("sapo", [1.0, 2.0, 0.5, 1.0], [1.0, 1.0, -1.0, 7.0], tau_pos=1.0, tau_neg=2.0)
    s1, s2 = sig(1.0), sig(2.0 * -0.5)  # token 1: τ=1, ρ=2; token 2: τ=2, ρ=0.5
    assert_close(result.loss_mat, torch.tensor([[-2.0, -4 * s1, 2 * s2, 0.0]]))
    assert_close(grad, torch.tensor([[-1.0, -2.0 * 4 * s1 * (1 - s1), 0.5 * 4 * s2 * (1 - s2), 0.0]]))


def test_sapo_reports_where_the_gate_has_faded():
    # ρ = 4, τ = 1: 4σ(3)(1 − σ(3)) = 0.1807 < ½ → counted as high; ρ = 1.2: 0.9803 → not
    result, _ = run("sapo", [4.0, 1.2, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0])
    assert result.metrics["clip_ratio/high"].item() == pytest.approx(1 / 3)
    assert result.metrics["clip_ratio/low"].item() == 0.0
    with pytest.raises(ValueError, match="temperatures must be > 0"):
        run("sapo", [1.0] * 4, [1.0] * 4, tau_neg=0.0)
