"""`vespo`: Variational Sequence-Level Soft Policy Optimization (TRL's `loss_type="vespo"`).

No hard clip: each sequence's policy gradient is scaled by a smooth, asymmetric Gamma-shaped
function of its sequence importance weight w (the PRODUCT of its token ratios, not their
geometric mean), normalised so that φ(1) = 1:

    log w_i = clamp( Σ_t m_t·clamp(log π − log π_old, ±20)  [+ Σ_t m_t·log ρ_t],  log 1e-8, 20 )
    φ(w)    = exp( λ + k·log w − λ·w )       (k, λ) = (k⁺, λ⁺) where A ≥ 0, (k⁻, λ⁻) where A < 0
    L_t     = −sg[φ(w_i)] · A_t · log π(y_t)

so ∂L/∂log π = −φ·A: φ → 0 both for w → 0 (power k) and for w ≫ 1 (decay λ). The bracketed
term folds in the rollout correction's token weights ρ_t (each log clamped to [log 1e-8, 20],
a zero weight → log 1e-8), as TRL does with its vLLM IS ratios instead of multiplying the
loss by them (registered `takes_rollout_weights`). Defaults as TRL 1.16: k⁺ = 2, λ⁺ = 3,
k⁻ = 3, λ⁻ = 2; default aggregation token-mean (TRL's). A non-finite φ becomes 0 (TRL's
nan_to_num). Metric `vespo/phi_mean`: φ's mean over model tokens. The ratio lives at the
sequence level (TRL asks for importance_sampling_level="token" only because its own ratio
flag does not apply); TRL's per-token ratio is also what weighs its KL term under
`use_bias_correction_kl`, so VESPO registers `kl_ratio_level="token"`.
"""

from __future__ import annotations

import math

import torch

from meshrl.algos.losses.common import LOG_RATIO_BOUND, loss_metrics
from meshrl.algos.masked import masked_mean
from meshrl.algos.registry import register_policy_loss
from meshrl.algos.types import PolicyLossResult

LOG_W_FLOOR = math.log(1e-8)  # TRL's lower clamp of log w


def sequence_log_weight(log_ratio, mask, rollout_weights) -> torch.Tensor:
    """log w [B, 1] (module docstring)."""
    log_w = (log_ratio.clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND) * mask).sum(dim=-1, keepdim=True)
    if rollout_weights is not None:
        log_rho = rollout_weights.clamp_min(0.0).log().clamp(LOG_W_FLOOR, LOG_RATIO_BOUND)
        log_w = log_w + (log_rho * mask).sum(dim=-1, keepdim=True)
    return log_w.clamp(LOG_W_FLOOR, LOG_RATIO_BOUND)


def gamma_weight(log_w, advantages, k_pos, lambda_pos, k_neg, lambda_neg) -> torch.Tensor:
    """φ [B, T]: λ + k·log w − λ·w, exponentiated; 0 where not finite."""
    non_negative = advantages >= 0
    k = torch.where(non_negative, k_pos, k_neg)
    lam = torch.where(non_negative, lambda_pos, lambda_neg).clamp(min=1e-4)
    phi = torch.exp(lam + k * log_w - lam * log_w.exp())
    return phi.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)


@register_policy_loss(
    "vespo",
    default_agg="token-mean",
    level="sequence",
    takes_rollout_weights=True,
    kl_ratio_level="token",
    paper=(
        "VESPO: Variational Sequence-Level Soft Policy Optimization for Stable Off-Policy LLM "
        "Training, arXiv:2602.10693 (TRL's loss_type='vespo')"
    ),
)
def vespo(
    *,
    logprobs,
    old_logprobs,
    advantages,
    response_mask,
    rollout_weights=None,
    vespo_k_pos=2.0,
    vespo_lambda_pos=3.0,
    vespo_k_neg=3.0,
    vespo_lambda_neg=2.0,
    **_,
) -> PolicyLossResult:
    """−sg[φ(w)]·A·log π with w the sequence's product of ratios (module docstring)."""
    log_ratio = (logprobs - old_logprobs).detach()
    log_w = sequence_log_weight(log_ratio, response_mask, rollout_weights)
    phi = gamma_weight(log_w, advantages.detach(), vespo_k_pos, vespo_lambda_pos, vespo_k_neg, vespo_lambda_neg)
    loss = -phi * advantages * logprobs
    never = torch.zeros_like(response_mask, dtype=torch.bool)
    bounded = log_ratio.clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    metrics = loss_metrics(
        ratio=bounded.exp(), log_ratio=bounded, mask=response_mask, low=never, high=never, dual=never
    )
    metrics["vespo/phi_mean"] = masked_mean(phi, response_mask)
    return PolicyLossResult(loss_mat=loss * response_mask, metrics=metrics)
