"""`ppo`: the clipped surrogate objective (Schulman et al. 2017, "Proximal Policy Optimization").

Per token, with ρ = π/π_old = exp(logprobs − old_logprobs):

    L = max(−A·ρ, −A·clip(ρ, 1 − ε_low, 1 + ε_high))

- ε_low = `epsilon`; ε_high = `epsilon_high` or `epsilon`. A larger ε_high is DAPO's
  clip-higher (Yu et al. 2025), which keeps exploration alive on low-probability tokens.
- `dual_clip_c` = c > 1 adds the dual clip of Ye et al. 2020 where A < 0: L = min(L, −A·c).
- `delta` = δ > 1 + ε_high is TRL's two-sided clip (INTELLECT-2): the unclipped term uses
  min(ρ, δ), L = max(−A·min(ρ, δ), −A·clip(ρ, 1 − ε_low, 1 + ε_high)).

The log-ratio is clamped to ±20 before exp. Default aggregation `token-mean`; the trainer's
`loss_agg_mode` wins.
"""

from __future__ import annotations

from meshrl.algos.losses.common import (
    LOG_RATIO_BOUND,
    check_delta,
    check_dual_clip,
    clip_range,
    clipped_surrogate,
    surrogate_metrics,
)
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult


@register_policy_loss(
    "ppo",
    default_agg="token-mean",
    paper=("Schulman et al. 2017, Proximal Policy Optimization Algorithms, arXiv:1707.06347"),
)
def ppo(
    *,
    logprobs,
    old_logprobs,
    advantages,
    response_mask,
    epsilon=0.2,
    epsilon_high=None,
    dual_clip_c=None,
    delta=None,
    **_,
) -> PolicyLossResult:
    """Clipped surrogate with optional clip-higher, dual clip and δ clip (module docstring)."""
    eps_low, eps_high = clip_range(epsilon, epsilon_high)
    check_dual_clip(dual_clip_c)
    check_delta(delta, eps_high)
    log_ratio = (logprobs - old_logprobs.detach()).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    ratio = log_ratio.exp()
    loss = clipped_surrogate(ratio, advantages, eps_low, eps_high, dual_clip_c, delta)
    metrics = surrogate_metrics(ratio, log_ratio, advantages, response_mask, eps_low, eps_high, dual_clip_c)
    return PolicyLossResult(loss_mat=loss * response_mask, metrics=metrics)
