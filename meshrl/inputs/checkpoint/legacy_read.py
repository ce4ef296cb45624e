"""Read a format-1 checkpoint (legacy.py) by unpickling it: for the converter alone.

    parts, schedulers, rngs = read_legacy(ckpt)

`dcp/` is read whole through torch.distributed.checkpoint (its `.metadata` and non-tensor
values are pickles), `schedulers.pt` and `rng/rank_R.pt` with `torch.load(weights_only=False)`.
Any of these runs the code a crafted file carries: only `convert_checkpoint`, which the
operator reaches with an explicit flag, imports this module. No loader does.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.layout import RNG_DIR

RANK_FILE = re.compile(r"^rank_(\d+)\.pt$")


def read_legacy(ckpt: Path) -> tuple[dict, dict, dict]:
    """({part: (model state, optimizer state or None)}, {part: scheduler state}, {rank: (tensors, plain)})."""
    whole = _read_dcp(ckpt / "dcp")
    parts = {name: (state["model"], state.get("optim")) for name, state in whole.items()}
    schedulers = torch.load(ckpt / "schedulers.pt", weights_only=False) if (ckpt / "schedulers.pt").is_file() else {}
    rngs = {}
    for path in sorted((ckpt / RNG_DIR).glob("rank_*.pt")):
        rngs[int(RANK_FILE.match(path.name).group(1))] = _rng_v2(torch.load(path, weights_only=False))
    return parts, schedulers, rngs


def _read_dcp(folder: Path) -> dict:
    from torch.distributed.checkpoint import FileSystemReader  # lazy: seconds, only when converting
    from torch.distributed.checkpoint.default_planner import _EmptyStateDictLoadPlanner
    from torch.distributed.checkpoint.state_dict_loader import _load_state_dict

    state: dict = {}
    try:
        _load_state_dict(
            state, storage_reader=FileSystemReader(str(folder)), planner=_EmptyStateDictLoadPlanner(), no_dist=True
        )
    except Exception as err:  # DCP wraps a reader's errors per rank; the last line names it
        last = [line.strip() for line in str(err).splitlines() if line.strip()][-1:] or [type(err).__name__]
        raise CheckpointError(f"{folder}: not a readable torch.distributed.checkpoint folder: {last[0]}") from None
    return state


def _rng_v2(old: dict) -> tuple[dict, dict]:
    """Format 1's RNG dict as rng.py's (tensors, plain data)."""
    version, internal, gauss = old["python"]
    n = old["numpy"]
    keys = n["keys"].numpy() if torch.is_tensor(n["keys"]) else np.asarray(n["keys"])
    plain = {
        "python": {"version": version, "internal": list(internal), "gauss": gauss},
        "numpy": {
            "kind": n["kind"],
            "keys": keys.astype(np.uint32).tolist(),
            "pos": int(n["pos"]),
            "has_gauss": int(n["has_gauss"]),
            "cached": float(n["cached"]),
        },
    }
    tensors = {"torch": old["torch"]}
    tensors.update({f"cuda.{i}": state for i, state in enumerate(old.get("cuda") or [])})
    return tensors, plain
