"""Per-token KL estimators between the policy and the reference model.

With log-ratio l = log p − log q (p = policy `logprobs`, q = reference `ref_logprobs`) and
tokens sampled from p, following Schulman, "Approximating KL Divergence" (2020):

- `k1`:  l                                  unbiased for KL(p‖q), high variance, can be < 0
- `k2`:  ½·l²                               biased, low variance, ≥ 0
- `k3`:  r − 1 − log r, r = q/p = exp(−l)    unbiased for KL(p‖q), low variance, ≥ 0 (default;
         GRPO's KL term, Shao et al. 2024). The log-ratio is clamped to
         ±K3_LOG_RATIO_BOUND (20) before exp so a token the reference finds very unlikely
         cannot overflow (exp(20) ≈ 4.9e8 is finite in fp32 and bf16).
- `abs`: |l|                                (verl's `abs`)
- `mse`: ½·l²                               (verl's `mse`; same value as k2)

Use as a loss term (`kl_in: loss`, GRPO) or subtract `kl_coef·k` from the per-token reward
(`kl_in: reward`, PPO / REINFORCE++).
"""
from __future__ import annotations

import torch

from meshrl.algos.checks import check_finite, check_mask, check_shapes
from meshrl.algos.registry import UnknownNameError

K3_LOG_RATIO_BOUND = 20.0


def _k1(log_ratio: torch.Tensor) -> torch.Tensor:
    """l; unbiased, high variance, can be < 0 (Schulman 2020, "Approximating KL Divergence", http://joschu.net/blog/kl-approx.html)."""
    return log_ratio


def _k2(log_ratio: torch.Tensor) -> torch.Tensor:
    """½·l²; biased, low variance, ≥ 0 (Schulman 2020, "Approximating KL Divergence", http://joschu.net/blog/kl-approx.html)."""
    return 0.5 * log_ratio.square()


def _k3(log_ratio: torch.Tensor) -> torch.Tensor:
    """exp(−l) − 1 + l; unbiased, low variance, ≥ 0 (Schulman 2020, "Approximating KL Divergence", http://joschu.net/blog/kl-approx.html; GRPO's KL term)."""
    reverse = (-log_ratio).clamp(-K3_LOG_RATIO_BOUND, K3_LOG_RATIO_BOUND)  # log(q/p)
    return torch.exp(reverse) - 1.0 - reverse


def _abs(log_ratio: torch.Tensor) -> torch.Tensor:
    """|l| (verl's `abs`)."""
    return log_ratio.abs()


KL_ESTIMATORS = {"k1": _k1, "k2": _k2, "k3": _k3, "abs": _abs, "mse": _k2}  # mse: verl's name for k2


def list_kl_estimators() -> list[str]:
    return sorted(KL_ESTIMATORS)


def kl_estimate(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, kind: str = "k3",
                response_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Per-token KL estimate [B, T] of the policy from the reference (see module docstring).

    With `response_mask` the result is zero on padding.
    """
    if kind not in KL_ESTIMATORS:
        raise UnknownNameError(f"unknown KL estimator {kind!r}; registered: "
                               f"{', '.join(list_kl_estimators())}")
    check_shapes(logprobs=logprobs, ref_logprobs=ref_logprobs, response_mask=response_mask)
    check_finite("logprobs", logprobs)
    check_finite("ref_logprobs", ref_logprobs)
    kl = KL_ESTIMATORS[kind](logprobs - ref_logprobs)
    if response_mask is not None:
        check_mask("response_mask", response_mask)
        kl = kl * response_mask
    return kl
