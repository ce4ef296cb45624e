"""`bco_pair`: Binary Classifier Optimisation on pairs.

Implicit rewards r_w = β·c, r_l = β·r are classified as good / bad against a reward shift δ,
the running mean of every implicit reward seen so far (chosen and rejected alike):

    L = −log σ(r_w − δ) − log σ(−(r_l − δ))

δ is updated with this batch's rewards first (count-weighted mean over batches, TRL's
`RunningMoments`), then used; it lives in `state["bco_delta"]`, `state["bco_count"]`, a dict the
caller keeps across steps (the learner's DPO step; checkpointing it is left out).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from meshrl.algos.preference.common import log_ratios
from meshrl.algos.registry import register_preference_loss


def update_running_mean(state: dict, rewards: torch.Tensor) -> torch.Tensor:
    """Fold this batch's mean into state's running mean (count-weighted); the new mean."""
    count, mean = state.get("bco_count", 0), state.get("bco_delta", 0.0)
    total = count + rewards.numel()
    mean = mean + (rewards.mean().item() - mean) * rewards.numel() / total
    state["bco_count"], state["bco_delta"] = total, mean
    return torch.tensor(mean, dtype=rewards.dtype, device=rewards.device)


@register_preference_loss(
    "bco_pair",
    paper=("Jung et al. 2024, Binary Classifier Optimization for Large Language Model Alignment, arXiv:2404.04656"),
)
def bco_pair(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta, state=None, **_):
    """−log σ(βc − δ) − log σ(−(βr − δ)), δ the running mean reward (module docstring)."""
    chosen, rejected = log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    reward_w, reward_l = beta * chosen, beta * rejected
    state = {} if state is None else state
    delta = update_running_mean(state, torch.cat([reward_w, reward_l]).detach())
    return -F.logsigmoid(reward_w - delta) - F.logsigmoid(-(reward_l - delta))
