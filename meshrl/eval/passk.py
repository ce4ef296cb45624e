"""pass@k: the chance that at least one of k samples is correct, estimated without bias.

Chen et al. (2021), "Evaluating Large Language Models Trained on Code", eq. 1: draw n ≥ k
samples of a prompt, count the c correct ones, then

    pass@k = 1 − C(n − c, k) / C(n, k)

(the chance that k samples drawn without replacement from the n are not all wrong). It is
averaged over prompts. Computed as the stable product 1 − Π_{i=n−c+1..n} (1 − k / i), as in
the paper's numpy snippet, so large n never overflows.
"""

from __future__ import annotations

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one prompt with `c` correct out of `n` samples (needs n ≥ k)."""
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k: correct count c={c} must be within 0..n={n}")
    if k < 1 or n < k:
        raise ValueError(f"pass_at_k: need 1 ≤ k ≤ n, got k={k}, n={n}; sample more per prompt")
    if n - c < k:
        return 1.0  # every way of picking k includes a correct one
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def mean_pass_at_k(counts: list[tuple[int, int]], k: int) -> float:
    """pass@k averaged over prompts, from (n, c) per prompt."""
    if not counts:
        raise ValueError("mean_pass_at_k: no prompts")
    return float(np.mean([pass_at_k(n, c, k) for n, c in counts]))
