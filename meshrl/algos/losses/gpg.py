"""`gpg`: Group Policy Gradient's loss (Chu et al. 2025, "GPG: A Simple and Strong
Reinforcement Learning Baseline for Model Reasoning", arXiv:2504.02546).

Plain policy gradient: no importance ratio, no clipping, no critic, no KL:

    L = −A · log π(y_t)

Pair it with the `gpg` advantage estimator (its α-rescaled group baseline). The ratio
metrics still report π/π_old (for monitoring); `epsilon`, `epsilon_high`, `dual_clip_c`
do not apply (clip fractions are 0). Default aggregation `token-mean`, as the paper.
"""

from __future__ import annotations

import torch

from meshrl.algos.losses.common import LOG_RATIO_BOUND, loss_metrics
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult


@register_policy_loss(
    "gpg",
    default_agg="token-mean",
    paper=(
        "Chu et al. 2025, GPG: A Simple and Strong Reinforcement Learning Baseline for Model "
        "Reasoning, arXiv:2504.02546"
    ),
)
def gpg(*, logprobs, old_logprobs, advantages, response_mask, **_) -> PolicyLossResult:
    """−A·log π on every valid token (module docstring)."""
    log_ratio = (logprobs - old_logprobs).detach().clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    never = torch.zeros_like(log_ratio, dtype=torch.bool)
    metrics = loss_metrics(
        ratio=log_ratio.exp(), log_ratio=log_ratio, mask=response_mask, low=never, high=never, dual=never
    )
    return PolicyLossResult(loss_mat=-advantages * logprobs * response_mask, metrics=metrics)
