"""Random-number-generator states (python, numpy, torch CPU, CUDA) captured and restored.

Each rank saves its own file (`rng/rank_R.pt`): ranks draw different numbers (dropout,
sampling), so one shared state would not resume any rank but 0 exactly. Everything is
stored as tensors, ints and tuples so `torch.load(weights_only=True)` reads it.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch


def capture_rng() -> dict:
    """The current state of every generator this process uses."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    states = {
        "python": random.getstate(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached": float(cached),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng(states: dict) -> None:
    """Put back what `capture_rng` returned (CUDA only when both sides have it)."""
    random.setstate(states["python"])
    n = states["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached"]))
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def save_rng(folder: Path, rank: int) -> Path:
    path = folder / f"rank_{rank}.pt"
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(capture_rng(), path)
    return path


def load_rng(folder: Path, rank: int) -> bool:
    """Restore this rank's saved states; False when the checkpoint has none for this rank."""
    path = folder / f"rank_{rank}.pt"
    if not path.is_file():
        return False
    restore_rng(torch.load(path, weights_only=True))
    return True
