"""Pieces shared by advantage estimators: outcome scores, terminal rewards, discounted sums."""

from __future__ import annotations

import torch


def outcome_scores(rewards: torch.Tensor, token_rewards: torch.Tensor | None, mask: torch.Tensor) -> torch.Tensor:
    """One score per sequence [B]: the scalar reward plus any per-token rewards on valid tokens.

    Per-token rewards carry e.g. a KL penalty when `kl_in: reward`.
    """
    if token_rewards is None:
        return rewards
    return rewards + (token_rewards * mask).sum(dim=-1)


def last_token_index(mask: torch.Tensor) -> torch.Tensor:
    """Index of each row's last valid token [B] (0 for a row with none)."""
    # integer positions: in bf16, 257 and 258 would round to the same value
    positions = torch.arange(1, mask.shape[1] + 1, device=mask.device)
    return ((mask > 0).long() * positions).argmax(dim=-1)


def per_token_rewards(rewards: torch.Tensor, token_rewards: torch.Tensor | None, mask: torch.Tensor) -> torch.Tensor:
    """[B, T] rewards: `token_rewards` on valid tokens plus `rewards` at the last valid token."""
    dense = torch.zeros_like(mask) if token_rewards is None else token_rewards * mask
    terminal = torch.zeros_like(mask).scatter_(
        1, last_token_index(mask).unsqueeze(-1), rewards.to(mask.dtype).unsqueeze(-1)
    )
    return dense + terminal * mask


def gae_scan(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float, lam: float) -> torch.Tensor:
    """Raw GAE advantages [B, T], zero on padding: the one reverse recurrence over time.

    δ_t = r_t + γ·V_{t+1} − V_t,  A_t = δ_t + γλ·A_{t+1}, vectorised over the batch. Masked
    tokens (padding, tool output) carry A and V_{t+1} through unchanged.
    """
    next_value = torch.zeros_like(values[:, 0])
    running = torch.zeros_like(values[:, 0])
    columns = []
    for t in reversed(range(values.shape[1])):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        running = m * (delta + gamma * lam * running) + (1 - m) * running
        next_value = m * values[:, t] + (1 - m) * next_value
        columns.append(running)
    return torch.stack(columns[::-1], dim=1) * mask


def discounted_returns(token_rewards: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
    """G_t = r_t + γ·G_{t+1} over valid tokens, zero on padding; masked tokens are skipped.

    γ = 1 is a reverse cumulative sum (no loop). Otherwise it is GAE with V = 0 and λ = 1,
    so it reuses that one reverse scan over time.
    """
    if gamma == 1.0:
        masked = token_rewards * mask
        return masked.flip(-1).cumsum(-1).flip(-1) * mask
    return gae_scan(token_rewards, torch.zeros_like(token_rewards), mask, gamma, 1.0)
