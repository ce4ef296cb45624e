"""Truncated importance sampling (TIS): weight the loss by π_old/μ, cut at `cap`.

With d_t = log π_old(y_t) − log μ(y_t) per model token (μ: the rollout engine's log-probs):

- `none`:     w_t = 1
- `token`:    w_t = min(exp(d_t), C)                     one weight per token
- `sequence`: w_t = min(exp(Σ_s m_s·d_s), C)             one weight per sequence, on its tokens

Yao et al. 2025, "Your Efficient RL Framework Secretly Brings You Off-Policy RL Training"
(https://fengyao.notion.site/off-policy-rl); verl 0.9.1's `rollout_is: token | sequence`
with a single `rollout_is_threshold`.
"""

from __future__ import annotations

import math

import torch

from meshrl.algos.correction.registry import register_rollout_weights

PAPER = (
    "Yao et al. 2025, Your Efficient RL Framework Secretly Brings You Off-Policy RL "
    "Training, https://fengyao.notion.site/off-policy-rl"
)


def nothing(log_ratio: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(log_ratio, dtype=torch.bool)


@register_rollout_weights("none", paper="no correction")
def none(log_ratio, mask, **_):
    """w = 1."""
    return torch.ones_like(log_ratio), nothing(log_ratio), nothing(log_ratio)


@register_rollout_weights("token", paper=PAPER)
def token(log_ratio, mask, *, cap=2.0, **_):
    """min(exp(d_t), C) per token."""
    log_cap = math.log(cap)
    return log_ratio.clamp(max=log_cap).exp(), log_ratio > log_cap, nothing(log_ratio)


@register_rollout_weights("sequence", level="sequence", paper=PAPER)
def sequence(log_ratio, mask, *, cap=2.0, **_):
    """min(exp(Σ_t m·d_t), C) on every token of the sequence."""
    log_cap = math.log(cap)
    summed = (log_ratio * mask).sum(dim=-1, keepdim=True).expand_as(log_ratio)
    return summed.clamp(max=log_cap).exp(), summed > log_cap, nothing(log_ratio)
