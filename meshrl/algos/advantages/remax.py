"""`remax`: REINFORCE with the greedy response's reward as baseline (ReMax).

For each prompt the rollout also decodes one greedy response and scores it, b = r(x, ŷ_greedy).
Every sampled response of that prompt gets, on each valid token t,

    A_t = G_t − b,   G_t = Σ_{t' ≥ t} r_t'   (reward-to-go: the outcome reward at the last
                                              token plus any per-token rewards, γ = 1)

as verl's `compute_remax_outcome_advantage`; `returns` = G. Input `greedy_rewards` [B]: the
greedy reward of each row's prompt (the same value on every row of a group): declared with
`needs=("greedy_rewards",)`, so the learner's tasks ask the rollout for a greedy sample
(`SamplingParams.greedy_baseline`), the reward service scores it and the learner passes its
reward per row. A missing `greedy_rewards` is a clear error.
"""

from __future__ import annotations

from meshrl.algos.advantages.common import discounted_returns, per_token_rewards
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult


@register_advantage_estimator(
    "remax",
    needs=("greedy_rewards",),
    paper=(
        "Li et al. 2023, ReMax: A Simple, Effective, and Efficient Reinforcement Learning Method "
        "for Aligning Large Language Models, arXiv:2310.10505"
    ),
)
def remax(*, rewards, response_mask, group_ids, token_rewards=None, greedy_rewards=None, **_) -> AdvantageResult:
    """Reward-to-go minus the greedy response's reward (module docstring)."""
    if greedy_rewards is None or greedy_rewards.shape != rewards.shape:
        raise ValueError(
            "advantage estimator 'remax' needs greedy_rewards [B] (the reward of a "
            "greedy response to each row's prompt); the batch carries none"
        )
    returns = discounted_returns(per_token_rewards(rewards, token_rewards, response_mask), response_mask, 1.0)
    advantages = (returns - greedy_rewards.unsqueeze(-1)) * response_mask
    return AdvantageResult(advantages=advantages, returns=returns)
