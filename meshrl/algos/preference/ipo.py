"""`ipo`: Identity Preference Optimisation on length-averaged log-probs, as TRL computes it.

    h̄ = c/|y_w| − r/|y_l|,   L = (h̄ − 1/(2β))²

(c, r: chosen / rejected summed log-ratios; |y|: response token counts). The squared loss
regresses the margin onto 1/(2β) instead of pushing it to infinity like the logistic loss;
TRL averages the log-probs over tokens for IPO, so β keeps the same meaning at any length.
"""
from __future__ import annotations

from meshrl.algos.preference.common import log_ratios, require_lengths
from meshrl.algos.registry import register_preference_loss


@register_preference_loss("ipo", needs_lengths=True, paper=(
    "Azar et al. 2023, A General Theoretical Paradigm to Understand Learning from Human "
    "Preferences, arXiv:2310.12036"))
def ipo(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta, chosen_lengths=None,
        rejected_lengths=None, **_):
    """(c/|y_w| − r/|y_l| − 1/(2β))² (module docstring)."""
    n_chosen, n_rejected = require_lengths("ipo", chosen_lengths, rejected_lengths)
    chosen, rejected = log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    return (chosen / n_chosen - rejected / n_rejected - 1.0 / (2.0 * beta)) ** 2
