"""`clip_cov` / `kl_cov`: covariance-based entropy control (Cui et al. 2025).

Entropy collapses through tokens whose log-prob and advantage covary strongly. Per valid
token, with means over the valid tokens of this (micro-)batch:

    cov_t = (A_t − mean A) · (log π_t − mean log π)

- `clip_cov`: PPO's clipped surrogate, but a random `clip_cov_ratio` share of the valid
  tokens (at least one) among those the clip leaves alone and whose cov_t lies in
  (`clip_cov_lb`, `clip_cov_ub`) get no gradient (loss set to 0).
- `kl_cov`: the unclipped −A·ρ, plus `kl_cov_coef`·|log ρ| on the top `kl_cov_ratio` share of
  valid tokens (at least one) by cov_t.

Defaults as verl 0.9.1's `PolicyLossConfig` (clip_cov_ratio = kl_cov_ratio = 2e-4, bounds 1
and 5, `ppo_kl_coef` 0.1 = our `kl_cov_coef`; the function's own fallback of 1.0 is never
reached through verl's config). The covariance is over the
micro-batch the loss sees (verl: the micro-batch too); `clip_cov` draws from torch's global
generator (seeded by `trainer.seed`). `clip_ratio/low|high` report the PPO clip,
`clip_ratio/dual` the covariance-selected tokens.
"""

from __future__ import annotations

import torch

from meshrl.algos.losses.common import LOG_RATIO_BOUND, clip_range, clipped_surrogate, loss_metrics, surrogate_metrics
from meshrl.algos.masked import masked_mean
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult

PAPER = (
    "Cui et al. 2025, The Entropy Mechanism of Reinforcement Learning for Reasoning Language Models, arXiv:2505.22617"
)


def token_covariance(logprobs, advantages, mask) -> torch.Tensor:
    """cov_t [B, T] (module docstring), detached."""
    lp, adv = logprobs.detach(), advantages.detach()
    return (adv - masked_mean(adv, mask)) * (lp - masked_mean(lp, mask))


def share(ratio: float, mask: torch.Tensor, name: str) -> int:
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {ratio}")
    return max(int(ratio * mask.sum().item()), 1)


@register_policy_loss("clip_cov", default_agg="token-mean", paper=PAPER)
def clip_cov(
    *,
    logprobs,
    old_logprobs,
    advantages,
    response_mask,
    epsilon=0.2,
    epsilon_high=None,
    clip_cov_ratio=2e-4,
    clip_cov_lb=1.0,
    clip_cov_ub=5.0,
    **_,
) -> PolicyLossResult:
    """PPO with a random share of high-covariance tokens detached (module docstring)."""
    eps_low, eps_high = clip_range(epsilon, epsilon_high)
    log_ratio = (logprobs - old_logprobs.detach()).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    ratio = log_ratio.exp()
    loss = clipped_surrogate(ratio, advantages, eps_low, eps_high, None)
    clipped = loss.detach() > (-advantages * ratio).detach()
    cov = token_covariance(logprobs, advantages, response_mask)
    candidates = ((cov > clip_cov_lb) & (cov < clip_cov_ub) & (response_mask > 0) & ~clipped).nonzero()
    count = share(clip_cov_ratio, response_mask, "clip_cov_ratio")
    chosen = candidates[torch.randperm(len(candidates), device=candidates.device)[:count]]
    selected = torch.zeros_like(clipped)
    selected[chosen[:, 0], chosen[:, 1]] = True
    metrics = surrogate_metrics(ratio, log_ratio, advantages, response_mask, eps_low, eps_high, None)
    metrics["clip_ratio/dual"] = masked_mean(selected.to(response_mask.dtype), response_mask)
    return PolicyLossResult(loss_mat=loss * ~selected * response_mask, metrics=metrics)


@register_policy_loss("kl_cov", default_agg="token-mean", paper=PAPER)
def kl_cov(
    *, logprobs, old_logprobs, advantages, response_mask, kl_cov_ratio=2e-4, kl_cov_coef=0.1, **_
) -> PolicyLossResult:
    """−A·ρ plus a |log ρ| penalty on the top-covariance tokens (module docstring)."""
    log_ratio = (logprobs - old_logprobs.detach()).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    ratio = log_ratio.exp()
    cov = token_covariance(logprobs, advantages, response_mask)
    cov = cov.masked_fill(response_mask <= 0, float("-inf"))
    top = cov.flatten().topk(share(kl_cov_ratio, response_mask, "kl_cov_ratio")).indices
    selected = torch.zeros(cov.numel(), dtype=torch.bool, device=cov.device)
    selected[top] = True
    selected = selected.view_as(cov) & (response_mask > 0)
    loss = -advantages * ratio + kl_cov_coef * log_ratio.abs() * selected
    never = torch.zeros_like(selected)
    metrics = loss_metrics(ratio=ratio, log_ratio=log_ratio, mask=response_mask, low=never, high=never, dual=selected)
    return PolicyLossResult(loss_mat=loss * response_mask, metrics=metrics)
