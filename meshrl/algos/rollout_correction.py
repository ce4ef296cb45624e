"""Correct for the mismatch between the rollout engine's and the trainer's log-probs.

vLLM (behaviour policy μ, `behaviour_logprobs`) and the trainer (π_old, `old_logprobs`)
compute slightly different probabilities for the same tokens (kernels, precision, a stale
weight version), so "on-policy" data is in fact off-policy. Yao et al. 2025, "Your Efficient
RL Framework Secretly Brings You Off-Policy RL Training" (truncated importance sampling,
TIS), reweight the per-token policy loss by the clipped ratio ρ = π_old/μ:

- `none`:     w = 1
- `token`:    w_t = min(exp(old_t − behaviour_t), cap)                   token-level TIS
- `sequence`: w_t = min(exp(Σ_t m·(old_t − behaviour_t)), cap) on every token of the sequence
- `mask`:     w_t = 1 if 1/cap ≤ exp(old_t − behaviour_t) ≤ cap else 0  (masked IS)

Weights are detached, zero on padding, and multiply the per-token loss before aggregation.

Metrics (fractions over valid tokens): `mismatch_kl` = mean k3 estimate of KL(μ ‖ π_old) =
ρ − 1 − log ρ (tokens were sampled from μ), `truncated_frac` (tokens whose weight hit the
cap), `masked_frac` (tokens zeroed by `mask`), `weight/mean`.
"""
from __future__ import annotations

import math

import torch

from meshrl.algos.checks import check_finite, check_mask, check_shapes
from meshrl.algos.masked import masked_mean
from meshrl.algos.checks import UnknownNameError

ROLLOUT_CORRECTION_MODES = ("none", "token", "sequence", "mask")


def _weights(log_ratio: torch.Tensor, mask: torch.Tensor, mode: str, log_cap: float):
    """(weights [B, T], truncated [B, T] bool, masked [B, T] bool) before padding is zeroed."""
    none = torch.zeros_like(log_ratio, dtype=torch.bool)
    if mode == "token":
        return log_ratio.clamp(max=log_cap).exp(), log_ratio > log_cap, none
    if mode == "sequence":
        seq = (log_ratio * mask).sum(dim=-1, keepdim=True).expand_as(log_ratio)
        return seq.clamp(max=log_cap).exp(), seq > log_cap, none
    if mode == "mask":
        outside = log_ratio.abs() > log_cap
        return (~outside).to(log_ratio.dtype), none, outside
    return torch.ones_like(log_ratio), none, none


def rollout_correction(old_logprobs: torch.Tensor, behaviour_logprobs: torch.Tensor,
                       response_mask: torch.Tensor, mode: str = "token", cap: float = 2.0):
    """Detached per-token loss weights [B, T] and mismatch metrics (module docstring)."""
    if mode not in ROLLOUT_CORRECTION_MODES:
        raise UnknownNameError(f"unknown rollout correction mode {mode!r}; registered: "
                               f"{', '.join(ROLLOUT_CORRECTION_MODES)}")
    if not cap > 1.0:
        raise ValueError(f"rollout correction cap must be > 1, got {cap}")
    check_shapes(old_logprobs=(old_logprobs, "B T"), behaviour_logprobs=(behaviour_logprobs, "B T"),
                 response_mask=(response_mask, "B T"))
    check_mask("response_mask", response_mask)
    check_finite("old_logprobs", old_logprobs)
    check_finite("behaviour_logprobs", behaviour_logprobs)
    log_ratio = (old_logprobs - behaviour_logprobs).detach()
    weights, truncated, masked = _weights(log_ratio, response_mask, mode, math.log(cap))
    weights = weights * response_mask
    bounded = log_ratio.clamp(-20.0, 20.0)  # exp stays finite for the KL metric
    metrics = {
        "mismatch_kl": masked_mean(torch.expm1(bounded) - bounded, response_mask),
        "truncated_frac": masked_mean(truncated.to(weights.dtype), response_mask),
        "masked_frac": masked_mean(masked.to(weights.dtype), response_mask),
        "weight/mean": masked_mean(weights, response_mask),
    }
    return weights, metrics
