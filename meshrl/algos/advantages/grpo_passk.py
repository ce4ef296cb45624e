"""`grpo_passk`: GRPO for pass@k (Chen et al. 2025, "Pass@k Training for Adaptively Balancing
Exploration and Exploitation of Large Reasoning Models", arXiv:2508.10751; verl's
`grpo_passk`).

Pass@k rewards a group by its best sample, so only the best sample is credited, by how
much it beats the runner-up:

    A_best = (r_(1) − r_(2)) / (std_g(r) + eps)     (r_(1) ≥ r_(2) the two largest scores)
    A_i    = 0 for every other sample

`norm_by_std=False` drops the division; eps is `algorithm.adv_epsilon`. Ties for the best
give 0 (no sample beats the others); so do groups of one. The best is the first maximum
in batch order. The score is `rewards` plus the sum of `token_rewards` over valid tokens;
`returns` equal `advantages`.
"""

from __future__ import annotations

import torch

from meshrl.algos.advantages.common import outcome_scores
from meshrl.algos.groups import group_stats
from meshrl.algos.masked import broadcast_over_tokens
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult


def best_and_margin(scores: torch.Tensor, group_ids: torch.Tensor):
    """(is the first maximum of its group [B] bool, r_(1) − r_(2) of its group [B])."""
    _, inverse = torch.unique(group_ids, return_inverse=True)
    n = int(inverse.max()) + 1 if inverse.numel() else 0
    empty = torch.full((n,), float("-inf"), dtype=scores.dtype, device=scores.device)
    top = empty.scatter_reduce(0, inverse, scores, reduce="amax")[inverse]
    position = torch.arange(scores.numel(), device=scores.device)
    first_at_top = torch.where(scores == top, position, scores.numel())
    first = torch.full((n,), scores.numel(), device=scores.device).scatter_reduce(
        0, inverse, first_at_top, reduce="amin"
    )[inverse]
    is_best = position == first
    others = torch.where(is_best, torch.full_like(scores, float("-inf")), scores)
    runner_up = empty.scatter_reduce(0, inverse, others, reduce="amax")[inverse]
    margin = torch.where(torch.isfinite(runner_up), top - runner_up, torch.zeros_like(top))
    return is_best, margin


@register_advantage_estimator(
    "grpo_passk",
    paper=(
        "Chen et al. 2025, Pass@k Training for Adaptively Balancing Exploration and Exploitation "
        "of Large Reasoning Models, arXiv:2508.10751"
    ),
)
def grpo_passk(
    *, rewards, response_mask, group_ids, token_rewards=None, norm_by_std=True, eps=1e-6, **_
) -> AdvantageResult:
    """Only each group's best sample gets (best − runner-up) [/ std] (module docstring)."""
    scores = outcome_scores(rewards, token_rewards, response_mask)
    is_best, margin = best_and_margin(scores, group_ids)
    if norm_by_std:  # a margin > 0 implies std > 0; a zero margin stays 0 even with eps = 0
        std = group_stats(scores, group_ids).std
        margin = torch.where(margin > 0, margin / (std + eps), torch.zeros_like(margin))
    per_sample = torch.where(is_best, margin, torch.zeros_like(scores))
    advantages = broadcast_over_tokens(per_sample, response_mask)
    return AdvantageResult(advantages=advantages, returns=advantages.clone())
