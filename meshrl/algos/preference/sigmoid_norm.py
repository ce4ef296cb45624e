"""`sigmoid_norm`: DPO's logistic loss on length-normalised log-ratios (TRL's name).

    h̄ = s(c)/|y_w| − s(r)/|y_l|,   L = −log σ(β·h̄)

(s: the f-divergence's score, s(x) = x for the default reverse KL, `common.score`). SimPO's
length normalisation (Meng et al. 2024) with the reference kept, as TRL does (SimPO itself
drops the reference and adds a target margin γ).
"""

from __future__ import annotations

import torch.nn.functional as F

from meshrl.algos.preference.common import DEFAULT_F_ALPHA, length_averaged_margin, log_ratios
from meshrl.algos.registry import register_preference_loss


@register_preference_loss(
    "sigmoid_norm",
    needs_lengths=True,
    paper=("Meng et al. 2024, SimPO: Simple Preference Optimization with a Reference-Free Reward, arXiv:2405.14734"),
)
def sigmoid_norm(
    *,
    policy_chosen,
    policy_rejected,
    ref_chosen,
    ref_rejected,
    beta,
    chosen_lengths=None,
    rejected_lengths=None,
    f_divergence="reverse_kl",
    f_alpha=DEFAULT_F_ALPHA,
    **_,
):
    """−log σ(β·(s(c)/|y_w| − s(r)/|y_l|)) (module docstring)."""
    h = length_averaged_margin(
        "sigmoid_norm",
        *log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected),
        chosen_lengths,
        rejected_lengths,
        f_divergence,
        f_alpha,
    )
    return -F.logsigmoid(beta * h)
