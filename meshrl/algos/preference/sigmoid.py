"""`sigmoid` (DPO) and `robust` (rDPO): the logistic loss on the margin h.

With h from `common.margin` (f-divergence option) and label smoothing ε:

- `sigmoid`: −(1 − ε)·log σ(βh) − ε·log σ(−βh)    (DPO; ε > 0 is cDPO, Mitchell 2023)
- `robust`:  (−(1 − ε)·log σ(βh) + ε·log σ(−βh)) / (1 − 2ε)   (unbiased under a flip
             rate ε of the preference labels; needs ε < ½)
"""

from __future__ import annotations

import torch.nn.functional as F

from meshrl.algos.preference.common import DEFAULT_F_ALPHA, check_label_smoothing, log_ratios, margin
from meshrl.algos.registry import register_preference_loss


@register_preference_loss(
    "sigmoid",
    paper=(
        "Rafailov et al. 2023, Direct Preference Optimization: Your Language Model is Secretly a "
        "Reward Model, arXiv:2305.18290"
    ),
)
def sigmoid(
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
    """−(1 − ε)·log σ(βh) − ε·log σ(−βh) (module docstring)."""
    check_label_smoothing(label_smoothing)
    h = margin(*log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected), f_divergence, f_alpha)
    return -(1.0 - label_smoothing) * F.logsigmoid(beta * h) - label_smoothing * F.logsigmoid(-beta * h)


@register_preference_loss(
    "robust",
    paper=(
        "Chowdhury et al. 2024, Provably Robust DPO: Aligning Language Models with Noisy Feedback, arXiv:2403.00409"
    ),
)
def robust(
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
    """(−(1 − ε)·log σ(βh) + ε·log σ(−βh)) / (1 − 2ε) (module docstring)."""
    check_label_smoothing(label_smoothing, upper=0.5)
    h = margin(*log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected), f_divergence, f_alpha)
    return (-(1.0 - label_smoothing) * F.logsigmoid(beta * h) + label_smoothing * F.logsigmoid(-beta * h)) / (
        1.0 - 2.0 * label_smoothing
    )
