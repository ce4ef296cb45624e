"""`length_penalty`: a linear penalty on response length, in chars or tokens.

Two modes (set exactly one of `max_len` or `target`):

- cap (`max_len`, `buffer`): DAPO's soft overlong punishment (Yu et al. 2025, eq. 13):
      value = -penalty * clip((len - (max_len - buffer)) / buffer, 0, 1)
  0 up to `max_len - buffer`, falling linearly to `-penalty` at `max_len` and beyond.
  `buffer` defaults to `max_len` (a penalty growing from length 0).
- target (`target`):  value = -penalty * min(1, |len - target| / target)

`unit: tokens` needs the response's token count, which groups from rollout carry; items
scored through the gRPC API have none, and get status ERROR rather than a wrong length.
"""

import numpy as np

from meshrl.config.reward_rules import LengthPenaltyParams
from meshrl.services.reward.registry import register_reward
from meshrl.services.reward.types import ItemScore, RewardItem, Status, failed, ok


def penalties(lengths: np.ndarray, p: LengthPenaltyParams) -> np.ndarray:
    if p.target is not None:
        return -p.penalty * np.minimum(1.0, np.abs(lengths - p.target) / p.target)
    buffer = p.buffer or p.max_len
    return -p.penalty * np.clip((lengths - (p.max_len - buffer)) / buffer, 0.0, 1.0)


def item_length(item: RewardItem, unit: str) -> int | None:
    if unit == "chars":
        return len(item.response)
    if item.num_tokens == 0 and item.response:
        return None
    return item.num_tokens


@register_reward("length_penalty", params=LengthPenaltyParams)
def length_penalty(items: list[RewardItem], params: LengthPenaltyParams) -> list[ItemScore]:
    lengths = [item_length(it, params.unit) for it in items]
    known = np.array([n for n in lengths if n is not None], dtype=np.float64)
    values = iter(penalties(known, params).tolist())
    return [
        failed(Status.ERROR, "token count unknown for this item (no token ids); use params.unit: chars")
        if n is None
        else ok(next(values), length=float(n))
        for n in lengths
    ]
