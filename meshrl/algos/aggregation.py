"""Turn a per-token loss matrix [B, T] into one scalar, the same way at any micro-batching.

With m the 0/1 response mask, L the per-token loss, |o_i| = Σ_t m_it the length of
sequence i, N = number of sequences with at least one valid token, and C = `norm_len`:

| mode                       | loss                                  | used by                 |
|----------------------------|---------------------------------------|-------------------------|
| `token-mean`               | Σ_i Σ_t m·L / Σ_i |o_i|                | DAPO (Yu et al. 2025)   |
| `seq-mean-token-sum`       | (1/N) Σ_i Σ_t m·L                      | RLOO, REINFORCE         |
| `seq-mean-token-mean`      | (1/N) Σ_i (1/|o_i|) Σ_t m·L            | GRPO (Shao et al. 2024), GSPO |
| `seq-mean-token-sum-norm`  | (1/(N·C)) Σ_i Σ_t m·L                  | Dr. GRPO (Liu et al. 2025) |
| `token-sum`                | Σ_i Σ_t m·L                            | a plain sum (no normaliser) |

C defaults to `mask.shape[1]`; pass the configured maximum response length so that it is
the same constant in every micro-batch.

Micro-batching and data parallelism: each mode is numerator / denominator where both are
sums over sequences or tokens. A trainer computes `loss_numerator` per micro-batch and the
*global* denominator once (`loss_denominator` summed over micro-batches and all-reduced over
ranks), and backpropagates numerator / global denominator per micro-batch; the summed
gradient then equals that of `aggregate_loss` on the whole batch, for any split.

`token-sum` has no normaliser: its denominator is 1 for the *whole* batch, not a count, so
it is not summed over micro-batches (the split stays exact: Σ_k numerator_k / 1). With W
data-parallel ranks the loop's all-reduce makes it W while FSDP averages gradients over
ranks, so the update is the mean over ranks of each rank's token sum (what `loss.sum()`
under DDP gives).
"""

from __future__ import annotations

import torch

from meshrl.algos.checks import UnknownNameError, check_finite, check_mask, check_shapes

AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm", "token-sum")
# mode → (formula, who uses it), shown by `meshrl algos`
AGG_MODE_NOTES = {
    "token-mean": ("Σ m·L / Σ|o_i|", "Yu et al. 2025, DAPO, arXiv:2503.14476"),
    "seq-mean-token-sum": ("(1/N) Σ_i Σ_t m·L", "RLOO / REINFORCE (Ahmadian et al. 2024, arXiv:2402.14740)"),
    "seq-mean-token-mean": ("(1/N) Σ_i (1/|o_i|) Σ_t m·L", "Shao et al. 2024, GRPO, arXiv:2402.03300"),
    "seq-mean-token-sum-norm": ("(1/(N·C)) Σ_i Σ_t m·L", "Liu et al. 2025, Dr. GRPO, arXiv:2503.20783"),
    "token-sum": (
        "Σ_i Σ_t m·L, no normaliser",
        "a plain sum, e.g. with a constant in the lr; "
        "verl's loss_scale_factor and Dr. GRPO, arXiv:2503.20783, motivate it",
    ),
}


def list_agg_modes() -> list[str]:
    return list(AGG_MODES)


def _check(mask: torch.Tensor, mode: str, norm_len, loss_mat: torch.Tensor | None = None):
    if mode not in AGG_MODES:
        raise UnknownNameError(f"unknown loss_agg_mode {mode!r}; registered: {', '.join(AGG_MODES)}")
    check_shapes(loss_mat=loss_mat, response_mask=mask)
    if mask.dim() != 2:
        raise ValueError(f"response_mask must be [batch, response_len], got {tuple(mask.shape)}")
    check_mask("response_mask", mask)
    if norm_len is not None and not norm_len > 0:
        raise ValueError(f"norm_len must be > 0 (the constant of seq-mean-token-sum-norm), got {norm_len}")


def loss_numerator(
    loss_mat: torch.Tensor, mask: torch.Tensor, mode: str, norm_len: float | None = None
) -> torch.Tensor:
    """This micro-batch's share of the aggregate before division (keeps the graph).

    token-mean / seq-mean-token-sum / seq-mean-token-sum-norm: Σ_i Σ_t m·L;
    seq-mean-token-mean: Σ_i (Σ_t m·L) / |o_i| (sequences with no valid token add 0).
    """
    _check(mask, mode, norm_len, loss_mat)
    check_finite("loss_mat", loss_mat)
    per_sequence = (loss_mat * mask).sum(dim=-1)
    if mode == "seq-mean-token-mean":
        per_sequence = per_sequence / mask.sum(dim=-1).clamp_min(1.0)
    return per_sequence.sum()


def loss_denominator(mask: torch.Tensor, mode: str, norm_len: float | None = None) -> torch.Tensor:
    """This micro-batch's count to divide by (sum it over micro-batches and ranks).

    token-mean: valid tokens; seq-mean-*: sequences with ≥ 1 valid token;
    seq-mean-token-sum-norm: those sequences × norm_len (default mask.shape[1]);
    token-sum: 1 for the whole batch (not a count: take it once, do not sum it).
    """
    _check(mask, mode, norm_len)
    if mode == "token-sum":
        return torch.ones((), dtype=mask.dtype, device=mask.device)
    if mode == "token-mean":
        return mask.sum()
    sequences = (mask.sum(dim=-1) > 0).to(mask.dtype).sum()
    if mode == "seq-mean-token-sum-norm":
        return sequences * float(norm_len if norm_len is not None else mask.shape[1])
    return sequences


def aggregate_loss(
    loss_mat: torch.Tensor, mask: torch.Tensor, mode: str = "token-mean", norm_len: float | None = None
) -> torch.Tensor:
    """Scalar loss of the whole batch under `mode` (table in the module docstring); 0 if empty."""
    numerator = loss_numerator(loss_mat, mask, mode, norm_len)
    denominator = loss_denominator(mask, mode, norm_len)
    return numerator / denominator.clamp_min(torch.finfo(denominator.dtype).tiny)
