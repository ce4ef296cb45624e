"""Reward shaping and sample selection from DAPO (Yu et al. 2025, "DAPO: An Open-Source LLM
Reinforcement Learning System at Scale").

- `overlong_penalty` — soft overlong punishment, with L_max = `max_tokens`,
  L_cache = `buffer_len`, |y| the response length:

      R(|y|) = 0                                     if |y| ≤ L_max − L_cache
             = ((L_max − L_cache) − |y|) / L_cache   if L_max − L_cache < |y| ≤ L_max
             = −1                                    if |y| > L_max
  times `penalty_factor`; added to the task reward.

- `clip_rewards` — each sample's reward clamped into [low, high] before any estimator sees it
  (TRL's RLOO `reward_clip_range`; the KL-in-reward penalty is added after, as TRL does).

- `groups_with_signal` — dynamic sampling keeps only groups whose rewards are not all equal
  (a group of identical rewards has zero group-relative advantage and no gradient).
"""

from __future__ import annotations

import torch

from meshrl.algos.checks import check_finite, check_group_ids, check_shapes
from meshrl.algos.groups import group_stats


def clip_rewards(rewards: torch.Tensor, clip_range: tuple[float, float] | None) -> torch.Tensor:
    """rewards [B] clamped into `clip_range` (low, high); unchanged when it is None."""
    if clip_range is None:
        return rewards
    low, high = clip_range
    if not low < high:
        raise ValueError(f"reward_clip_range=({low}, {high}): need low < high")
    return rewards.clamp(min=low, max=high)


def overlong_penalty(
    response_lengths: torch.Tensor, max_tokens: int, buffer_len: int, penalty_factor: float = 1.0
) -> torch.Tensor:
    """DAPO's soft overlong penalty per sample [B] (float, ≤ 0); see the module docstring."""
    if not 0 < buffer_len <= max_tokens:
        raise ValueError(f"need 0 < buffer_len <= max_tokens, got buffer_len={buffer_len}, max_tokens={max_tokens}")
    if response_lengths.dim() != 1:
        raise ValueError(f"response_lengths must be [batch], got shape {tuple(response_lengths.shape)}")
    excess = response_lengths.to(torch.float32) - float(max_tokens - buffer_len)
    return -penalty_factor * (excess / buffer_len).clamp(0.0, 1.0)


def groups_with_signal(rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """Bool [B]: True for samples whose group's rewards are not all identical."""
    check_shapes(rewards=(rewards, "B"), group_ids=(group_ids, "B"))
    check_group_ids(group_ids)
    check_finite("rewards", rewards, group_ids)
    return ~group_stats(rewards, group_ids).all_equal
