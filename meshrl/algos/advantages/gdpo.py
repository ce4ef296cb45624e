"""`gdpo`: Group reward-Decoupled normalization Policy Optimization (multi-reward GRPO).

Summing several rewards before GRPO's group normalisation lets the widest-spread reward
drown the others and merges distinct reward combinations into one advantage. GDPO
normalises each reward component k within the group first, sums with weights w_k, then
whitens over the batch's valid tokens (verl's `compute_gdpo_outcome_advantage`):

    A_k,i = (r_k,i − mean_g r_k) / (std_g r_k + eps)     (GRPO per component; `norm_by_std`)
    A_i   = Σ_k w_k · A_k,i,   A = whiten(A_i on every valid token)

whiten: (x − mean) / sqrt(var + 1e-8) over valid tokens, var with n − 1 (verl's
`masked_whiten`). Inputs: `reward_components` [B, K] (one column per reward component,
the reward service's `Sample.reward_components`, which the learner puts in the batch) and
`reward_component_weights` [K], or [B, K] with the same row everywhere (the batch's: each
component's configured weight; default 1 each). `rewards` is not used; a batch without
components (a single reward rule, or components that differ between samples) is an error.
"""

from __future__ import annotations

import torch

from meshrl.algos.advantages.grpo import group_relative
from meshrl.algos.masked import broadcast_over_tokens, masked_mean
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult

WHITEN_EPS = 1e-8  # verl's masked_whiten


def masked_whiten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(x − mean) / sqrt(var + 1e-8) over valid entries, var Bessel-corrected."""
    mean = masked_mean(values, mask)
    count = mask.sum()
    var = masked_mean((values - mean) ** 2, mask) * count / (count - 1).clamp_min(1.0)
    return (values - mean) * torch.rsqrt(var + WHITEN_EPS)


@register_advantage_estimator(
    "gdpo",
    paper=(
        "NVIDIA (NVlabs) 2026, GDPO: Group reward-Decoupled Normalization Policy Optimization for "
        "Multi-reward RL Optimization, arXiv:2601.05242"
    ),
)
def gdpo(
    *,
    rewards,
    response_mask,
    group_ids,
    reward_components=None,
    reward_component_weights=None,
    norm_by_std=True,
    eps=1e-6,
    **_,
) -> AdvantageResult:
    """Per-component group normalisation, weighted sum, batch whitening (module docstring)."""
    scale = "group" if norm_by_std else "none"
    summed = component_sum("gdpo", rewards, group_ids, reward_components, reward_component_weights, scale, eps)
    advantages = masked_whiten(broadcast_over_tokens(summed, response_mask), response_mask)
    advantages = advantages * response_mask
    return AdvantageResult(advantages=advantages, returns=advantages.clone())


@register_advantage_estimator(
    "normalize_then_sum",
    paper=(
        "GDPO (arXiv:2601.05242) as TRL's GRPO runs it: multi_objective_aggregation='normalize_then_sum' "
        "(per-sample batch normalisation)"
    ),
)
def normalize_then_sum(
    *, rewards, response_mask, group_ids, reward_components=None, reward_component_weights=None, eps=1e-6, **_
) -> AdvantageResult:
    """TRL's normalize_then_sum: Σ_k w_k·(r_k − mean_g)/(std_g + eps), then (x − mean)/(std + eps)
    over the batch's samples (std with n − 1), not over tokens as `gdpo` (verl) whitens.
    TRL's eps is 1e-4 in both places: set `algorithm.adv_epsilon: 1e-4` to match it exactly."""
    summed = component_sum(
        "normalize_then_sum", rewards, group_ids, reward_components, reward_component_weights, "group", eps
    )
    std = summed.std() if summed.numel() > 1 else torch.zeros_like(summed[0])
    per_sample = (summed - summed.mean()) / (std + eps)
    advantages = broadcast_over_tokens(per_sample, response_mask)
    return AdvantageResult(advantages=advantages, returns=advantages.clone())


def component_sum(name, rewards, group_ids, components, weights, scale: str, eps: float) -> torch.Tensor:
    """Σ_k w_k · group_relative(r_k) per sample [B]; weights default to 1 each."""
    if components is None or components.dim() != 2 or components.shape[0] != rewards.shape[0]:
        raise ValueError(
            f"advantage estimator {name!r} needs reward_components [B, K] (one column "
            "per reward component); the batch carries none: configure several "
            "reward.components, each scored for every sample"
        )
    k = components.shape[1]
    if weights is None:
        weights = torch.ones(k, dtype=rewards.dtype, device=rewards.device)
    if weights.dim() == 2:  # the batch's [B, K] copy of the configured weights
        weights = weights[0]
    return sum(weights[j] * group_relative(components[:, j], group_ids, scale, eps) for j in range(k))
