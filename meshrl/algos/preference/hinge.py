"""`hinge`: SLiC's hinge loss on the margin, L = max(0, 1 − β·h) (h: `common.margin`)."""

from __future__ import annotations

import torch

from meshrl.algos.preference.common import DEFAULT_F_ALPHA, log_ratios, margin
from meshrl.algos.registry import register_preference_loss


@register_preference_loss(
    "hinge", paper=("Zhao et al. 2023, SLiC-HF: Sequence Likelihood Calibration with Human Feedback, arXiv:2305.10425")
)
def hinge(
    *,
    policy_chosen,
    policy_rejected,
    ref_chosen,
    ref_rejected,
    beta,
    f_divergence="reverse_kl",
    f_alpha=DEFAULT_F_ALPHA,
    **_,
):
    """max(0, 1 − βh)."""
    h = margin(*log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected), f_divergence, f_alpha)
    return torch.relu(1.0 - beta * h)
