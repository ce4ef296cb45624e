"""The training step's rollout correction: π_old against the engine's behaviour log-probs μ.

`correct` returns the token weights (a registered mode, optionally batch-normalised over
every rank; zero on rejected tokens) — what verl hands its estimators as
`rollout_is_weights` — and, when `rollout_correction.reject` names criteria, the loss mask
less the rejected tokens, which the step then trains with everywhere (advantages, losses,
KL, entropy, aggregation counts, critic), as verl rewrites `response_mask`. `at_level`
turns the weights into what the policy loss multiplies by: one geometric-mean weight per row
for a sequence-level loss. Metrics go to `rollout_correction/*` (and `mismatch_kl`). No
behaviour log-probs: nothing to correct.
"""

from __future__ import annotations

import torch

from meshrl.algos.correction.level import weights_at_level
from meshrl.algos.rollout_correction import rejection_mask, rollout_correction
from meshrl.config.rollout_correction import RolloutCorrectionConfig
from meshrl.services.learner.train.fsdp import DistContext
from meshrl.services.learner.train.metrics import MetricSums


def log_metrics(sums: MetricSums, metrics: dict, tokens) -> None:
    sums.add_dict({k if k == "mismatch_kl" else f"rollout_correction/{k}": v for k, v in metrics.items()}, tokens)


def correct(
    rc: RolloutCorrectionConfig, batch, old: torch.Tensor, dist: DistContext, sums: MetricSums
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(token weights [B, T] or None, the loss mask less rejected tokens or None) (module docstring)."""
    behaviour, mask = batch.behaviour_logprobs, batch.loss_mask
    if behaviour is None:
        return None, None
    kept = None
    if rc.reject:
        kept, metrics = rejection_mask(old, behaviour, mask, rc.reject)
        log_metrics(sums, metrics, mask.sum())
    weights, metrics = rollout_correction(
        old,
        behaviour,
        mask,
        rc.mode,
        rc.cap,
        lower=rc.lower,
        batch_normalize=rc.batch_normalize,
        all_reduce=dist.all_reduce,
    )
    log_metrics(sums, metrics, mask.sum())
    return weights if kept is None else weights * kept, kept


def at_level(weights: torch.Tensor | None, mask: torch.Tensor, policy_loss) -> torch.Tensor | None:
    """The weights the policy loss's per-token loss is multiplied by: each token's own, one
    geometric mean per row for a sequence-level loss, each token's own again for a loss that
    folds them in itself (registered `takes_rollout_weights`)."""
    level = "token" if getattr(policy_loss, "takes_rollout_weights", False) else getattr(policy_loss, "level", "token")
    return weights_at_level(weights, mask, level)
