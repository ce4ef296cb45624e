"""Random-number-generator states (python, numpy, torch CPU, CUDA) captured and restored.

Each rank saves its own pair of files: ranks draw different numbers (dropout, sampling), so
one shared state would not resume any rank but 0 exactly. Nothing is pickled: torch's
generator states (uint8 tensors) go to `rng/rank_R.safetensors`, python's and numpy's
(integers, a float) to `rng/rank_R.json`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.reading import read_json, read_tensors


def capture_rng() -> tuple[dict, dict]:
    """(tensors, plain data): the current state of every generator this process uses."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss = random.getstate()
    plain = {
        "python": {"version": version, "internal": list(internal), "gauss": gauss},
        "numpy": {"kind": kind, "keys": keys.tolist(), "pos": int(pos), "has_gauss": int(has_gauss), "cached": cached},
    }
    tensors = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        tensors.update({f"cuda.{i}": state for i, state in enumerate(torch.cuda.get_rng_state_all())})
    return tensors, plain


def restore_rng(tensors: dict, plain: dict) -> None:
    """Put back what `capture_rng` returned (CUDA only when both sides have it)."""
    py = plain["python"]
    random.setstate((py["version"], tuple(py["internal"]), py["gauss"]))
    n = plain["numpy"]
    np.random.set_state((n["kind"], np.array(n["keys"], dtype=np.uint32), n["pos"], n["has_gauss"], n["cached"]))
    torch.set_rng_state(tensors["torch"])
    cuda = [tensors[k] for k in sorted((k for k in tensors if k.startswith("cuda.")), key=lambda k: int(k[5:]))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)


def save_rng(folder: Path, rank: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tensors, plain = capture_rng()
    save_file(tensors, folder / f"rank_{rank}.safetensors")
    (folder / f"rank_{rank}.json").write_text(json.dumps(plain) + "\n")


def load_rng(folder: Path, rank: int) -> bool:
    """Restore this rank's saved states; False when the checkpoint has none for this rank."""
    tensors, plain = folder / f"rank_{rank}.safetensors", folder / f"rank_{rank}.json"
    if not (tensors.is_file() and plain.is_file()):
        return False
    try:
        restore_rng(read_tensors(tensors), read_json(plain))
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"{folder}: rank {rank}'s RNG state is damaged ({type(err).__name__}: {err})") from None
    return True
