"""`dro`: policy gradient with a squared log-ratio penalty (Direct Reward Optimization's
regularised objective; Tinker's and Kimi k1.5's off-policy form):

    L = −A · log π + ½·β·(log π − log π_old)²

∂L/∂log π = −A + β·(log π − log π_old): the plain policy gradient on-policy, pulled back
towards π_old as the policy drifts, with no ratio and no clip. β = `dro_beta` (default 1.0,
Tinker's). `epsilon`/`dual_clip_c` do not apply (clip fractions are 0).
"""

from __future__ import annotations

import torch

from meshrl.algos.losses.common import LOG_RATIO_BOUND, loss_metrics
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult


@register_policy_loss(
    "dro",
    default_agg="token-mean",
    paper=(
        "Richemond et al. 2024, Offline Regularised Reinforcement Learning for Large Language "
        "Models Alignment, arXiv:2405.19107"
    ),
)
def dro(*, logprobs, old_logprobs, advantages, response_mask, dro_beta=1.0, **_) -> PolicyLossResult:
    """−A·log π + ½β(log π − log π_old)² (module docstring)."""
    if not dro_beta >= 0:
        raise ValueError(f"dro_beta must be >= 0, got {dro_beta}")
    drift = logprobs - old_logprobs.detach()
    loss = -advantages * logprobs + 0.5 * dro_beta * drift.square()
    log_ratio = drift.detach().clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    never = torch.zeros_like(log_ratio, dtype=torch.bool)
    metrics = loss_metrics(
        ratio=log_ratio.exp(), log_ratio=log_ratio, mask=response_mask, low=never, high=never, dual=never
    )
    return PolicyLossResult(loss_mat=loss * response_mask, metrics=metrics)
