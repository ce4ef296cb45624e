"""`grpo` and `dr_grpo`: group-relative outcome advantages.

GRPO (Shao et al. 2024, "DeepSeekMath"), for sample i of a prompt group g with score r_i:

    A_i = (r_i − mean_g(r)) / (σ + eps)      σ by `scale_rewards` (TRL's option, std with n − 1):
        "group": σ = std_g(r) (the paper)  "batch": σ = std of every score in the batch
        (Liu et al. 2025 / TRL: robust to groups of tiny spread)  "none": no division
    norm_by_std=False (`norm_adv_by_std_in_grpo`) means "none" whatever `scale_rewards` says.
    eps is `algorithm.adv_epsilon` (default 1e-6).

Dr. GRPO (Liu et al. 2025, "Understanding R1-Zero-Like Training: A Critical Perspective")
drops the std division, which biases towards easy/hard questions; `dr_grpo` always does,
whatever `norm_by_std` says (pair it with `seq-mean-token-sum-norm`).

The score is `rewards` plus the sum of `token_rewards` over valid tokens. A_i is put on every
valid token. A group whose scores are all equal (including a group of one) gets exactly 0.
`returns` equal `advantages` (no critic).
"""

from __future__ import annotations

import torch

from meshrl.algos.advantages.common import outcome_scores
from meshrl.algos.groups import group_stats
from meshrl.algos.masked import broadcast_over_tokens
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult

SCALES = ("group", "batch", "none")


def group_relative(scores: torch.Tensor, group_ids: torch.Tensor, scale: str, eps: float) -> torch.Tensor:
    """Per-sample (r − group mean) / (σ + eps), σ by `scale`; exactly 0 for no-signal groups."""
    if scale not in SCALES:
        raise ValueError(f"scale_rewards={scale!r}; expected one of {', '.join(SCALES)}")
    stats = group_stats(scores, group_ids)
    centred = scores - stats.mean
    if scale == "group":
        centred = centred / (stats.std + eps)
    elif scale == "batch":
        batch_std = scores.std() if scores.numel() > 1 else torch.zeros_like(scores[0])
        centred = centred / (batch_std + eps)
    return torch.where(stats.all_equal, torch.zeros_like(centred), centred)


@register_advantage_estimator(
    "grpo",
    paper=(
        "Shao et al. 2024, DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open "
        "Language Models, arXiv:2402.03300"
    ),
)
def grpo(
    *, rewards, response_mask, group_ids, token_rewards=None, norm_by_std=True, eps=1e-6, scale_rewards="group", **_
) -> AdvantageResult:
    """GRPO advantages (module docstring)."""
    scores = outcome_scores(rewards, token_rewards, response_mask)
    scale = scale_rewards if norm_by_std else "none"
    advantages = broadcast_over_tokens(group_relative(scores, group_ids, scale, eps), response_mask)
    return AdvantageResult(advantages=advantages, returns=advantages.clone())


@register_advantage_estimator(
    "dr_grpo", paper=("Liu et al. 2025, Understanding R1-Zero-Like Training: A Critical Perspective, arXiv:2503.20783")
)
def dr_grpo(*, rewards, response_mask, group_ids, token_rewards=None, **_) -> AdvantageResult:
    """Dr. GRPO advantages: r_i − group mean, never divided by the std (module docstring)."""
    scores = outcome_scores(rewards, token_rewards, response_mask)
    advantages = broadcast_over_tokens(group_relative(scores, group_ids, "none", 0.0), response_mask)
    return AdvantageResult(advantages=advantages, returns=advantages.clone())
