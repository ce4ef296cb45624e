"""Rejection criteria: drop tokens or whole sequences whose trainer/engine divergence is too
large (a hard trust region on the mismatch), verl 0.9.1's `rollout_rs` options.

With d_t = log π_old(y_t) − log μ(y_t) (bounded at ±20) per model token and the per-token
divergences of KL(μ ‖ π_old) (Schulman 2020's estimators, tokens sampled from μ):

    k1_t = −d_t        k2_t = ½·d_t²        k3_t = exp(d_t) − 1 − d_t

- `token_kX`:    each token kept while its kX_t is within bounds
- `seq_sum_kX`:  a sequence kept while Σ_t kX_t is within bounds (all its tokens or none)
- `seq_mean_kX`: the same with the mean over its model tokens
- `seq_max_kX`:  the same with the max over its model tokens (k2, k3)

k1 is two-sided: kept while log(lower) ≤ statistic ≤ log(upper) (a single threshold u means
lower = 1/u); the others are kept while statistic ≤ threshold. Every criterion named in
`algorithm.rollout_correction.reject` must pass. A rejected token leaves the loss mask for
the rest of the step (advantages, losses, KL, entropy, aggregation counts, critic), as verl
rewrites `response_mask`. Liu, Li et al. 2025, "When Speed Kills Stability"
(https://richardli.xyz/rl-collapse).
"""

from __future__ import annotations

import torch

from meshrl.algos.correction.registry import register_rejection
from meshrl.algos.masked import masked_mean, masked_sum

BOUND = 20.0
PAPER = (
    "Liu, Li et al. 2025, When Speed Kills Stability: Demystifying RL Collapse from the "
    "Training-Inference Mismatch, https://richardli.xyz/rl-collapse (verl's rollout_rs)"
)


def k1(d):
    return -d.clamp(-BOUND, BOUND)


def k2(d):
    return 0.5 * d.clamp(-BOUND, BOUND).square()


def k3(d):
    d = d.clamp(-BOUND, BOUND)
    return torch.expm1(d) - d


def row_max(x, mask):
    """The max over each row's model tokens, 0 for a row without any."""
    valid = mask > 0
    top = torch.where(valid, x, torch.full_like(x, float("-inf"))).amax(dim=-1)
    return torch.where(valid.any(dim=-1), top, torch.zeros_like(top))


@register_rejection("token_k1", two_sided=True, paper=PAPER)
def token_k1(log_ratio, mask):
    """−d_t per token, kept in [log lower, log upper]."""
    return k1(log_ratio)


@register_rejection("token_k2", paper=PAPER)
def token_k2(log_ratio, mask):
    """½·d_t² per token."""
    return k2(log_ratio)


@register_rejection("token_k3", paper=PAPER)
def token_k3(log_ratio, mask):
    """exp(d_t) − 1 − d_t per token."""
    return k3(log_ratio)


@register_rejection("seq_sum_k1", level="sequence", two_sided=True, paper=PAPER)
def seq_sum_k1(log_ratio, mask):
    """Σ_t −d_t per sequence, kept in [log lower, log upper]."""
    return masked_sum(k1(log_ratio), mask, dim=-1)


@register_rejection("seq_sum_k2", level="sequence", paper=PAPER)
def seq_sum_k2(log_ratio, mask):
    """Σ_t ½·d_t² per sequence."""
    return masked_sum(k2(log_ratio), mask, dim=-1)


@register_rejection("seq_sum_k3", level="sequence", paper=PAPER)
def seq_sum_k3(log_ratio, mask):
    """Σ_t k3_t per sequence, k3_t = exp(d_t) − 1 − d_t."""
    return masked_sum(k3(log_ratio), mask, dim=-1)


@register_rejection("seq_mean_k1", level="sequence", two_sided=True, paper=PAPER)
def seq_mean_k1(log_ratio, mask):
    """mean_t −d_t per sequence, kept in [log lower, log upper]."""
    return masked_mean(k1(log_ratio), mask, dim=-1)


@register_rejection("seq_mean_k2", level="sequence", paper=PAPER)
def seq_mean_k2(log_ratio, mask):
    """mean_t ½·d_t² per sequence."""
    return masked_mean(k2(log_ratio), mask, dim=-1)


@register_rejection("seq_mean_k3", level="sequence", paper=PAPER)
def seq_mean_k3(log_ratio, mask):
    """mean_t k3_t per sequence, k3_t = exp(d_t) − 1 − d_t."""
    return masked_mean(k3(log_ratio), mask, dim=-1)


@register_rejection("seq_max_k2", level="sequence", paper=PAPER)
def seq_max_k2(log_ratio, mask):
    """max_t ½·d_t² per sequence."""
    return row_max(k2(log_ratio), mask)


@register_rejection("seq_max_k3", level="sequence", paper=PAPER)
def seq_max_k3(log_ratio, mask):
    """max_t k3_t per sequence, k3_t = exp(d_t) − 1 − d_t."""
    return row_max(k3(log_ratio), mask)
