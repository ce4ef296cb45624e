"""`opo`: On-Policy RL with Optimal reward baseline (Hao et al. 2025, arXiv:2505.23585).

The variance-minimising baseline for a sequence-level reward weights each sample by its
gradient's squared norm, which OPO approximates by the response length |o_j|:

    b_g = Σ_{j∈g} |o_j|·r_j / Σ_{j∈g} |o_j|,      A_i = r_i − b_g

on every valid token of sample i. Groups whose scores are all equal (a group of one
included) get exactly 0; so does a group whose responses are all empty. The score is
`rewards` plus the sum of `token_rewards` over valid tokens; `returns` equal `advantages`.
Pair with exact on-policy updates (one PPO epoch, one mini-batch), as the paper does.
"""

from __future__ import annotations

import torch

from meshrl.algos.advantages.common import outcome_scores
from meshrl.algos.groups import group_stats
from meshrl.algos.masked import broadcast_over_tokens
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult


@register_advantage_estimator(
    "opo", paper=("Hao et al. 2025, On-Policy RL with Optimal Reward Baseline, arXiv:2505.23585")
)
def opo(*, rewards, response_mask, group_ids, token_rewards=None, **_) -> AdvantageResult:
    """r − length-weighted group mean of r (module docstring)."""
    scores = outcome_scores(rewards, token_rewards, response_mask)
    lengths = response_mask.sum(dim=-1)
    weighted = group_stats(lengths * scores, group_ids)
    total_length = group_stats(lengths, group_ids).total
    baseline = weighted.total / total_length.clamp_min(1.0)
    no_signal = group_stats(scores, group_ids).all_equal | (total_length == 0)
    per_sample = torch.where(no_signal, torch.zeros_like(scores), scores - baseline)
    advantages = broadcast_over_tokens(per_sample, response_mask)
    return AdvantageResult(advantages=advantages, returns=advantages.clone())
