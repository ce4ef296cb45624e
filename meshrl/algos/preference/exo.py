"""`exo_pair`: EXact Optimization of the alignment objective on pairs (eq. 16 of the paper).

With z = βh and ε = `label_smoothing` (TRL uses 1e-3 when ε = 0, since log ε must be finite):

    L = σ(z)·(log σ(z) − log(1 − ε)) + σ(−z)·(log σ(−z) − log ε)

the KL divergence from the model's pair distribution (σ(z), σ(−z)) to the smoothed labels
(1 − ε, ε): its minimum 0 sits at σ(z) = 1 − ε, where DPO's loss would keep pushing z → ∞.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from meshrl.algos.preference.common import DEFAULT_F_ALPHA, check_label_smoothing, log_ratios, margin
from meshrl.algos.registry import register_preference_loss

EXO_DEFAULT_SMOOTHING = 1e-3


@register_preference_loss(
    "exo_pair",
    paper=("Ji et al. 2024, Towards Efficient Exact Optimization of Language Model Alignment, arXiv:2402.00856"),
)
def exo_pair(
    *,
    policy_chosen,
    policy_rejected,
    ref_chosen,
    ref_rejected,
    beta,
    label_smoothing=0.0,
    f_divergence="reverse_kl",
    f_alpha=DEFAULT_F_ALPHA,
    **_,
):
    """KL((σ(βh), σ(−βh)) ‖ (1 − ε, ε)) (module docstring)."""
    check_label_smoothing(label_smoothing)
    eps = label_smoothing or EXO_DEFAULT_SMOOTHING
    z = beta * margin(*log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected), f_divergence, f_alpha)
    return torch.sigmoid(z) * (F.logsigmoid(z) - math.log(1.0 - eps)) + torch.sigmoid(-z) * (
        F.logsigmoid(-z) - math.log(eps)
    )
