"""Batch-normalised importance weights: divide by their batch mean, so they average 1.

Truncating or masking the weights shrinks the loss's scale (a mean below 1 is a smaller
step); dividing by the mean keeps the correction's relative reweighting and the step size:

    token-level weights:    w̃_t = w_t / (Σ_b,t m·w / Σ_b,t m)      (mean over model tokens)
    sequence-level weights: w̃ = w / mean over sequences of w_i       (one weight per sequence)

over the whole batch on every rank (all-reduced). A mean ≤ 1e-8 leaves the weights as they
are. verl 0.9.1's `rollout_is_batch_normalize` (the same formulas and guard).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from meshrl.algos.masked import masked_mean

GUARD = 1e-8


def weight_mean(
    weights: torch.Tensor,
    mask: torch.Tensor,
    level: str,
    all_reduce: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """The batch mean the weights are divided by (module docstring), over every rank."""
    if level == "token":
        total = torch.stack([(weights * mask).sum(), mask.sum()])
    else:
        valid = (mask.sum(dim=-1) > 0).to(weights.dtype)
        total = torch.stack([(masked_mean(weights, mask, dim=-1) * valid).sum(), valid.sum()])
    if all_reduce is not None:
        total = all_reduce(total)
    return total[0] / total[1].clamp_min(1.0)


def batch_normalize(
    weights: torch.Tensor,
    mask: torch.Tensor,
    level: str,
    all_reduce: Callable[[torch.Tensor], torch.Tensor] | None = None,
):
    """(weights / their batch mean, the factor divided by: 1 when the mean is ≤ 1e-8)."""
    mean = weight_mean(weights, mask, level, all_reduce)
    factor = torch.where(mean > GUARD, mean, torch.ones_like(mean))
    return weights / factor, factor
