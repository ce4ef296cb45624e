"""`apo_zero` / `apo_down`: Anchored Preference Optimisation.

With c, r the chosen / rejected log-ratios:

- `apo_zero`: L = (1 − σ(βc)) + σ(βr)        raise the chosen likelihood, lower the rejected
  one (for chosen answers better than the model's own outputs)
- `apo_down`: L = σ(βc) + (1 − σ(β(c − r)))  lower both, the rejected more (for chosen
  answers worse than the model's own outputs)
"""

from __future__ import annotations

import torch

from meshrl.algos.preference.common import log_ratios
from meshrl.algos.registry import register_preference_loss

PAPER = (
    "D'Oosterlinck et al. 2024, Anchored Preference Optimization and Contrastive Revisions: "
    "Addressing Underspecification in Alignment, arXiv:2408.06266"
)


@register_preference_loss("apo_zero", paper=PAPER)
def apo_zero(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta, **_):
    """(1 − σ(βc)) + σ(βr) (module docstring)."""
    chosen, rejected = log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    return (1.0 - torch.sigmoid(beta * chosen)) + torch.sigmoid(beta * rejected)


@register_preference_loss("apo_down", paper=PAPER)
def apo_down(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta, **_):
    """σ(βc) + (1 − σ(β(c − r))) (module docstring)."""
    chosen, rejected = log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    return torch.sigmoid(beta * chosen) + (1.0 - torch.sigmoid(beta * (chosen - rejected)))
