"""`discopop`: the log-ratio modulated loss found by LLM-driven discovery (DiscoPOP).

With z = β·h (h: `common.margin`) and the temperature τ = `discopop_tau` (paper: 0.05):

    m = σ(z/τ),   L = (1 − m)·(−log σ(z)) + m·exp(−z)

a blend of the logistic (DPO) and exponential losses, switching by the sign of the margin.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from meshrl.algos.preference.common import DEFAULT_F_ALPHA, log_ratios, margin
from meshrl.algos.registry import register_preference_loss


@register_preference_loss(
    "discopop",
    paper=(
        "Chris Lu et al. 2024, Discovering Preference Optimization Algorithms with and for Large "
        "Language Models, arXiv:2406.08414"
    ),
)
def discopop(
    *,
    policy_chosen,
    policy_rejected,
    ref_chosen,
    ref_rejected,
    beta,
    discopop_tau=0.05,
    f_divergence="reverse_kl",
    f_alpha=DEFAULT_F_ALPHA,
    **_,
):
    """(1 − σ(z/τ))·(−log σ(z)) + σ(z/τ)·exp(−z), z = βh (module docstring)."""
    if not discopop_tau > 0:
        raise ValueError(f"discopop_tau must be > 0, got {discopop_tau}")
    z = beta * margin(*log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected), f_divergence, f_alpha)
    modulation = torch.sigmoid(z / discopop_tau)
    return -F.logsigmoid(z) * (1.0 - modulation) + torch.exp(-z) * modulation
