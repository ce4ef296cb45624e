"""`aot` / `aot_unpaired`: Alignment via Optimal Transport (distributional preference).

Both sort over the batch (the optimal 1-D transport plan pairs the order statistics), then
apply the label-smoothed logistic loss to the sorted differences δ:

    L = −(1 − ε)·log σ(βδ) − ε·log σ(−βδ)

- `aot` (paired): δ = sort(log π(y_w) − log π(y_l)) − sort(log π_ref(y_w) − log π_ref(y_l))
- `aot_unpaired`: δ = sort(c) − sort(r), c / r the chosen / rejected log-ratios sorted
  separately (needs no pairing; TRL's older name for it is `aot_pair`)

Each row of the result belongs to a rank, not to the input pair at that row.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from meshrl.algos.preference.common import check_label_smoothing, log_ratios
from meshrl.algos.registry import register_preference_loss

PAPER = "Melnyk et al. 2024, Distributional Preference Alignment of LLMs via Optimal Transport, arXiv:2406.05882"


def _smoothed_logistic(delta, beta, label_smoothing):
    check_label_smoothing(label_smoothing)
    return -(1.0 - label_smoothing) * F.logsigmoid(beta * delta) - label_smoothing * F.logsigmoid(-beta * delta)


@register_preference_loss("aot", per_pair=False, paper=PAPER)
def aot(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta, label_smoothing=0.0, **_):
    """logistic loss on sort(policy margins) − sort(reference margins) (module docstring)."""
    delta = (
        torch.sort(policy_chosen - policy_rejected, dim=0).values - torch.sort(ref_chosen - ref_rejected, dim=0).values
    )
    return _smoothed_logistic(delta, beta, label_smoothing)


@register_preference_loss("aot_unpaired", per_pair=False, paper=PAPER)
def aot_unpaired(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta, label_smoothing=0.0, **_):
    """logistic loss on sort(chosen log-ratios) − sort(rejected log-ratios) (module docstring)."""
    chosen, rejected = log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    delta = torch.sort(chosen, dim=0).values - torch.sort(rejected, dim=0).values
    return _smoothed_logistic(delta, beta, label_smoothing)
