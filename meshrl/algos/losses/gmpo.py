"""`gmpo`: Geometric-Mean Policy Optimization (verl's `geo_mean`).

GRPO maximises the arithmetic mean of the token objectives ρ_t·A; GMPO maximises their
geometric mean, which an outlier token ratio moves far less. With token log-ratios
l_t = log π − log π_old, clipped in log space on the side the advantage's sign s = sign(A)
makes harmful (token-level clipping, wider than PPO's: the paper uses ε = 0.4):

    l̃_t = s · min(s·l_t, s·clip(l_t, −ε_low, ε_high))
    r_i = exp( (1/|o_i|) Σ_t l̃_t ),   Ā_i = (1/|o_i|) Σ_t A_t,   L_i = −Ā_i · r_i

∂L_i/∂log π_t = −Ā_i·r_i/|o_i| where l_t is unclipped, 0 where clipped. L_i is put on every
valid token, so the default aggregation `seq-mean-token-mean` gives verl's mean over
sequences. Advantages must be per sequence (outcome estimators), as verl requires.
`dual_clip_c` does not apply.
"""

from __future__ import annotations

import torch

from meshrl.algos.losses.common import LOG_RATIO_BOUND, clip_range, loss_metrics
from meshrl.algos.masked import broadcast_over_tokens, masked_mean
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult


@register_policy_loss(
    "gmpo",
    default_agg="seq-mean-token-mean",
    level="sequence",
    paper=("Zhao et al. 2025, Geometric-Mean Policy Optimization, arXiv:2507.20673"),
)
def gmpo(*, logprobs, old_logprobs, advantages, response_mask, epsilon=0.4, epsilon_high=None, **_) -> PolicyLossResult:
    """−mean_t(A) · exp(mean_t(sign-clipped log-ratio)) per sequence (module docstring)."""
    eps_low, eps_high = clip_range(epsilon, epsilon_high)
    log_ratio = (logprobs - old_logprobs.detach()).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    sign = torch.sign(advantages)
    clamped = log_ratio.clamp(-eps_low, eps_high)
    clipped_log_ratio = sign * torch.minimum(sign * log_ratio, sign * clamped)
    seq_ratio = masked_mean(clipped_log_ratio, response_mask, dim=-1).exp()
    seq_advantage = masked_mean(advantages, response_mask, dim=-1)
    loss = broadcast_over_tokens(-seq_advantage * seq_ratio, response_mask)
    clipped = (clipped_log_ratio != log_ratio).detach()  # where the clip binds (verl also
    # counts tokens clamped on the harmless side)
    metrics = loss_metrics(
        ratio=log_ratio.exp(),
        log_ratio=log_ratio,
        mask=response_mask,
        low=clipped & (advantages < 0),
        high=clipped & (advantages > 0),
        dual=torch.zeros_like(clipped),
    )
    return PolicyLossResult(loss_mat=loss, metrics=metrics)
