"""Reward-model score normalisation: running mean/std over every score seen, then clipping.

    norm = RewardNormalizer(mode="running", clip=5.0)
    norm([1.0, 2.0, 3.0])   # stats updated with the batch first → [-1.2247, 0.0, 1.2247]

`running`: Welford's online mean and population variance over all scores so far (this
replica's; each replica keeps its own), z = (x - mean) / sqrt(var + eps). The batch updates
the statistics before it is normalised, so the first batch is centred on itself. `clip`
bounds the result to [-clip, clip] (after normalising, or on raw scores with mode none).
Simplification: statistics are not persisted; a restarted replica starts them afresh.
"""

from __future__ import annotations

import math
from typing import Literal


class RewardNormalizer:
    def __init__(self, mode: Literal["none", "running"] = "none", clip: float | None = None, eps: float = 1e-8):
        if mode not in ("none", "running"):
            raise ValueError(f"normalize must be 'none' or 'running', got {mode!r}")
        if clip is not None and not clip > 0:
            raise ValueError(f"clip must be a positive number (the bound of |reward|), got {clip!r}")
        self.mode, self.clip, self.eps = mode, clip, eps
        self.count, self.mean, self.m2 = 0, 0.0, 0.0

    def update(self, x: float) -> None:
        self.count += 1
        delta = x - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (x - self.mean)

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / self.count + self.eps) if self.count else 1.0

    def __call__(self, scores: list[float]) -> list[float]:
        out = list(scores)
        if self.mode == "running":
            for x in scores:
                self.update(x)
            out = [(x - self.mean) / self.std for x in scores]
        if self.clip is not None:
            out = [max(-self.clip, min(self.clip, x)) for x in out]
        return out
