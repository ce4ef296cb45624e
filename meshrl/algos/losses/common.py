"""Pieces shared by the policy losses: the clipped surrogate and the standard metrics.

Metrics (0-dim detached tensors, fractions are over valid tokens):

- `clip_ratio/low`:  ratio < 1 − ε_low where that clip binds (PPO/GSPO: A < 0; CISPO: any A)
- `clip_ratio/high`: ratio > 1 + ε_high where that clip binds (PPO/GSPO: A > 0; CISPO: any A)
- `clip_ratio/dual`: A < 0 and ratio > c (the dual clip binds)
- `approx_kl`: k3 estimate of KL(π_old ‖ π) = mean(ρ − 1 − log ρ), ρ = π/π_old per token,
  with tokens sampled from π_old (Schulman 2020); ≥ 0 and low-variance, as in TRL.
- `ratio/min`, `ratio/mean`, `ratio/max`: the importance ratio the loss used.
"""

from __future__ import annotations

import torch

from meshrl.algos.masked import masked_mean, masked_min_max

# exp(±20) stays finite in fp32/bf16; beyond that a token's ratio is meaningless anyway.
LOG_RATIO_BOUND = 20.0


def clip_range(epsilon: float, epsilon_high: float | None) -> tuple[float, float]:
    """(ε_low, ε_high); ε_high defaults to ε (symmetric). Both must be > 0."""
    high = epsilon if epsilon_high is None else epsilon_high
    if not (epsilon > 0 and high > 0):
        raise ValueError(f"clip range must be positive: epsilon={epsilon}, epsilon_high={epsilon_high}")
    return float(epsilon), float(high)


def check_dual_clip(dual_clip_c: float | None) -> None:
    if dual_clip_c is not None and not dual_clip_c > 1.0:
        raise ValueError(f"dual_clip_c must be > 1 (Ye et al. 2020 use 3), got {dual_clip_c}")


def check_delta(delta: float | None, eps_high: float) -> None:
    if delta is not None and not delta > 1.0 + eps_high:
        raise ValueError(
            f"delta must be > 1 + epsilon_high = {1.0 + eps_high} (TRL's two-sided "
            f"clip caps the unclipped ratio above the clip range), got {delta}"
        )


def clipped_surrogate(
    ratio: torch.Tensor,
    advantages: torch.Tensor,
    eps_low: float,
    eps_high: float,
    dual_clip_c: float | None,
    delta: float | None = None,
) -> torch.Tensor:
    """PPO's per-token loss max(−A·ρ, −A·clip(ρ, 1−ε_low, 1+ε_high)), optionally dual-clipped.

    Dual clip (Ye et al. 2020, "Mastering Complex Control in MOBA Games with Deep RL"):
    where A < 0 the loss is further capped at −A·c, so a huge ratio on a bad action cannot
    blow up the update. Two-sided clip (TRL's `delta`, INTELLECT-2, arXiv:2505.07291): the
    unclipped term uses min(ρ, δ), so for A < 0 the loss is capped at −A·δ and its gradient
    stops above δ, the same idea as the dual clip.
    """
    unclipped = -advantages * (ratio if delta is None else ratio.clamp(max=delta))
    clipped = -advantages * ratio.clamp(1.0 - eps_low, 1.0 + eps_high)
    loss = torch.maximum(unclipped, clipped)
    if dual_clip_c is not None:
        loss = torch.where(advantages < 0, torch.minimum(loss, -advantages * dual_clip_c), loss)
    return loss


def approx_kl_k3(log_ratio: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """mean over valid tokens of ρ − 1 − log ρ, ρ = exp(log_ratio) (see module docstring)."""
    log_ratio = log_ratio.detach().clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    return masked_mean(torch.expm1(log_ratio) - log_ratio, mask)


def loss_metrics(*, ratio, log_ratio, mask, low, high, dual) -> dict[str, torch.Tensor]:
    """The standard metric dict from boolean clip masks [B, T] and the ratio used."""
    ratio = ratio.detach()
    lo, hi = masked_min_max(ratio, mask, empty=1.0)
    return {
        "clip_ratio/low": masked_mean(low.to(mask.dtype), mask),
        "clip_ratio/high": masked_mean(high.to(mask.dtype), mask),
        "clip_ratio/dual": masked_mean(dual.to(mask.dtype), mask),
        "approx_kl": approx_kl_k3(log_ratio, mask),
        "ratio/min": lo,
        "ratio/mean": masked_mean(ratio, mask),
        "ratio/max": hi,
    }


def surrogate_metrics(ratio, log_ratio, advantages, mask, eps_low, eps_high, dual_clip_c):
    """Metrics of the clipped surrogate: which clip bound each valid token hit."""
    r = ratio.detach()
    low = (r < 1.0 - eps_low) & (advantages < 0)
    high = (r > 1.0 + eps_high) & (advantages > 0)
    dual = (r > dual_clip_c) & (advantages < 0) if dual_clip_c is not None else torch.zeros_like(low)
    return loss_metrics(ratio=r, log_ratio=log_ratio, mask=mask, low=low, high=high, dual=dual)
