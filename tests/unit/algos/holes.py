"""A batch of multi-turn trajectories for the hole tests: masks with observation holes.

Five rows, response width 6. 1 = a token the model wrote, 0 = an observation token (a hole
inside the response) or padding (after the last real token). Rows 0-2 are group 7, rows 3-4
group 9:

    row 0: [1 1 0 0 1 0]  model tokens at columns 0 1 4       (turn, observation, turn, pad)
    row 1: [1 0 1 1 1 1]  model tokens at columns 0 2 3 4 5
    row 2: [1 1 1 0 0 0]  model tokens at columns 0 1 2       (a single turn, padded)
    row 3: [1 0 0 0 0 1]  model tokens at columns 0 5         (a long observation)
    row 4: [1 1 0 1 0 0]  model tokens at columns 0 1 3

Per-token inputs are written as lists of the model tokens' values (`spread` puts them at
those columns). Whatever sits in the holes and the padding must not matter: `spread` fills
them with `garbage` — realistic values of the right kind (log-probs ≤ 0, values of a
critic), far from the model tokens' — and every test checks the result equals the one with
zeros there.
"""

import torch

MASK = torch.tensor(
    [[1, 1, 0, 0, 1, 0], [1, 0, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 1], [1, 1, 0, 1, 0, 0]],
    dtype=torch.float32,
)
COLUMNS = [[0, 1, 4], [0, 2, 3, 4, 5], [0, 1, 2], [0, 5], [0, 1, 3]]
GROUPS = torch.tensor([7, 7, 7, 9, 9])
GROUP_ROWS = {7: [0, 1, 2], 9: [3, 4]}
REWARDS = torch.tensor([1.0, 0.0, 0.5, 2.0, 1.0])
# a per-token reward on some model tokens (e.g. a KL penalty or a turn reward)
TOKEN_REWARDS = [[-0.1, 0.0, -0.2], [0.0, -0.1, 0.0, 0.0, -0.3], [-0.05, 0.0, 0.0], [0.0, -0.4], [0.0, 0.0, -0.2]]
# the score of each episode: reward + Σ token rewards over its model tokens
SCORES = [0.7, -0.4, 0.45, 1.6, 0.8]
LENGTHS = [3, 5, 3, 2, 3]  # model tokens per row


def spread(values: list[list[float]], garbage: float = 0.0) -> torch.Tensor:
    """[5, 6]: row b's values at its model-token columns, `garbage` everywhere else."""
    out = torch.full(MASK.shape, float(garbage))
    for row, (columns, row_values) in enumerate(zip(COLUMNS, values)):
        out[row, columns] = torch.tensor(row_values, dtype=torch.float32)
    return out


def spread_garbage(values: list[list[float]], low: float, high: float, seed: int = 0) -> torch.Tensor:
    """`spread` with uniform random garbage in [low, high) at holes and padding."""
    generator = torch.Generator().manual_seed(seed)
    noise = low + (high - low) * torch.rand(MASK.shape, generator=generator)
    return torch.where(MASK > 0, spread(values), noise)


def on_model_tokens(per_row: list[float]) -> torch.Tensor:
    """[5, 6]: one value per row repeated on each of its model tokens, 0 elsewhere."""
    return spread([[value] * n for value, n in zip(per_row, LENGTHS)])


def model_tokens(x: torch.Tensor) -> list[list[float]]:
    """The values of `x` [5, 6] at each row's model tokens, as lists."""
    return [x[row, columns].tolist() for row, columns in enumerate(COLUMNS)]
