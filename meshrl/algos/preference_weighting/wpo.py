"""WPO: each pair's loss weighted by how likely the current policy is to produce it.

For a response y with per-token log-probs log π(y_t) and Σ_v π(v | y_<t)² at each position,

    w(y) = exp( mean_t [ log π(y_t) − log Σ_v π(v | y_<t)² ] )      (no gradient)

and the pair's loss is multiplied by w(y_w)·w(y_l). Subtracting log Σ_v π² aligns the weight
to the policy's own sampling (a greedy-ish policy would otherwise down-weight everything).
As TRL 1.16.0's `use_weighting` (its fused head's `log_sum_sq_probs`), `algorithm.dpo_use_weighting`.
Pairs sorted by `aot` / `aot_unpaired` have no per-pair loss to weight (refused at config load).
"""

from __future__ import annotations

import torch

from meshrl.algos.preference_weighting.registry import register_preference_weighting

TINY = 1e-30  # Σ_v π² ≥ 1/V > 0; the floor only guards a log of an underflowed 0


@register_preference_weighting(
    "wpo",
    config_key="algorithm.dpo_use_weighting",
    paper=("Zhou et al. 2024, WPO: Enhancing RLHF with Weighted Preference Optimization, arXiv:2406.11827"),
)
def wpo_pair_weights(token_logps: torch.Tensor, sum_pi_squared: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """w(y_w)·w(y_l) per pair [B], w(y) = exp(mean_t[log π(y_t) − log Σ_v π(v)²]), no gradient; rows:
    B chosen then B rejected [2B, T] (module docstring)."""
    with torch.no_grad():
        mask = mask.to(token_logps.dtype)
        aligned = (token_logps - sum_pi_squared.clamp_min(TINY).log()) * mask
        weights = torch.exp(aligned.sum(-1) / mask.sum(-1).clamp_min(1.0))
        half = len(weights) // 2
        return weights[:half] * weights[half:]
