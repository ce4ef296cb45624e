"""`luspo`: Length-Unbiased Sequence Policy Optimization.

GSPO's sequence-level clipped surrogate (see `gspo`), but each sequence's loss is weighted
by its length |o_i| instead of averaged over its tokens, which removes GSPO's bias towards
shorter responses:

    L = 1/G Σ_i |o_i| · ℓ_i,   ℓ_i the GSPO loss of sequence i

Here that is the same per-token loss as `gspo` with default aggregation
`seq-mean-token-sum` (Σ_t of a value constant over the sequence is |o_i|·ℓ_i), as TRL's
`loss_type="luspo"` computes `(per_token_loss * mask.sum(1, keepdim=True)).mean()`.
Options as `gspo` (clip range defaults 3e-4 / 4e-4, `seq_log_ratio_cap` 10).
"""

from __future__ import annotations

from meshrl.algos.losses.gspo import GSPO_SEQ_LOG_RATIO_CAP, gspo_loss
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult


@register_policy_loss(
    "luspo",
    default_agg="seq-mean-token-sum",
    level="sequence",
    paper=(
        "Liu et al. 2026, Length-Unbiased Sequence Policy Optimization: Revealing and Controlling "
        "Response Length Variation in RLVR, arXiv:2602.05261"
    ),
)
def luspo(
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
    """GSPO's loss per token, summed over each sequence (module docstring)."""
    return gspo_loss(
        logprobs, old_logprobs, advantages, response_mask, epsilon, epsilon_high, dual_clip_c, delta, seq_log_ratio_cap
    )
