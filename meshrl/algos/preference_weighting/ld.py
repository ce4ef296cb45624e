"""LD-DPO (length desensitisation): the part of the longer response beyond the shorter one's
length counts α times in its summed log-prob, for the policy and the reference alike.

For a pair with ℓ = min(|y_w|, |y_l|) model tokens and a response y (mask with holes allowed:
k counts model tokens only),

    log π̃(y) = Σ_{k ≤ ℓ} log π(y_k) + α · Σ_{k > ℓ} log π(y_k)

α = `algorithm.dpo_ld_alpha` ∈ [0, 1] (α = 1 is plain DPO, α = 0 drops the longer response's
tail). As TRL 1.16.0's `ld_alpha` (shared / tail masks from the cumulative completion mask);
every preference loss then sees these sums (the `sft` term keeps the plain ones).
"""

from __future__ import annotations

import torch

from meshrl.algos.preference_weighting.registry import register_preference_weighting


def check_ld_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"algorithm.dpo_ld_alpha must be in [0, 1], got {alpha}")


def ld_token_weights(mask: torch.Tensor, alpha: float) -> torch.Tensor:
    """[2B, T] weights for B chosen rows then B rejected rows: 1 up to the pair's shared
    length, α after it, 0 off the mask."""
    check_ld_alpha(alpha)
    if len(mask) % 2:
        raise ValueError(f"LD-DPO needs chosen rows then rejected rows (an even count), got {len(mask)}")
    position = mask.cumsum(-1)
    lengths = mask.sum(-1)
    half = len(mask) // 2
    shared = torch.minimum(lengths[:half], lengths[half:]).repeat(2)
    weights = torch.where(position <= shared[:, None], 1.0, alpha).to(mask.dtype)
    return weights * mask


@register_preference_weighting(
    "ld",
    config_key="algorithm.dpo_ld_alpha",
    paper=("Liu et al. 2024, Length Desensitization in Direct Preference Optimization, arXiv:2409.06411"),
)
def ld_weighted_sums(token_logps: torch.Tensor, mask: torch.Tensor, *, alpha: float) -> torch.Tensor:
    """Σ_{k≤ℓ} log π(y_k) + α·Σ_{k>ℓ} log π(y_k), ℓ = min(|y_w|, |y_l|), per row [2B]; rows: B chosen
    then B rejected (module docstring)."""
    return (token_logps * ld_token_weights(mask.to(token_logps.dtype), alpha)).sum(-1)
