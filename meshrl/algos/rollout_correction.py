"""Correct for the mismatch between the rollout engine's and the trainer's log-probs.

vLLM (behaviour policy μ, `behaviour_logprobs`) and the trainer (π_old, `old_logprobs`)
compute slightly different probabilities for the same tokens (kernels, precision, a stale
weight version), so "on-policy" data is in fact off-policy. Two remedies, both on
d_t = log π_old(y_t) − log μ(y_t) over the model's tokens (`meshrl/algos/correction/`):

- importance weights w (`rollout_correction`, `algorithm.rollout_correction.mode`): a
  registered mode — `token` / `sequence` truncated IS (Yao et al. 2025), `mask` (masked IS),
  `icepop` / `icepop_sequence` (IcePop: ρ inside [lower, cap], else 0), `none` — optionally
  divided by their batch mean (`batch_normalize`); they multiply the per-token policy loss;
- rejection (`rejection_mask`, `.reject`): registered divergence criteria (verl's token_k1
  ... seq_max_k3) whose failing tokens or sequences leave the loss mask altogether.

Weights are detached, zero on padding and holes. Metrics (fractions over model tokens):
`mismatch_kl` = mean k3 estimate of KL(μ ‖ π_old) = ρ − 1 − log ρ (tokens were sampled from
μ), `truncated_frac` (weights cut at the cap), `masked_frac` (weights zeroed),
`weight/mean` (before batch normalisation), `batch_norm_factor`, `rejected_frac` and one
`reject/<criterion>` fraction per criterion.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import torch

from meshrl.algos import correction as _correction  # noqa: F401  (registers the parts)
from meshrl.algos.checks import check_finite, check_mask, check_shapes
from meshrl.algos.correction.batch_norm import batch_normalize as normalized
from meshrl.algos.correction.registry import REJECTIONS, ROLLOUT_WEIGHTS
from meshrl.algos.masked import masked_mean

ROLLOUT_CORRECTION_MODES = tuple(ROLLOUT_WEIGHTS.names())
REJECTION_CRITERIA = tuple(REJECTIONS.names())


def checked_log_ratio(old_logprobs, behaviour_logprobs, response_mask) -> torch.Tensor:
    """d = log π_old − log μ, detached, after the shape, mask and finiteness checks."""
    check_shapes(
        old_logprobs=(old_logprobs, "B T"),
        behaviour_logprobs=(behaviour_logprobs, "B T"),
        response_mask=(response_mask, "B T"),
    )
    check_mask("response_mask", response_mask)
    check_finite("old_logprobs", old_logprobs)
    check_finite("behaviour_logprobs", behaviour_logprobs)
    return (old_logprobs - behaviour_logprobs).detach()


def rollout_correction(
    old_logprobs: torch.Tensor,
    behaviour_logprobs: torch.Tensor,
    response_mask: torch.Tensor,
    mode: str = "token",
    cap: float = 2.0,
    *,
    lower: float | None = None,
    batch_normalize: bool = False,
    all_reduce: Callable[[torch.Tensor], torch.Tensor] | None = None,
):
    """Detached per-token loss weights [B, T] and mismatch metrics (module docstring)."""
    fn = ROLLOUT_WEIGHTS.get(mode)
    if not cap > 1.0:
        raise ValueError(f"rollout correction cap must be > 1, got {cap}")
    if lower is not None and not 0.0 < lower < cap:
        raise ValueError(f"rollout correction lower bound must be in (0, cap={cap}), got {lower}")
    log_ratio = checked_log_ratio(old_logprobs, behaviour_logprobs, response_mask)
    weights, truncated, masked = fn(log_ratio, response_mask, cap=cap, lower=lower)
    weights = weights * response_mask
    bounded = log_ratio.clamp(-20.0, 20.0)  # exp stays finite for the KL metric
    metrics = {
        "mismatch_kl": masked_mean(torch.expm1(bounded) - bounded, response_mask),
        "truncated_frac": masked_mean(truncated.to(weights.dtype), response_mask),
        "masked_frac": masked_mean(masked.to(weights.dtype), response_mask),
        "weight/mean": masked_mean(weights, response_mask),
    }
    if batch_normalize:
        weights, metrics["batch_norm_factor"] = normalized(weights, response_mask, fn.level, all_reduce)
    return weights, metrics


def bounds(name: str, threshold, two_sided: bool) -> tuple[float | None, float]:
    """(lower, upper) a criterion's statistic must lie in: log ratio bounds for k1 statistics."""
    if two_sided:
        low, high = (1.0 / threshold, threshold) if isinstance(threshold, (int, float)) else threshold
        if not 0.0 < low <= high:
            raise ValueError(f"rollout_correction.reject.{name} needs 0 < lower <= upper, got {threshold}")
        return math.log(low), math.log(high)
    if not isinstance(threshold, (int, float)) or not threshold > 0:
        raise ValueError(f"rollout_correction.reject.{name} takes one positive upper bound, got {threshold!r}")
    return None, float(threshold)


def kept_by(name: str, threshold, log_ratio, mask) -> torch.Tensor:
    """[B, T] bool: the tokens criterion `name` keeps (a sequence criterion keeps whole rows)."""
    fn = REJECTIONS.get(name)
    low, high = bounds(name, threshold, fn.two_sided)
    statistic = fn(log_ratio, mask)
    keep = (statistic <= high) if low is None else (statistic >= low) & (statistic <= high)
    return keep if fn.level == "token" else keep.unsqueeze(-1).expand_as(log_ratio)


def rejection_mask(
    old_logprobs: torch.Tensor,
    behaviour_logprobs: torch.Tensor,
    response_mask: torch.Tensor,
    reject: Mapping[str, object],
):
    """(the loss mask less the rejected tokens [B, T], rejection metrics) (module docstring)."""
    log_ratio = checked_log_ratio(old_logprobs, behaviour_logprobs, response_mask)
    keep = torch.ones_like(log_ratio, dtype=torch.bool)
    metrics = {}
    for name, threshold in reject.items():
        kept = kept_by(name, threshold, log_ratio, response_mask)
        metrics[f"reject/{name}"] = masked_mean((~kept).to(log_ratio.dtype), response_mask)
        keep &= kept
    metrics["rejected_frac"] = masked_mean((~keep).to(log_ratio.dtype), response_mask)
    return response_mask * keep.to(response_mask.dtype), metrics
