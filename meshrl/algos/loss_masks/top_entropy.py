"""`top_entropy`: train only on the highest-entropy tokens ("forking tokens").

With H_t the entropy of the policy's next-token distribution at each model token, over the
model tokens of the micro-batch the loss sees:

    τ = quantile_{1−ρ}(H),     keep_t = H_t ≥ τ

ρ = `quantile` (TRL's `top_entropy_quantile`, default 1.0 = every token; the paper uses
0.2; 0.0 keeps only the highest). The quantile interpolates linearly (torch.quantile, as
TRL). The entropy bonus is restricted to the same tokens. TRL gathers the entropies of every
rank's micro-batch; here the quantile is this rank's (a collective per micro-batch would hang
when ranks hold different numbers of micro-batches): the same on one rank, per rank on
several. Wang et al. 2025, "Beyond the
80/20 Rule: High-Entropy Minority Tokens Drive Effective Reinforcement Learning for LLM
Reasoning", arXiv:2506.01939.
"""

from __future__ import annotations

import torch

from meshrl.algos.loss_masks.registry import register_loss_mask


@register_loss_mask(
    "top_entropy",
    also_entropy=True,
    paper=(
        "Wang et al. 2025, Beyond the 80/20 Rule: High-Entropy Minority Tokens Drive Effective "
        "Reinforcement Learning for LLM Reasoning, arXiv:2506.01939 (TRL's top_entropy_quantile)"
    ),
)
def top_entropy(*, entropy, response_mask, quantile=1.0, **_):
    """H_t ≥ the quantile at 1 − ρ of the micro-batch's model-token entropies."""
    if not 0.0 <= quantile <= 1.0:
        raise ValueError(f"loss_masks.top_entropy.quantile must be in [0, 1], got {quantile}")
    valid = response_mask > 0
    values = entropy.detach()[valid].float()
    if values.numel() == 0:
        return torch.zeros_like(valid)
    threshold = torch.quantile(values, 1.0 - quantile).to(entropy.dtype)
    return (entropy.detach() >= threshold) & valid
