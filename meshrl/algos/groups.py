"""Per-group statistics over a batch with arbitrary int64 group ids, without Python loops.

Ids are compacted with `torch.unique(return_inverse=True)`; sums use `index_add_`, extrema
use `scatter_reduce_`. Every function returns per-sample values (each sample gets its
group's statistic), shape [B].
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class GroupStats:
    """Per-sample view of its group's statistics, each [B]."""

    count: torch.Tensor  # group size (float)
    total: torch.Tensor  # sum of the group's values
    mean: torch.Tensor
    std: torch.Tensor  # Bessel-corrected (n − 1); 0 for groups of one
    all_equal: torch.Tensor  # bool: every value in the group is identical


def _group_sum(values: torch.Tensor, inverse: torch.Tensor, n_groups: int) -> torch.Tensor:
    return torch.zeros(n_groups, dtype=values.dtype, device=values.device).index_add_(0, inverse, values)


def _group_all_equal(values: torch.Tensor, inverse: torch.Tensor, n_groups: int) -> torch.Tensor:
    empty = torch.zeros(n_groups, dtype=values.dtype, device=values.device)
    hi = empty.scatter_reduce(0, inverse, values, reduce="amax", include_self=False)
    lo = empty.scatter_reduce(0, inverse, values, reduce="amin", include_self=False)
    return (hi == lo)[inverse]


def group_stats(values: torch.Tensor, group_ids: torch.Tensor) -> GroupStats:
    """Mean, Bessel std, size, sum and all-equal flag of each sample's group."""
    unique_ids, inverse = torch.unique(group_ids, return_inverse=True)
    n_groups = unique_ids.numel()
    ones = torch.ones_like(values)
    count = _group_sum(ones, inverse, n_groups)
    total = _group_sum(values, inverse, n_groups)
    mean = total / count
    sq_dev = _group_sum((values - mean[inverse]) ** 2, inverse, n_groups)
    std = torch.sqrt(sq_dev / (count - 1).clamp_min(1.0))
    return GroupStats(
        count=count[inverse],
        total=total[inverse],
        mean=mean[inverse],
        std=std[inverse],
        all_equal=_group_all_equal(values, inverse, n_groups),
    )
