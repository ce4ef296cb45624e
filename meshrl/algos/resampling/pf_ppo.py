"""PF-PPO (policy filtration): redraw the batch's rows with probability from their reward, so
the update sees more of the samples whose reward is most informative.

With s_i a sequence's reward (before any KL penalty) and a reweighting method:

- `pow`:        w_i = |s_i|^p                       (p = `weight_pow`, default 2)
- `max_min`:    w_i = 1 where s_i is the batch's max or min, else 0
- `max_random`: w_i = 0.4 where s_i is the batch's max, else 0.1

B rows are drawn with replacement with probability ∝ w_i + 1e-8 (so a batch of zero
weights is drawn uniformly), advantages and every other per-row tensor travelling with
their row. As verl 0.9.1's `compute_pf_ppo_reweight_data` (which applies it after GAE's
advantages; here after any estimator's). Shen et al. 2024, "Policy Filtration in RLHF to
Fine-Tune LLM for Code Generation", arXiv:2409.06957.
"""

from __future__ import annotations

import torch

from meshrl.algos.resampling.registry import REWEIGHTINGS, register_reweighting

PAPER = (
    "Shen et al. 2024, Policy Filtration in RLHF to Fine-Tune LLM for Code Generation, arXiv:2409.06957 (verl's pf_ppo)"
)


@register_reweighting("pow", paper=PAPER)
def pow_weights(scores, *, weight_pow=2.0, **_):
    """|s|^p."""
    return scores.abs().pow(weight_pow)


@register_reweighting("max_min", paper=PAPER)
def max_min(scores, **_):
    """1 at the batch's max and min reward, else 0."""
    extreme = (scores == scores.max()) | (scores == scores.min())
    return extreme.to(scores.dtype)


@register_reweighting("max_random", paper=PAPER)
def max_random(scores, **_):
    """0.4 at the batch's max reward, else 0.1."""
    return torch.where(scores == scores.max(), 0.4, 0.1).to(scores.dtype)


def pf_ppo_rows(scores: torch.Tensor, method: str, generator: torch.Generator | None = None, **options) -> torch.Tensor:
    """The row indices [B] of the redrawn batch (module docstring)."""
    weights = REWEIGHTINGS.get(method)(scores.detach().float(), **options)
    weights = torch.clamp(weights + 1e-8, min=1e-8)
    draws = torch.multinomial(weights.cpu(), len(scores), replacement=True, generator=generator)
    return draws.to(scores.device)
