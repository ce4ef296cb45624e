"""Result types shared by every advantage estimator and policy loss."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class AdvantageResult:
    """Per-token advantages and returns, both [batch, response_len], zero on padding.

    `returns` is what a critic regresses on (GAE: advantages + values). Critic-free
    estimators document what they put there.
    """

    advantages: torch.Tensor
    returns: torch.Tensor


@dataclass(frozen=True)
class PolicyLossResult:
    """Per-token policy loss [batch, response_len] (zero on padding) and detached metrics.

    Aggregate `loss_mat` with `meshrl.algos.aggregate_loss` (or the numerator/denominator
    pair for micro-batching). Metric values are 0-dim float tensors (no host sync).
    """

    loss_mat: torch.Tensor
    metrics: dict[str, torch.Tensor] = field(default_factory=dict)
