"""A resumable position in an endless, epoch-shuffled stream of dataset indices.

Epoch `e` visits the `n` rows in the order `permutation(n)` drawn from
`numpy.random.default_rng([seed, e])` (or 0..n-1 when not shuffling), so the order depends
only on (seed, epoch): saving (epoch, index, seed, n) and restoring it yields exactly the
same next rows, which is what a checkpoint needs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from meshrl.inputs.data.rows import DatasetError


@dataclass
class EpochCursor:
    n: int
    seed: int = 0
    shuffle: bool = True
    epoch: int = 0
    index: int = 0  # position inside the current epoch's order

    def __post_init__(self) -> None:
        if self.n < 1:
            raise DatasetError(
                "the dataset has no rows left to sample (n=0); check the file and the max_prompt_tokens filter"
            )

    def order(self, epoch: int) -> np.ndarray:
        """Row indices in the order epoch `epoch` visits them."""
        if not self.shuffle:
            return np.arange(self.n)
        return np.random.default_rng([self.seed, epoch]).permutation(self.n)

    def take(self, k: int) -> np.ndarray:
        """The next `k` row indices (crossing epoch boundaries), advancing the cursor."""
        parts, left = [], k
        while left > 0:  # one slice per epoch touched, not one step per row
            chunk = self.order(self.epoch)[self.index : self.index + left]
            parts.append(chunk)
            left -= len(chunk)
            self.index += len(chunk)
            if self.index == self.n:
                self.epoch, self.index = self.epoch + 1, 0
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def state_dict(self) -> dict:
        return asdict(self)

    def load_state_dict(self, state: dict) -> None:
        """Restore a saved position; refuses a state saved for a dataset of another size."""
        if state["n"] != self.n:
            raise DatasetError(
                f"cursor was saved for {state['n']} rows but the dataset has "
                f"{self.n}; resume with the same data file and filters"
            )
        self.seed, self.shuffle = int(state["seed"]), bool(state["shuffle"])
        self.epoch, self.index = int(state["epoch"]), int(state["index"])
