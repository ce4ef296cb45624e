"""IcePop: importance weights kept inside [lower, C], zeroed outside (no truncation bias).

With d_t = log π_old(y_t) − log μ(y_t) per model token and ρ its ratio:

- `icepop`:          w_t = ρ_t = exp(d_t)           if lower ≤ ρ_t ≤ C, else 0
- `icepop_sequence`: w_t = ρ = exp(Σ_s m_s·d_s)     if lower ≤ ρ ≤ C, else 0, on every token

`lower` defaults to 1/C. The exponent is bounded at ±20 before exp (as verl). verl 0.9.1:
`rollout_is: token | sequence` with `rollout_is_threshold: "lower_upper"`; TRL 1.16's
`vllm_importance_sampling_mode: token_mask | sequence_mask`. Ling Team 2025, "Every Step
Evolves: Scaling RL for Trillion-Scale Thinking Model" (Ring-1T, IcePop), arXiv:2510.18855.
"""

from __future__ import annotations

import torch

from meshrl.algos.correction.registry import register_rollout_weights
from meshrl.algos.correction.truncated import nothing

PAPER = (
    "Ling Team 2025, Every Step Evolves: Scaling Reinforcement Learning for Trillion-Scale "
    "Thinking Model (IcePop), arXiv:2510.18855"
)
BOUND = 20.0  # exp(±20) stays finite


def kept_inside(log_ratio: torch.Tensor, cap: float, lower: float | None):
    """(ρ where lower ≤ ρ ≤ C else 0, zeroed [B, T] bool)."""
    ratio = log_ratio.clamp(-BOUND, BOUND).exp()
    low = 1.0 / cap if lower is None else lower
    outside = (ratio < low) | (ratio > cap)
    return torch.where(outside, torch.zeros_like(ratio), ratio), outside


@register_rollout_weights("icepop", paper=PAPER)
def icepop(log_ratio, mask, *, cap=2.0, lower=None, **_):
    """ρ_t inside [lower, C], else 0, per token."""
    weights, outside = kept_inside(log_ratio, cap, lower)
    return weights, nothing(log_ratio), outside


@register_rollout_weights("icepop_sequence", level="sequence", paper=PAPER)
def icepop_sequence(log_ratio, mask, *, cap=2.0, lower=None, **_):
    """The sequence's ρ inside [lower, C], else 0, on its tokens."""
    summed = (log_ratio * mask).sum(dim=-1, keepdim=True).expand_as(log_ratio)
    weights, outside = kept_inside(summed, cap, lower)
    return weights, nothing(log_ratio), outside
