"""`tir_optimal_token_baseline`: the optimal token baseline by the k-th token the model wrote.

`optimal_token_baseline` (otb.py) compares a group's rows column by column. In a multi-turn
(tool-integrated) episode the model's tokens sit between observations of any length, so
column t is the model's token in one row and an observation in another. Here each row's
model tokens are packed to the front first (observation holes and padding removed), so the
baseline at position k compares the k-th token each model wrote:

    B_k = Σ_i G_i,k·W_i,k / (Σ_i W_i,k + ε)    over the rows with a k-th model token

with G and W (cumulative path variance, ×ρ̄² with rollout-correction weights) as in otb.py,
taken at the model tokens; then unpacked back to the columns. A row without any model token
is left out of its group (a group left with one row gets B = 0), and `handle_zero_tail`
compares model-token counts. As verl 0.9.1's `compute_multi_turn_optimal_token_baseline_
advantage` (`tir_optimal_token_baseline`); without holes it equals `optimal_token_baseline`.
"""

from __future__ import annotations

from meshrl.algos.advantages.otb import PAPER, group_baselines, returns_and_path_variance, rows_by_group
from meshrl.algos.masked import pack_valid, unpack_valid
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult


@register_advantage_estimator(
    "tir_optimal_token_baseline",
    needs=("old_logprobs", "sum_pi_squared"),
    paper=PAPER + " (verl's tir_optimal_token_baseline)",
)
def tir_optimal_token_baseline(
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
    """G_k − W-weighted group mean of G_k per model-token position k (module docstring)."""
    returns, weights = returns_and_path_variance(
        rewards,
        token_rewards,
        response_mask,
        old_logprobs,
        sum_pi_squared,
        rollout_weights,
        "tir_optimal_token_baseline",
    )
    packed_returns, packed_mask = pack_valid(returns, response_mask)
    packed_weights, _ = pack_valid(weights, response_mask)
    writing = packed_mask.sum(-1) > 0  # rows without a model token join no group
    groups = [rows[writing[rows]] for rows in rows_by_group(group_ids)]
    baselines = group_baselines(packed_returns, packed_weights, packed_mask, groups, handle_zero_tail, otb_epsilon)
    baselines = unpack_valid(baselines, response_mask)
    return AdvantageResult(advantages=(returns - baselines) * response_mask, returns=returns)
