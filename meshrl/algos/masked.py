"""Masked reductions over valid tokens (mask = 1). Empty masks give 0, never NaN."""
from __future__ import annotations

import torch


def masked_sum(x: torch.Tensor, mask: torch.Tensor, dim=None) -> torch.Tensor:
    return (x * mask).sum() if dim is None else (x * mask).sum(dim=dim)


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim=None) -> torch.Tensor:
    """sum(x·m) / sum(m); 0 where sum(m) = 0."""
    count = mask.sum() if dim is None else mask.sum(dim=dim)
    return masked_sum(x, mask, dim) / count.clamp_min(1.0)


def masked_min_max(x: torch.Tensor, mask: torch.Tensor, empty: float = 0.0):
    """(min, max) of x over valid entries, detached; `empty` for both when none are valid."""
    x, valid = x.detach(), mask > 0
    inf = torch.tensor(float("inf"), dtype=x.dtype, device=x.device)
    lo, hi = torch.where(valid, x, inf).amin(), torch.where(valid, x, -inf).amax()
    has_any = valid.any()
    fill = torch.tensor(empty, dtype=x.dtype, device=x.device)
    return torch.where(has_any, lo, fill), torch.where(has_any, hi, fill)


def masked_whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """(x − mean) / sqrt(var + eps) over valid entries, zero on padding.

    var uses Bessel's correction (n − 1), as verl's `masked_whiten`. If every valid entry is
    equal the result is exactly 0 (no signal), never NaN.
    """
    mean = masked_mean(x, mask)
    count = mask.sum()
    var = masked_sum((x - mean) ** 2, mask) / (count - 1).clamp_min(1.0)
    lo, hi = masked_min_max(x, mask)
    whitened = (x - mean) * torch.rsqrt(var + eps) * mask
    return torch.where(lo == hi, torch.zeros_like(whitened), whitened)


def broadcast_over_tokens(per_sequence: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A [B] value copied onto every valid token of its sequence: [B, T], zero on padding."""
    return per_sequence.unsqueeze(-1) * mask
