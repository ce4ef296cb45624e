"""Masked reductions over valid tokens (mask = 1). Empty masks give 0, never NaN.

`pack_valid` / `unpack_valid` move each row's valid tokens to the front and back: a
multi-turn episode's model tokens, with the observations between them removed, are the
sequence position-wise estimators compare across a group ("the k-th token the model wrote").
"""

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


def _valid_positions(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(valid [B, T] bool, each valid token's rank among its row's valid tokens [B, T])."""
    valid = mask > 0
    return valid, (valid.long().cumsum(dim=-1) - 1).clamp(min=0)


def pack_valid(x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[B, T] → ([B, N] each row's valid entries first, in order, 0 after; its 0/1 mask),
    N = the most valid entries of any row."""
    valid, rank = _valid_positions(mask)
    width = int(valid.sum(dim=-1).max().item()) if valid.numel() else 0
    rows = torch.arange(x.shape[0], device=x.device).unsqueeze(-1).expand_as(x)
    packed = x.new_zeros((x.shape[0], width))
    packed[rows[valid], rank[valid]] = x[valid]
    packed_mask = (torch.arange(width, device=x.device) < valid.sum(dim=-1, keepdim=True)).to(mask.dtype)
    return packed, packed_mask


def unpack_valid(packed: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The inverse of `pack_valid`: [B, N] back to the valid cells of `mask` [B, T], 0 elsewhere."""
    valid, rank = _valid_positions(mask)
    if packed.shape[1] == 0:
        return torch.zeros_like(mask, dtype=packed.dtype)
    return packed.gather(1, rank.clamp(max=packed.shape[1] - 1)) * valid.to(packed.dtype)
