"""Rollout-correction weights at the level of the policy loss's importance ratio.

Token-level correction weights w_t (`token`, `mask`, IcePop) multiply a token-level loss
token by token. A sequence-level loss (GSPO, GMPO, LUSPO: registered with
`level="sequence"`) has one importance ratio per sequence, the geometric mean of its token
ratios; multiplying its per-token loss by each token's own w_t would scale the row by the
*arithmetic* mean of its weights instead. Such a loss gets one weight per row, the geometric
mean over the model's tokens (the loss mask; observation holes and padding excluded):

    w̄_i = exp( Σ_t m_it·log w_it / Σ_t m_it )       on every model token of row i

as verl's `geo_mean` loss does ("For geo_mean, IS weights ... need to be aggregated to
sequence level using geometric mean"; Zhao et al. 2025, GMPO, arXiv:2507.20673). A row with
a zero weight (a token rejected by `mask`/IcePop) gets w̄ = 0 exactly; verl takes
log(w + 1e-10) and leaves (1e-10)^(1/|o_i|), e.g. 4.6e-4 for three tokens. Weights that
are already one per sequence (`sequence` mode) are returned unchanged.
"""

from __future__ import annotations

import torch

LEVELS = ("token", "sequence")


def sequence_geometric_mean(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """w̄ [B, T]: each row's geometric mean over its valid tokens, on those tokens, 0 elsewhere."""
    valid = mask > 0
    log_w = torch.where(valid, weights.clamp_min(0.0).log(), torch.zeros_like(weights))
    count = valid.sum(dim=-1, keepdim=True).clamp_min(1).to(weights.dtype)
    mean_log = log_w.sum(dim=-1, keepdim=True) / count  # −inf where a weight is 0
    return torch.where(valid, mean_log.exp().expand_as(weights), torch.zeros_like(weights))


def weights_at_level(weights: torch.Tensor | None, mask: torch.Tensor, level: str) -> torch.Tensor | None:
    """The correction weights a loss whose ratio lives at `level` multiplies by (module docstring)."""
    if level not in LEVELS:
        raise ValueError(f"importance-ratio level {level!r}; expected one of {', '.join(LEVELS)}")
    if weights is None or level == "token":
        return weights
    return sequence_geometric_mean(weights.detach(), mask)
