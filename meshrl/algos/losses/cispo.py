"""`cispo`: Clipped IS-weight Policy Optimization (MiniMax-M1, MiniMax 2025).

Instead of clipping the update (which drops the gradient of clipped tokens, often the rare
"fork" tokens), CISPO clips and stops the gradient of the importance weight and keeps a
REINFORCE-style gradient on every token:

    ρ = exp(log π − log π_old),   ŵ = sg[clip(ρ, 1 − ε_low, 1 + ε_high)]
    L = −ŵ · A · log π

The paper effectively disables the lower bound (MiniMax-M1 preset: ε_low = 1.0, i.e. a
lower bound of 0) and tunes ε_high. `dual_clip_c` does not apply and is ignored
(`clip_ratio/dual` is 0). Default aggregation `token-mean` (the paper normalises by the
total token count).
"""

from __future__ import annotations

import torch

from meshrl.algos.losses.common import LOG_RATIO_BOUND, clip_range, loss_metrics
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult


@register_policy_loss(
    "cispo",
    default_agg="token-mean",
    paper=(
        "MiniMax 2025, MiniMax-M1: Scaling Test-Time Compute Efficiently with Lightning Attention, arXiv:2506.13585"
    ),
)
def cispo(
    *, logprobs, old_logprobs, advantages, response_mask, epsilon=0.2, epsilon_high=None, dual_clip_c=None, **_
) -> PolicyLossResult:
    """Clipped, gradient-stopped IS weight times A times log-prob (module docstring)."""
    eps_low, eps_high = clip_range(epsilon, epsilon_high)
    log_ratio = (logprobs - old_logprobs).detach().clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    ratio = log_ratio.exp()
    weight = ratio.clamp(1.0 - eps_low, 1.0 + eps_high)
    loss = -weight * advantages * logprobs
    metrics = loss_metrics(
        ratio=ratio,
        log_ratio=log_ratio,
        mask=response_mask,
        low=ratio < 1.0 - eps_low,
        high=ratio > 1.0 + eps_high,
        dual=torch.zeros_like(ratio, dtype=torch.bool),
    )
    return PolicyLossResult(loss_mat=loss * response_mask, metrics=metrics)
