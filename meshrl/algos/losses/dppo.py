"""`dppo_tv` / `dppo_kl`: Divergence Proximal Policy Optimization (binary approximations).

PPO's ratio clip is a one-sample estimate of how far the policy moved; DPPO masks a token's
update by a direct estimate of the divergence between π_old and π on the sampled token's
Bernoulli (token vs. rest of the vocabulary), p = π(y_t), p_old = π_old(y_t):

- `dppo_tv` (total variation): moved too far up when p − p_old > ε_high (A > 0), down when
  p − p_old < −ε_low (A < 0)
- `dppo_kl` (binary KL): D = p_old·log(p_old/p) + (1 − p_old)·log((1 − p_old)/(1 − p)), too far
  when D > ε_high and p > p_old (A > 0), D > ε_low and p < p_old (A < 0)

    L = −A · sg[min(ρ, C)] · log π · valid,   ρ = π/π_old

so ∂L/∂log π = −A·min(ρ, C) on valid tokens and 0 where the trust region is left in the
harmful direction. Here `epsilon`/`epsilon_high` are the divergence thresholds (not ratio
clip ranges); `dppo_ratio_cap` C plays verl's `clip_ratio_c`. Default 20, the paper's advice
(§5.4: a large cap, since truncation biases the update) and the fallback in verl 0.9.1's
`compute_policy_loss_dppo_tv`; verl's `ActorConfig.clip_ratio_c` is 3.0 (shared with PPO's
dual clip), so a verl run that does not set it truncates at 3: set `dppo_ratio_cap: 3.0` to
reproduce one. Formulas as verl's `compute_policy_loss_dppo_tv` / `_kl`; the KL's 1e-8
guards log(0).
"""

from __future__ import annotations

import torch

from meshrl.algos.losses.common import LOG_RATIO_BOUND, clip_range, loss_metrics
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult

PAPER = "Qi et al. 2026, Rethinking the Trust Region in LLM Reinforcement Learning, arXiv:2602.04879"


def binary_kl(old_logprobs: torch.Tensor, logprobs: torch.Tensor) -> torch.Tensor:
    """KL(Bernoulli(p_old) ‖ Bernoulli(p)) of the sampled token."""
    p, p_old = logprobs.exp(), old_logprobs.exp()
    return p_old * (old_logprobs - logprobs) + (1.0 - p_old) * torch.log((1.0 - p_old + 1e-8) / (1.0 - p + 1e-8))


def masked_pg(logprobs, old_logprobs, advantages, mask, valid, ratio_cap) -> PolicyLossResult:
    """−A·sg[min(ρ, C)]·log π on valid tokens, with the standard metrics."""
    if not ratio_cap > 1.0:
        raise ValueError(f"dppo_ratio_cap must be > 1, got {ratio_cap}")
    log_ratio = (logprobs - old_logprobs).detach().clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    ratio = log_ratio.exp()
    valid = valid.detach()
    loss = -advantages * ratio.clamp(max=ratio_cap) * logprobs * valid.to(logprobs.dtype)
    metrics = loss_metrics(
        ratio=ratio,
        log_ratio=log_ratio,
        mask=mask,
        low=~valid & (advantages < 0),
        high=~valid & (advantages > 0),
        dual=valid & (ratio > ratio_cap),
    )
    return PolicyLossResult(loss_mat=loss * mask, metrics=metrics)


@register_policy_loss("dppo_tv", default_agg="token-mean", paper=PAPER)
def dppo_tv(
    *, logprobs, old_logprobs, advantages, response_mask, epsilon=0.2, epsilon_high=None, dppo_ratio_cap=20.0, **_
) -> PolicyLossResult:
    """Policy gradient masked by the binary total-variation trust region (module docstring)."""
    eps_low, eps_high = clip_range(epsilon, epsilon_high)
    shift = (logprobs.exp() - old_logprobs.exp()).detach()
    valid = torch.where(advantages > 0, shift <= eps_high, shift >= -eps_low)
    return masked_pg(logprobs, old_logprobs, advantages, response_mask, valid, dppo_ratio_cap)


@register_policy_loss("dppo_kl", default_agg="token-mean", paper=PAPER)
def dppo_kl(
    *, logprobs, old_logprobs, advantages, response_mask, epsilon=0.2, epsilon_high=None, dppo_ratio_cap=20.0, **_
) -> PolicyLossResult:
    """Policy gradient masked by the binary-KL trust region (module docstring)."""
    eps_low, eps_high = clip_range(epsilon, epsilon_high)
    divergence = binary_kl(old_logprobs.detach(), logprobs.detach())
    up = logprobs.detach() > old_logprobs.detach()
    valid = torch.where(
        advantages > 0,
        (divergence <= eps_high) | ~up,
        (divergence <= eps_low) | (logprobs.detach() >= old_logprobs.detach()),
    )
    return masked_pg(logprobs, old_logprobs, advantages, response_mask, valid, dppo_ratio_cap)
