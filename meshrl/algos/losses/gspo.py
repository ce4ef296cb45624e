"""`gspo`: Group Sequence Policy Optimization (Zheng et al. 2025, Qwen team).

The importance ratio is per sequence, the geometric mean of the token ratios:

    s_i = exp( (1/|o_i|) Σ_t m_t·(log π(y_t) − log π_old(y_t)) )

and the token-level form ("GSPO-token") keeps that value on every token while letting the
gradient flow through each token's own log-prob:

    s_{i,t} = sg[s_i] · π(y_t) / sg[π(y_t)]          (sg = stop-gradient)
    L_{i,t} = max(−A_{i,t}·s_{i,t}, −A_{i,t}·clip(s_{i,t}, 1 − ε_low, 1 + ε_high))

so ∂L/∂log π(y_t) = −A·s_i where unclipped. Sequence ratios sit very close to 1, hence
GSPO's own small clip range: defaults ε_low = 3e-4, ε_high = 4e-4 (the paper's); the
config's `epsilon`/`epsilon_high` override them. Dual clip is applied as in `ppo` if given.
Default aggregation `seq-mean-token-mean` (the paper's 1/G Σ_i 1/|o_i| Σ_t).
"""
from __future__ import annotations

from meshrl.algos.losses.common import (LOG_RATIO_BOUND, check_dual_clip, clip_range,
                                        clipped_surrogate, surrogate_metrics)
from meshrl.algos.masked import masked_mean
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult


@register_policy_loss("gspo", default_agg="seq-mean-token-mean", paper=(
    "Zheng et al. 2025, Group Sequence Policy Optimization, arXiv:2507.18071"))
def gspo(*, logprobs, old_logprobs, advantages, response_mask, epsilon=3e-4, epsilon_high=4e-4,
         dual_clip_c=None, **_) -> PolicyLossResult:
    """Sequence-level clipped surrogate in token form (module docstring)."""
    eps_low, eps_high = clip_range(epsilon, epsilon_high)
    check_dual_clip(dual_clip_c)
    token_log_ratio = logprobs - old_logprobs.detach()
    seq_log_ratio = masked_mean(token_log_ratio, response_mask, dim=-1)
    seq_log_ratio = seq_log_ratio.detach().clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    ratio = (seq_log_ratio.unsqueeze(-1) + logprobs - logprobs.detach()).exp()
    loss = clipped_surrogate(ratio, advantages, eps_low, eps_high, dual_clip_c)
    metrics = surrogate_metrics(ratio, token_log_ratio, advantages, response_mask, eps_low,
                                eps_high, dual_clip_c)
    return PolicyLossResult(loss_mat=loss * response_mask, metrics=metrics)
