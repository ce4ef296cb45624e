"""`optimal_token_baseline`: a per-token, variance-minimising baseline within each group (OTB).

With reward-to-go G_t and the squared norm of the score function of token t approximated by
‖s_t‖² ≈ 1 − 2π_t + Σ_v π(v)² (π_t: the sampled token's probability under π_old, Σπ²: the
whole next-token distribution's), the cumulative path variance W_t = Σ_{j ≤ t} ‖s_j‖² weights
the group's returns at each position:

    B_t = Σ_i G_i,t·W_i,t·m_i,t / (Σ_i W_i,t·m_i,t + ε),   A_i,t = (G_i,t − B_t)·m_i,t

A group of one gets B = 0. `handle_zero_tail`: where one response is longer than all the
others, its tail beyond the second-longest has no peers and gets B = 0 (verl's default True).
As verl's `compute_optimal_token_baseline_advantage` (without the rollout-IS weighting).

Position t is the t-th token the model wrote: a multi-turn episode's observation tokens (holes
in the mask) are skipped, so the baseline compares like with like across a group whatever
the observations' lengths (verl's `tir_optimal_token_baseline`); without holes this is the
column index.
Inputs: `old_logprobs` and `sum_pi_squared` [B, T] from the learner's old-log-prob pass
(declared with `needs=`, so the pass runs and computes Σπ² = exp(logsumexp(2z) − 2·logsumexp(z))
from the same chunked logits as the log-probs); a missing one is a clear error. `returns` = G.
"""
from __future__ import annotations

import torch

from meshrl.algos.advantages.common import discounted_returns, per_token_rewards
from meshrl.algos.masked import pack_valid, unpack_valid
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult


def group_baselines(returns, weights, mask, group_ids, handle_zero_tail, epsilon):
    """B [B, T]: per group and position, the W-weighted mean of the returns."""
    baselines = torch.zeros_like(returns)
    for group in torch.unique(group_ids):
        rows = (group_ids == group).nonzero(as_tuple=True)[0]
        if len(rows) < 2:
            continue
        w, m = weights[rows], mask[rows]
        baselines[rows] = ((returns[rows] * w * m).sum(0) / ((w * m).sum(0) + epsilon)).expand(len(rows), -1)
        if handle_zero_tail:
            lengths = m.sum(-1)
            top2 = lengths.sort().values[-2:]
            if top2[1] > top2[0]:  # a single longest row: its unmatched tail has no baseline
                baselines[rows[lengths.argmax()], int(top2[0].item()):] = 0.0
    return baselines


@register_advantage_estimator("optimal_token_baseline", needs=("old_logprobs", "sum_pi_squared"),
                              paper=(
    "Li et al. 2026, The Optimal Token Baseline: Variance Reduction for Long-Horizon LLM-RL, "
    "arXiv:2602.07078 (verl's optimal_token_baseline)"))
def optimal_token_baseline(*, rewards, response_mask, group_ids, token_rewards=None,
                           old_logprobs=None, sum_pi_squared=None, handle_zero_tail=True,
                           otb_epsilon=1e-8, **_) -> AdvantageResult:
    """G_t − W-weighted group mean of G_t per position (module docstring)."""
    if old_logprobs is None or sum_pi_squared is None:
        raise ValueError("advantage estimator 'optimal_token_baseline' needs old_logprobs and "
                         "sum_pi_squared [B, T] (Σ_v π(v)² of each next-token distribution)")
    returns = discounted_returns(per_token_rewards(rewards, token_rewards, response_mask),
                                 response_mask, 1.0)
    per_step = 1.0 - 2.0 * old_logprobs.exp() + sum_pi_squared
    cumulative = (per_step * response_mask).cumsum(-1)
    # baselines per model-token position: observations (mask holes) packed away first
    packed_returns, packed_mask = pack_valid(returns, response_mask)
    packed_weights, _ = pack_valid(cumulative, response_mask)
    baselines = group_baselines(packed_returns, packed_weights, packed_mask, group_ids,
                                handle_zero_tail, otb_epsilon)
    baselines = unpack_valid(baselines, response_mask)
    return AdvantageResult(advantages=(returns - baselines) * response_mask, returns=returns)
