"""Per-turn credit of an environment's rewards (`kind: environment`, `params.credit: turn`).

The reward service puts the episode's environment reward — the sum of its turn rewards — into
`Sample.reward` with the component's weight w, like any component. For a turn-credited
component the learner moves that part from the episode's end to the turns that earned it:

    turn_rewards[t] = w · r_k     at the last model token of turn k (r_k = `Turn.reward`)
    estimator rewards = Sample.reward − Σ_t turn_rewards[t]       (the rest: other components)

and the training step passes `turn_rewards` to the advantage estimator as per-token rewards.
The episode's total is unchanged: estimators of one score per episode (grpo, rloo, opo, ...)
add per-token rewards back into it, while estimators of per-token returns (gae,
reinforce_plus_plus, remax, optimal_token_baseline) credit each turn's reward to that turn's
tokens and those before it, never to later turns. A component that failed its score (even
if `on_failure` gave it a value) is left at the episode's end.
"""

from __future__ import annotations

import numpy as np
import torch

from meshrl.algos.batch import pad_right
from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus.codec import unpack_uint8

OK = common_pb2.SCORE_STATUS_OK


def credited_weight(sample: common_pb2.Sample, credited: tuple[str, ...]) -> float:
    """Σ weights of the sample's turn-credited components that scored OK."""
    return sum(c.weight for c in sample.reward_components if c.name in credited and c.status == OK)


def turn_end_token(mask: np.ndarray, turn: common_pb2.Turn) -> int:
    """The turn's last model token (the last 1 of the mask before its end; the episode's
    first model token for a turn without any)."""
    before = np.flatnonzero(mask[: turn.token_end])
    return int(before[-1]) if before.size else int(np.flatnonzero(mask)[0])


def turn_reward_row(sample: common_pb2.Sample, credited: tuple[str, ...], tokens: int) -> np.ndarray:
    """[tokens]: w · each rewarded turn's reward at its last model token, 0 elsewhere."""
    row = np.zeros(tokens, dtype=np.float32)
    weight = credited_weight(sample, credited)
    if weight == 0.0 or not sample.turns:
        return row
    mask = unpack_uint8(sample.loss_mask)
    mask = mask if mask.size else np.ones(tokens, dtype=np.uint8)
    for turn in sample.turns:
        if turn.HasField("reward"):
            row[turn_end_token(mask, turn)] += weight * turn.reward
    return row


def turn_reward_matrix(groups: list[common_pb2.Group], credited: tuple[str, ...], width: int) -> torch.Tensor | None:
    """[B, width] turn rewards of every sample in batch order; None when none was credited."""
    if not credited:
        return None
    rows = [turn_reward_row(s, credited, len(s.response_token_ids) // 4) for g in groups for s in g.samples]
    if not any(row.any() for row in rows):
        return None
    return torch.from_numpy(pad_right(rows, 0.0, np.float32, width)[0])
