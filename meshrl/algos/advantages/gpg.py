"""`gpg`: Group Policy Gradient (Chu et al. 2025, "GPG: A Simple and Strong Reinforcement
Learning Baseline for Model Reasoning", arXiv:2504.02546).

Group-mean baseline without std division (F_norm = 1, the paper's setting), rescaled so
that groups with no signal do not dilute the batch gradient:

    A_i = α·(r_i − mean_g(r)),      α = B / (B − M)

B = samples in the batch, M = samples in groups whose scores are all equal (their A is
exactly 0). With M = B every A is 0. Pair it with the `gpg` policy loss (−A·log π, no
ratio, no clipping). The score is `rewards` plus the sum of `token_rewards` over valid
tokens; `returns` equal `advantages`.
"""

from __future__ import annotations

import torch

from meshrl.algos.advantages.common import outcome_scores
from meshrl.algos.groups import group_stats
from meshrl.algos.masked import broadcast_over_tokens
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult

GPG_PAPER = (
    "Chu et al. 2025, GPG: A Simple and Strong Reinforcement Learning Baseline for Model Reasoning, arXiv:2504.02546"
)


@register_advantage_estimator("gpg", paper=GPG_PAPER)
def gpg(*, rewards, response_mask, group_ids, token_rewards=None, **_) -> AdvantageResult:
    """α·(r − group mean), α = B / (samples with signal) (module docstring)."""
    scores = outcome_scores(rewards, token_rewards, response_mask)
    stats = group_stats(scores, group_ids)
    with_signal = (~stats.all_equal).to(scores.dtype).sum()
    alpha = scores.numel() / with_signal.clamp_min(1.0)
    per_sample = torch.where(stats.all_equal, torch.zeros_like(scores), alpha * (scores - stats.mean))
    advantages = broadcast_over_tokens(per_sample, response_mask)
    return AdvantageResult(advantages=advantages, returns=advantages.clone())
