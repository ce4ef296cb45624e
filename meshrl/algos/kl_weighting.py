"""Importance-weighted KL term: the KL estimate times the importance ratio (TRL's
`use_bias_correction_kl`), so its gradient is the unbiased reverse-KL gradient off-policy.

Tokens were sampled from π_old, but the KL term is about π: with ρ the importance ratio at
the policy loss's own level (token: ρ_t = π(y_t)/π_old(y_t); sequence: the geometric mean
exp(mean_t m·log ρ_t) on every model token, as TRL broadcasts its sequence ratio),

    KL̃_t = ρ · k(π, π_ref)_t          (ρ differentiable: its gradient counts even where ρ = 1)

DeepSeek-AI 2025, "DeepSeek-V3.2: Pushing the Frontier of Open Large Language Models",
arXiv:2512.02556 (the unbiased KL estimate); TRL 1.16 applies it to its k3 term by default
(`use_bias_correction_kl=True`); verl and meshrl's default do not. The log-ratio is bounded
at ±20 before exp.
"""

from __future__ import annotations

import torch

from meshrl.algos.losses.common import LOG_RATIO_BOUND
from meshrl.algos.masked import masked_mean


def importance_ratio(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor, level: str
) -> torch.Tensor:
    """ρ [B, T] at `level` (module docstring), with the gradient of π."""
    log_ratio = logprobs - old_logprobs.detach()
    if level == "sequence":
        log_ratio = masked_mean(log_ratio, mask, dim=-1).unsqueeze(-1).expand_as(logprobs)
    return log_ratio.clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND).exp()


def importance_weighted_kl(
    kl: torch.Tensor, logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor, level: str = "token"
) -> torch.Tensor:
    """ρ·KL [B, T], zero off the mask (module docstring)."""
    return kl * importance_ratio(logprobs, old_logprobs, mask, level) * mask
