"""`mask`: masked importance sampling — keep a token with weight 1 while its ratio is near 1.

    w_t = 1 if 1/C ≤ exp(d_t) ≤ C else 0,    d_t = log π_old(y_t) − log μ(y_t)

A token the trainer and the engine disagree on by more than a factor C is dropped from the
loss, the rest are not reweighted (verl's rejection `token_k1` at C, as a weight; TRL's
`token_mask` keeps the ratio's value instead: that is `icepop`). Yao et al. 2025 (MIS);
Liu, Li et al. 2025, "When Speed Kills Stability" (https://richardli.xyz/rl-collapse).
"""

from __future__ import annotations

import math

from meshrl.algos.correction.registry import register_rollout_weights
from meshrl.algos.correction.truncated import nothing


@register_rollout_weights(
    "mask",
    paper=(
        "Liu, Li et al. 2025, When Speed Kills Stability: Demystifying RL Collapse from the "
        "Training-Inference Mismatch, https://richardli.xyz/rl-collapse"
    ),
)
def masked_is(log_ratio, mask, *, cap=2.0, **_):
    """1 inside [1/C, C], 0 outside."""
    outside = log_ratio.abs() > math.log(cap)
    return (~outside).to(log_ratio.dtype), nothing(log_ratio), outside
