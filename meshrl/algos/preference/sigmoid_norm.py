"""`sigmoid_norm`: DPO's logistic loss on length-normalised log-ratios (TRL's name).

    h̄ = c/|y_w| − r/|y_l|,   L = −log σ(β·h̄)

SimPO's length normalisation (Meng et al. 2024) with the reference kept, as TRL does (SimPO
itself drops the reference and adds a target margin γ).
"""
from __future__ import annotations

import torch.nn.functional as F

from meshrl.algos.preference.common import log_ratios, require_lengths
from meshrl.algos.registry import register_preference_loss


@register_preference_loss("sigmoid_norm", needs_lengths=True, paper=(
    "Meng et al. 2024, SimPO: Simple Preference Optimization with a Reference-Free Reward, "
    "arXiv:2405.14734"))
def sigmoid_norm(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta,
                 chosen_lengths=None, rejected_lengths=None, **_):
    """−log σ(β·(c/|y_w| − r/|y_l|)) (module docstring)."""
    n_chosen, n_rejected = require_lengths("sigmoid_norm", chosen_lengths, rejected_lengths)
    chosen, rejected = log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    return -F.logsigmoid(beta * (chosen / n_chosen - rejected / n_rejected))
