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

Straight-through variants (value of one estimator, gradient of another; verl's `k1+`/`k3+`):

- `k1+`: value k1, gradient of k2        `k3+`: value k3, gradient of k2
- `abs+`: value |l|, gradient of k2

As a loss term with tokens sampled from p, k1 and k3 are unbiased for the *value* of
KL(p‖q) but not for its *gradient*: ∇k1 = ∇log p has expectation 0, and
∇k3 = (1 − q/p)·∇log p has expectation −E_q[∇log p] (the gradient of the reverse KL(q‖p)).
k2's gradient l·∇log p is the score-function gradient of KL(p‖q). So `k1+`/`k3+` report
(and `abs+` |l|) add the k1/k3 (|l|) value while backpropagating k2's gradient:
`k2 − sg[k2] + sg[k]` (sg = stop-gradient). Reference: Schulman 2020 for the estimators;
verl's `kl_penalty(..., "k3+")` for the straight-through trick.

Use as a loss term (`kl_in: loss`, GRPO) or subtract `kl_coef·k` from the per-token reward
(`kl_in: reward`, PPO / REINFORCE++).
"""

from __future__ import annotations

import torch

from meshrl.algos.checks import UnknownNameError, check_finite, check_mask, check_shapes

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


def _straight_through(value_fn):
    """An estimator whose value is `value_fn`'s and whose gradient is k2's."""

    def estimator(log_ratio: torch.Tensor) -> torch.Tensor:
        grad_part = _k2(log_ratio)
        return grad_part - grad_part.detach() + value_fn(log_ratio).detach()

    return estimator


def _k1_plus(log_ratio: torch.Tensor) -> torch.Tensor:
    """value of k1, gradient of k2 = l·∇log p (verl's `k1+`; Schulman 2020)."""
    return _straight_through(_k1)(log_ratio)


def _k3_plus(log_ratio: torch.Tensor) -> torch.Tensor:
    """value of k3, gradient of k2 = l·∇log p (verl's `k3+`; Schulman 2020)."""
    return _straight_through(_k3)(log_ratio)


def _abs_plus(log_ratio: torch.Tensor) -> torch.Tensor:
    """value of |l|, gradient of k2 = l·∇log p (verl's `abs+`; Schulman 2020)."""
    return _straight_through(_abs)(log_ratio)


KL_ESTIMATORS = {
    "k1": _k1,
    "k2": _k2,
    "k3": _k3,
    "abs": _abs,
    "mse": _k2,  # mse: verl's k2
    "k1+": _k1_plus,
    "k3+": _k3_plus,
    "abs+": _abs_plus,
}


def list_kl_estimators() -> list[str]:
    return sorted(KL_ESTIMATORS)


def kl_estimate(
    logprobs: torch.Tensor, ref_logprobs: torch.Tensor, kind: str = "k3", response_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-token KL estimate [B, T] of the policy from the reference (see module docstring).

    With `response_mask` the result is zero on padding.
    """
    if kind not in KL_ESTIMATORS:
        raise UnknownNameError(f"unknown KL estimator {kind!r}; registered: {', '.join(list_kl_estimators())}")
    check_shapes(logprobs=logprobs, ref_logprobs=ref_logprobs, response_mask=response_mask)
    check_finite("logprobs", logprobs)
    check_finite("ref_logprobs", ref_logprobs)
    kl = KL_ESTIMATORS[kind](logprobs - ref_logprobs)
    if response_mask is not None:
        check_mask("response_mask", response_mask)
        kl = kl * response_mask
    return kl
