"""`optimal_token_baseline`: a per-token, variance-minimising baseline within each group (OTB).

With reward-to-go G_t and the squared norm of the score function of token t approximated by
‖s_t‖² ≈ 1 − 2π_t + Σ_v π(v)² (π_t: the sampled token's probability under π_old, Σπ²: the
whole next-token distribution's), the cumulative path variance W_t = Σ_{j ≤ t} m_j·‖s_j‖²
(times ρ̄_j², the rollout-correction weight squared, when the step has them: the MSE-optimal
baseline under truncated IS) weights the group's returns at each response column t:

    B_t = Σ_i G_i,t·W_i,t·m_i,t / (Σ_i W_i,t·m_i,t + ε),   A_i,t = (G_i,t − B_t)·m_i,t

A group of one gets B = 0. `handle_zero_tail`: where one response is longer than all the
others, its columns from the second-longest's length on get B = 0 (verl's default True). As
verl 0.9.1's `compute_optimal_token_baseline_advantage`, column for column: in a multi-turn
episode column t may be an observation in one row and the model's token in another; the
`tir_optimal_token_baseline` (otb_tir.py) compares the k-th token each model wrote instead.
Inputs: `old_logprobs` and `sum_pi_squared` [B, T] from the learner's old-log-prob pass
(declared with `needs=`, so the pass runs and computes Σπ² = exp(logsumexp(2z) − 2·logsumexp(z))
from the same chunked logits as the log-probs); a missing one is a clear error. `returns` = G.
"""

from __future__ import annotations

import torch

from meshrl.algos.advantages.common import discounted_returns, per_token_rewards
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult

PAPER = "Li et al. 2026, The Optimal Token Baseline: Variance Reduction for Long-Horizon LLM-RL, arXiv:2602.07078"


def returns_and_path_variance(
    rewards, token_rewards, response_mask, old_logprobs, sum_pi_squared, rollout_weights, name
):
    """(G [B, T], W [B, T]) as the module docstring; a clear error without the inputs."""
    if old_logprobs is None or sum_pi_squared is None:
        raise ValueError(
            f"advantage estimator {name!r} needs old_logprobs and "
            f"sum_pi_squared [B, T] (Σ_v π(v)² of each next-token distribution)"
        )
    returns = discounted_returns(per_token_rewards(rewards, token_rewards, response_mask), response_mask, 1.0)
    per_step = 1.0 - 2.0 * old_logprobs.exp() + sum_pi_squared
    if rollout_weights is not None:
        per_step = per_step * rollout_weights.square()
    return returns, (per_step * response_mask).cumsum(-1)


def zero_tail(baselines, rows, lengths) -> None:
    """A single longest row: its columns from the second-longest's length on get B = 0."""
    top2 = lengths.sort().values[-2:]
    if top2[1] > top2[0]:
        baselines[rows[lengths.argmax()], int(top2[0].item()) :] = 0.0


def group_baselines(returns, weights, mask, groups, handle_zero_tail, epsilon):
    """B [B, T]: per group (a list of row-index tensors) and column, the W-weighted mean of G."""
    baselines = torch.zeros_like(returns)
    for rows in groups:
        if len(rows) < 2:
            continue
        w, m = weights[rows], mask[rows]
        baselines[rows] = ((returns[rows] * w * m).sum(0) / ((w * m).sum(0) + epsilon)).expand(len(rows), -1)
        if handle_zero_tail:
            zero_tail(baselines, rows, m.sum(-1))
    return baselines


def rows_by_group(group_ids: torch.Tensor) -> list[torch.Tensor]:
    return [(group_ids == g).nonzero(as_tuple=True)[0] for g in torch.unique(group_ids)]


@register_advantage_estimator(
    "optimal_token_baseline", needs=("old_logprobs", "sum_pi_squared"), paper=PAPER + " (verl's optimal_token_baseline)"
)
def optimal_token_baseline(
    *,
    rewards,
    response_mask,
    group_ids,
    token_rewards=None,
    old_logprobs=None,
    sum_pi_squared=None,
    rollout_weights=None,
    handle_zero_tail=True,
    otb_epsilon=1e-8,
    **_,
) -> AdvantageResult:
    """G_t − W-weighted group mean of G_t per column (module docstring)."""
    returns, weights = returns_and_path_variance(
        rewards, token_rewards, response_mask, old_logprobs, sum_pi_squared, rollout_weights, "optimal_token_baseline"
    )
    baselines = group_baselines(
        returns, weights, response_mask, rows_by_group(group_ids), handle_zero_tail, otb_epsilon
    )
    return AdvantageResult(advantages=(returns - baselines) * response_mask, returns=returns)
