"""`none`: zero advantages and returns, for paths that do not use advantages (DPO offline)."""

from __future__ import annotations

import torch

from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult


@register_advantage_estimator("none", paper="(none: zero advantages for the offline DPO path)")
def no_advantage(*, rewards, response_mask, group_ids, **_) -> AdvantageResult:
    """A = 0, returns = 0 on every token: DPO's loss needs no advantages."""
    zeros = torch.zeros_like(response_mask)
    return AdvantageResult(advantages=zeros, returns=zeros.clone())
