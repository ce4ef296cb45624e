"""`sppo_hard`: Self-Play Preference Optimisation with hard (0/1) win probabilities.

    L = (c − 1/(2β))² + (r + 1/(2β))²

(c, r: chosen / rejected log-ratios): each response's log-ratio is regressed onto ±1/(2β),
its target for a win probability of 1 and 0 (the paper's P̂ − ½ with η = β⁻¹; TRL's form).
"""

from __future__ import annotations

from meshrl.algos.preference.common import log_ratios
from meshrl.algos.registry import register_preference_loss


@register_preference_loss(
    "sppo_hard",
    paper=("Wu et al. 2024, Self-Play Preference Optimization for Language Model Alignment, arXiv:2405.00675"),
)
def sppo_hard(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta, **_):
    """(c − 1/(2β))² + (r + 1/(2β))² (module docstring)."""
    chosen, rejected = log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    return (chosen - 0.5 / beta) ** 2 + (rejected + 0.5 / beta) ** 2
