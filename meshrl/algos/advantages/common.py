"""Pieces shared by advantage estimators: outcome scores, terminal rewards, discounted sums."""
from __future__ import annotations

import torch


def outcome_scores(rewards: torch.Tensor, token_rewards: torch.Tensor | None,
                   mask: torch.Tensor) -> torch.Tensor:
    """One score per sequence [B]: the scalar reward plus any per-token rewards on valid tokens.

    Per-token rewards carry e.g. a KL penalty when `kl_in: reward`.
    """
    if token_rewards is None:
        return rewards
    return rewards + (token_rewards * mask).sum(dim=-1)


def last_token_index(mask: torch.Tensor) -> torch.Tensor:
    """Index of each row's last valid token [B] (0 for a row with none)."""
    positions = torch.arange(1, mask.shape[1] + 1, device=mask.device, dtype=mask.dtype)
    return (mask * positions).argmax(dim=-1)


def per_token_rewards(rewards: torch.Tensor, token_rewards: torch.Tensor | None,
                      mask: torch.Tensor) -> torch.Tensor:
    """[B, T] rewards: `token_rewards` on valid tokens plus `rewards` at the last valid token."""
    dense = torch.zeros_like(mask) if token_rewards is None else token_rewards * mask
    terminal = torch.zeros_like(mask).scatter_(1, last_token_index(mask).unsqueeze(-1),
                                               rewards.to(mask.dtype).unsqueeze(-1))
    return dense + terminal * mask


def discounted_returns(token_rewards: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
    """G_t = r_t + γ·G_{t+1} over valid tokens, zero on padding.

    A reverse scan over time, vectorised over the batch; masked (e.g. padding or tool
    output) tokens pass G through unchanged and are not discounted.
    """
    running = torch.zeros_like(token_rewards[:, 0])
    columns = []
    for t in reversed(range(token_rewards.shape[1])):
        m = mask[:, t]
        running = m * (token_rewards[:, t] + gamma * running) + (1 - m) * running
        columns.append(running)
    return torch.stack(columns[::-1], dim=1) * mask
