"""`sapo`: Soft Adaptive Policy Optimization (Gao et al. 2025, Qwen team, arXiv:2511.20347).

A smooth, temperature-controlled gate replaces PPO's hard clip, so tokens far off-policy
are down-weighted gradually instead of losing their gradient at once:

    ρ = π/π_old,   f_τ(ρ) = σ(τ·(ρ − 1)) · 4/τ,   L = −f_τ(ρ) · A

τ = `tau_pos` where A > 0 and `tau_neg` where A < 0 (negative advantages spread their
gradient over many tokens and are less stable, hence the larger τ_neg, i.e. faster decay).
∂L/∂log π = −A · ρ · 4σ(1 − σ): exactly −A at ρ = 1 (the on-policy gradient), → 0 as ρ
leaves 1. Defaults τ_pos = 1.0, τ_neg = 1.05 (the paper's). `epsilon`/`dual_clip_c` do not
apply; `clip_ratio/*` report where the gate has fallen below half its peak weight
(4σ(1 − σ) < ½). Default aggregation `token-mean`.
"""

from __future__ import annotations

import torch

from meshrl.algos.losses.common import LOG_RATIO_BOUND, loss_metrics
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult


@register_policy_loss(
    "sapo", default_agg="token-mean", paper=("Gao et al. 2025, Soft Adaptive Policy Optimization, arXiv:2511.20347")
)
def sapo(*, logprobs, old_logprobs, advantages, response_mask, tau_pos=1.0, tau_neg=1.05, **_) -> PolicyLossResult:
    """−σ(τ(ρ − 1))·4/τ·A with τ by the sign of A (module docstring)."""
    if not (tau_pos > 0 and tau_neg > 0):
        raise ValueError(f"sapo temperatures must be > 0: tau_pos={tau_pos}, tau_neg={tau_neg}")
    log_ratio = (logprobs - old_logprobs.detach()).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    ratio = log_ratio.exp()
    tau = torch.where(advantages > 0, torch.full_like(ratio, tau_pos), torch.full_like(ratio, tau_neg))
    gate = torch.sigmoid(tau * (ratio - 1.0))
    loss = -gate * (4.0 / tau) * advantages
    faded = (4.0 * gate * (1.0 - gate)).detach() < 0.5
    r = ratio.detach()
    metrics = loss_metrics(
        ratio=r,
        log_ratio=log_ratio,
        mask=response_mask,
        low=faded & (r < 1),
        high=faded & (r > 1),
        dual=torch.zeros_like(faded),
    )
    return PolicyLossResult(loss_mat=loss * response_mask, metrics=metrics)
