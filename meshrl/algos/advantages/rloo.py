"""`rloo`: REINFORCE Leave-One-Out (Kool et al. 2019; Ahmadian et al. 2024, "Back to Basics").

For sample i in a group g of size n with scores r:

    A_i = r_i − (1/(n−1))·Σ_{j≠i} r_j  =  n/(n−1)·(r_i − mean_g(r))

Groups of one (no other sample to compare with) and groups of equal scores get exactly 0.
`normalize_advantages=True` (TRL's RLOOConfig option) then whitens the per-sample A over
the samples of the batch that carry a signal: (A − mean) / (std + eps), std with n − 1,
eps = `algorithm.adv_epsilon`; no-signal samples stay exactly 0.
The score is `rewards` plus the sum of `token_rewards` over valid tokens; A_i goes on every
valid token; `returns` equal `advantages`.
"""

from __future__ import annotations

import torch

from meshrl.algos.advantages.common import outcome_scores
from meshrl.algos.groups import group_stats
from meshrl.algos.masked import broadcast_over_tokens, masked_mean
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult


@register_advantage_estimator(
    "rloo",
    paper=(
        "Ahmadian et al. 2024, Back to Basics: Revisiting REINFORCE Style Optimization for "
        "Learning from Human Feedback in LLMs, arXiv:2402.14740"
    ),
)
def rloo(
    *, rewards, response_mask, group_ids, token_rewards=None, normalize_advantages=False, eps=1e-6, **_
) -> AdvantageResult:
    """Leave-one-out baseline advantages (module docstring)."""
    scores = outcome_scores(rewards, token_rewards, response_mask)
    stats = group_stats(scores, group_ids)
    others_mean = (stats.total - scores) / (stats.count - 1).clamp_min(1.0)
    no_signal = stats.all_equal | (stats.count < 2)
    per_sample = torch.where(no_signal, torch.zeros_like(scores), scores - others_mean)
    if normalize_advantages:
        per_sample = whiten_samples(per_sample, (~no_signal).to(scores.dtype), eps)
    advantages = broadcast_over_tokens(per_sample, response_mask)
    return AdvantageResult(advantages=advantages, returns=advantages.clone())


def whiten_samples(values: torch.Tensor, keep: torch.Tensor, eps: float) -> torch.Tensor:
    """(v − mean) / (std + eps) over the samples where keep = 1 (std with n − 1); 0 elsewhere."""
    mean = masked_mean(values, keep)
    var = ((values - mean) ** 2 * keep).sum() / (keep.sum() - 1).clamp_min(1.0)
    return (values - mean) / (var.sqrt() + eps) * keep
