"""`sft`: the negative log-likelihood of the chosen responses, a term to add to a preference loss.

    L = −Σ_i Σ_t log π(y_w,i,t) / Σ_i |y_w,i|      (the same value on every pair of the batch)

the token-mean NLL of the chosen responses over the (micro-)batch, as TRL 1.16.0's
`loss_type="sft"` (which replaced its `rpo_alpha`): `dpo_loss_type: [sigmoid, sft]` with
`dpo_loss_weights: [1.0, α]` is RPO's DPO + α·NLL. It reads the chosen log-probs without
LD-DPO's weighting (`policy_chosen_full`), needs no reference and so ignores the f-divergence.
"""

from __future__ import annotations

from meshrl.algos.preference.common import require_lengths
from meshrl.algos.registry import register_preference_loss


@register_preference_loss(
    "sft",
    needs_lengths=True,
    uses_reference=False,
    paper=("Pang et al. 2024, Iterative Reasoning Preference Optimization, arXiv:2404.19733 (RPO's NLL term)"),
)
def sft(*, policy_chosen, policy_chosen_full=None, chosen_lengths=None, rejected_lengths=None, **_):
    """−Σ log π(y_w) / Σ|y_w| over the batch, on every pair (module docstring)."""
    n_chosen, _ = require_lengths("sft", chosen_lengths, rejected_lengths)
    summed = policy_chosen if policy_chosen_full is None else policy_chosen_full
    return (-summed.sum() / n_chosen.sum()).expand_as(summed)
