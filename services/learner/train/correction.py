"""The training step's rollout correction: π_old against the engine's behaviour log-probs μ.

`correct` returns the loss weights (a registered mode, optionally batch-normalised over
every rank, then at the level of the policy loss's ratio: one geometric-mean weight per row
for a sequence-level loss) and, when `rollout_correction.reject` names criteria, the loss
mask less the rejected tokens — which the step then trains with everywhere (advantages,
losses, KL, entropy, aggregation counts, critic), as verl rewrites `response_mask`. Metrics
go to `rollout_correction/*` (and `mismatch_kl`). No behaviour log-probs: nothing to correct.
"""
from __future__ import annotations

import torch

from meshrl.algos.correction.level import weights_at_level
from meshrl.algos.rollout_correction import rejection_mask, rollout_correction
from meshrl.config.rollout_correction import RolloutCorrectionConfig
from meshrl.services.learner.train.fsdp import DistContext
from meshrl.services.learner.train.metrics import MetricSums


def log_metrics(sums: MetricSums, metrics: dict, tokens) -> None:
    sums.add_dict({k if k == "mismatch_kl" else f"rollout_correction/{k}": v
                   for k, v in metrics.items()}, tokens)


def correct(rc: RolloutCorrectionConfig, batch, old: torch.Tensor, level: str, dist: DistContext,
            sums: MetricSums) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(loss weights [B, T] or None, the loss mask less rejected tokens or None) (module docstring)."""
    behaviour, mask = batch.behaviour_logprobs, batch.loss_mask
    if behaviour is None:
        return None, None
    kept = None
    if rc.reject:
        kept, metrics = rejection_mask(old, behaviour, mask, rc.reject)
        log_metrics(sums, metrics, mask.sum())
    weights, metrics = rollout_correction(old, behaviour, mask, rc.mode, rc.cap, lower=rc.lower,
                                          batch_normalize=rc.batch_normalize,
                                          all_reduce=dist.all_reduce)
    log_metrics(sums, metrics, mask.sum())
    trained = mask if kept is None else kept
    return weights_at_level(weights * trained, trained, level), kept
