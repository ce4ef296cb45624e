"""`rloo`: REINFORCE Leave-One-Out (Kool et al. 2019; Ahmadian et al. 2024, "Back to Basics").

For sample i in a group g of size n with scores r:

    A_i = r_i − (1/(n−1))·Σ_{j≠i} r_j  =  n/(n−1)·(r_i − mean_g(r))

Groups of one (no other sample to compare with) and groups of equal scores get exactly 0.
The score is `rewards` plus the sum of `token_rewards` over valid tokens; A_i goes on every
valid token; `returns` equal `advantages`.
"""
from __future__ import annotations

import torch

from meshrl.algos.advantages.common import outcome_scores
from meshrl.algos.groups import group_stats
from meshrl.algos.masked import broadcast_over_tokens
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult


@register_advantage_estimator("rloo", paper=(
    "Ahmadian et al. 2024, Back to Basics: Revisiting REINFORCE Style Optimization for "
    "Learning from Human Feedback in LLMs, arXiv:2402.14740"))
def rloo(*, rewards, response_mask, group_ids, token_rewards=None, **_) -> AdvantageResult:
    """Leave-one-out baseline advantages (module docstring)."""
    scores = outcome_scores(rewards, token_rewards, response_mask)
    stats = group_stats(scores, group_ids)
    others_mean = (stats.total - scores) / (stats.count - 1).clamp_min(1.0)
    no_signal = stats.all_equal | (stats.count < 2)
    per_sample = torch.where(no_signal, torch.zeros_like(scores), scores - others_mean)
    advantages = broadcast_over_tokens(per_sample, response_mask)
    return AdvantageResult(advantages=advantages, returns=advantages.clone())
