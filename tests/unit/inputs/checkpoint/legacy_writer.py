"""Write a checkpoint the way meshrl's format 1 did (dcp/, schedulers.pt, rng/rank_0.pt): a test fixture.

The converter and the refusals need such a folder; format 1's writer is gone from meshrl, so
this is it, kept to what that writer produced: torch.distributed.checkpoint for model and
optimizer (parameter-name keys), torch.save pickles for schedulers and RNG states, JSON for
state and config, and a format-1 manifest (sha256 of every file, unsigned).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import torch

from meshrl.inputs.checkpoint.manifest import _self_hash, data_files, hash_files


def old_rng() -> dict:
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    numpy = {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos)}
    numpy.update(has_gauss=int(has_gauss), cached=float(cached))
    return {"python": random.getstate(), "numpy": numpy, "torch": torch.get_rng_state()}


def write_legacy(run: Path, step: int, model, optimizer, scheduler, state: dict) -> Path:
    """RUN/checkpoints/step_N in format 1; returns the folder."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    ckpt = run / "checkpoints" / f"step_{step}"
    (ckpt / "rng").mkdir(parents=True)
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save(
        {"policy": {"model": model_sd, "optim": optim_sd}},
        storage_writer=dcp.FileSystemWriter(str(ckpt / "dcp")),
        no_dist=True,
    )
    torch.save({"policy": scheduler.state_dict()}, ckpt / "schedulers.pt")
    torch.save(old_rng(), ckpt / "rng" / "rank_0.pt")
    (ckpt / "state.json").write_text(json.dumps(state))
    manifest = {
        "format": "meshrl-checkpoint/1",
        "step": step,
        "config_hash": "old",
        "parts": ["policy"],
        "world_size": 1,
    }
    manifest["files"] = hash_files(ckpt, data_files(ckpt))
    manifest["manifest_sha256"] = _self_hash(manifest)
    (ckpt / "manifest.json").write_text(json.dumps(manifest))
    return ckpt
