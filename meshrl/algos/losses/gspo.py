"""`gspo`: Group Sequence Policy Optimization (Zheng et al. 2025, Qwen team).

The importance ratio is per sequence, the geometric mean of the token ratios:

    s_i = exp( (1/|o_i|) Σ_t m_t·(log π(y_t) − log π_old(y_t)) )

and the token-level form ("GSPO-token") keeps that value on every token while letting the
gradient flow through each token's own log-prob:

    s_{i,t} = sg[s_i] · π(y_t) / sg[π(y_t)]          (sg = stop-gradient)
    L_{i,t} = max(−A_{i,t}·s_{i,t}, −A_{i,t}·clip(s_{i,t}, 1 − ε_low, 1 + ε_high))

so ∂L/∂log π(y_t) = −A·s_i where unclipped. Sequence ratios sit very close to 1, hence
GSPO's own small clip range: defaults ε_low = 3e-4, ε_high = 4e-4 (the paper's); the
config's `epsilon`/`epsilon_high` override them. Dual clip and TRL's δ clip apply as in `ppo`.

Sequence-ratio cap (`seq_log_ratio_cap`, default 10, as verl): log s_{i,t} is clamped to at
most the cap before exp, so s ≤ e^10 ≈ 22026 and, like verl's `torch.clamp(..., max=10.0)`,
the gradient is zero where the cap binds (a sequence that far off-policy teaches nothing
trustworthy). None = no cap (only the ±20 overflow guard on the detached value).
Default aggregation `seq-mean-token-mean` (the paper's 1/G Σ_i 1/|o_i| Σ_t).
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
from meshrl.algos.masked import masked_mean
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult

GSPO_SEQ_LOG_RATIO_CAP = 10.0  # verl's compute_policy_loss_gspo


def sequence_ratio(logprobs, old_logprobs, response_mask, cap):
    """(s_{i,t} [B, T] with sg[s_i] as value and each token's gradient, token log-ratios)."""
    token_log_ratio = logprobs - old_logprobs.detach()
    seq_log_ratio = masked_mean(token_log_ratio, response_mask, dim=-1)
    seq_log_ratio = seq_log_ratio.detach().clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    log_ratio = seq_log_ratio.unsqueeze(-1) + logprobs - logprobs.detach()
    if cap is not None:
        log_ratio = log_ratio.clamp(max=cap)  # clamp's gradient is 0 where it binds
    return log_ratio.exp(), token_log_ratio


def gspo_loss(
    logprobs, old_logprobs, advantages, response_mask, epsilon, epsilon_high, dual_clip_c, delta, seq_log_ratio_cap
) -> PolicyLossResult:
    """The GSPO-token clipped surrogate (module docstring); shared with `luspo`."""
    eps_low, eps_high = clip_range(epsilon, epsilon_high)
    check_dual_clip(dual_clip_c)
    check_delta(delta, eps_high)
    ratio, token_log_ratio = sequence_ratio(logprobs, old_logprobs, response_mask, seq_log_ratio_cap)
    loss = clipped_surrogate(ratio, advantages, eps_low, eps_high, dual_clip_c, delta)
    metrics = surrogate_metrics(ratio, token_log_ratio, advantages, response_mask, eps_low, eps_high, dual_clip_c)
    return PolicyLossResult(loss_mat=loss * response_mask, metrics=metrics)


@register_policy_loss(
    "gspo",
    default_agg="seq-mean-token-mean",
    level="sequence",
    paper=("Zheng et al. 2025, Group Sequence Policy Optimization, arXiv:2507.18071"),
)
def gspo(
    *,
    logprobs,
    old_logprobs,
    advantages,
    response_mask,
    epsilon=3e-4,
    epsilon_high=4e-4,
    dual_clip_c=None,
    delta=None,
    seq_log_ratio_cap=GSPO_SEQ_LOG_RATIO_CAP,
    **_,
) -> PolicyLossResult:
    """Sequence-level clipped surrogate in token form (module docstring)."""
    return gspo_loss(
        logprobs, old_logprobs, advantages, response_mask, epsilon, epsilon_high, dual_clip_c, delta, seq_log_ratio_cap
    )
