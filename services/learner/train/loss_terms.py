"""The per-token loss around the policy loss: correction weights, loss masks, KL, entropy.

    ℓ = w · m_pg · policy_loss  +  kl_coef · [ρ ·] k(π, π_ref)  −  α · H(π) · m_H

w: the rollout-correction weights (unless the loss folds them in itself, registered
`takes_rollout_weights`); m_pg: the product of the configured loss masks
(`algorithm.loss_masks`, meshrl/algos/loss_masks/); ρ: the importance ratio when
`use_bias_correction_kl` (meshrl/algos/kl_weighting.py); α: the entropy controller's applied
coefficient (meshrl/algos/entropy_control.py) and m_H the masks registered `also_entropy`.
`EntropyBonus` also measures the mean entropy of each optimizer step's bonus tokens over
every rank and feeds it to an adaptive controller. Nothing here branches on a part's name:
only on what the parts declare.
"""

from __future__ import annotations

import torch

from meshrl.algos import kl_estimate
from meshrl.algos.entropy_control import AdaptiveEntropyController, entropy_controller
from meshrl.algos.kl_weighting import importance_weighted_kl
from meshrl.algos.loss_masks import apply_loss_masks
from meshrl.config.algorithm import AlgorithmConfig
from meshrl.services.learner.train.fsdp import DistContext
from meshrl.services.learner.train.metrics import MetricSums


def loss_masks(algo: AlgorithmConfig, micro, logprobs, entropy, sums: MetricSums):
    """(m_pg, m_H) [b, T] or None each; `loss_masks/<name>/kept` metrics."""
    if not algo.loss_masks:
        return None, None
    pg, bonus, kept = apply_loss_masks(
        algo.loss_masks,
        logprobs=logprobs.detach(),
        old_logprobs=micro.old_logprobs,
        behaviour_logprobs=micro.behaviour_logprobs,
        advantages=micro.advantages,
        entropy=entropy.detach(),
        response_mask=micro.loss_mask,
    )
    sums.add_dict({f"loss_masks/{name}/kept": v for name, v in kept.items()}, micro.loss_mask.sum())
    return pg, bonus


def kl_term(algo: AlgorithmConfig, micro, logprobs, level: str) -> torch.Tensor | None:
    """kl_coef · [ρ ·] k(π, π_ref) [b, T] when the KL is in the loss, else None."""
    if algo.kl_in != "loss" or algo.kl_coef <= 0:
        return None
    kl = kl_estimate(logprobs, micro.ref_logprobs, algo.kl_estimator, micro.loss_mask)
    if algo.use_bias_correction_kl:
        kl = importance_weighted_kl(kl, logprobs, micro.old_logprobs, micro.loss_mask, level)
    return algo.kl_coef * kl


def weighted(loss_mat, weights, mask):
    """The policy loss times the correction weights and the loss masks (each when present)."""
    for factor in (weights, mask):
        if factor is not None:
            loss_mat = loss_mat * factor
    return loss_mat


class EntropyBonus:
    """−α·H·m_H per token, with α from the controller; the adaptive controller's measurement."""

    def __init__(self, algo: AlgorithmConfig):
        self.ctrl = entropy_controller(algo.entropy_coeff, algo.adaptive_entropy)
        self.adaptive = isinstance(self.ctrl, AdaptiveEntropyController)
        self.window = None  # (Σ H·m_H, Σ m_H) over this optimizer step's micro-batches

    @property
    def active(self) -> bool:
        return self.adaptive or self.ctrl.value != 0

    def term(self, entropy, mask, bonus_mask) -> torch.Tensor | None:
        """α·H·m_H [b, T] (None when the bonus is off); notes the tokens for the controller."""
        if not self.active:
            return None
        tokens = mask if bonus_mask is None else mask * bonus_mask
        stats = torch.stack([(entropy.detach() * tokens).sum(), tokens.sum()])
        self.window = stats if self.window is None else self.window + stats
        return self.ctrl.applied * entropy * tokens

    def end_update(self, dist: DistContext, sums: MetricSums) -> None:
        """After an optimizer step: the adaptive controller sees that step's mean entropy."""
        if self.adaptive and self.window is not None:
            total = dist.all_reduce(self.window)
            self.ctrl.update(float(total[0] / total[1].clamp_min(1.0)))
            sums.mean("entropy_coef", torch.tensor(self.ctrl.value), 1.0)
        self.window = None
