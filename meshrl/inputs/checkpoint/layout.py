"""Where checkpoints live inside a run dir, and how their folders are named.

    RUN_DIR/checkpoints/step_N/            a finished checkpoint (renamed into place atomically)
    RUN_DIR/checkpoints/step_N.tmp-PID/    a save in progress, or one that crashed (ignored)
    RUN_DIR/checkpoints/rolled_back/...    checkpoints moved aside by `rollback` (never deleted)

Inside a checkpoint (format 2), nothing that can carry code: tensors in safetensors, the rest
in JSON.

    model/PART.safetensors      a part's full (unsharded) weights, keyed by parameter name
    optim/PART.safetensors      its optimizer's tensors, keyed `PARAM_NAME/STATE_NAME`
    optim/PART.json             its optimizer's param_groups and any non-tensor state
    rng/rank_R.safetensors      rank R's torch (and CUDA) generator states, uint8
    rng/rank_R.json             rank R's python and numpy generator states
    schedulers.json, state.json, config.json, hf_config/ (the model's HF config)
    manifest.json               sha256 + size of every other file, signed (key.py)
    tags.json                   mutable, not hashed

An older meshrl wrote `dcp/` (torch.distributed.checkpoint, pickled metadata) and `.pt` files:
`LEGACY_NAMES` tells such a folder apart so it is refused before any of it is read.
"""

from __future__ import annotations

import re
from pathlib import Path

from meshrl import run_layout
from meshrl.inputs.checkpoint.errors import CheckpointError

CHECKPOINTS = run_layout.CHECKPOINTS
FORMAT = "meshrl-checkpoint/2"  # the manifest's "format": what this meshrl writes and reads
ROLLED_BACK = "rolled_back"
MANIFEST = "manifest.json"
TAGS = "tags.json"
MODEL_DIR = "model"
OPTIM_DIR = "optim"
RNG_DIR = "rng"
SCHEDULERS = "schedulers.json"
LEGACY_NAMES = ("dcp", "schedulers.pt")  # what only a format-1 checkpoint holds
STATE = "state.json"
CONFIG = "config.json"
HF_CONFIG_DIR = "hf_config"
UNHASHED = (MANIFEST, TAGS)  # name prefixes: tags.json and its temporary files

STEP_RE = re.compile(r"^step_(\d+)$")
PARTIAL_RE = re.compile(r"^step_(\d+)\.tmp-(\d+)$")


def step_name(step: int) -> str:
    return f"step_{int(step)}"


def checkpoints_dir(run_dir: str | Path, *, must_exist: bool = True) -> Path:
    """RUN_DIR/checkpoints; with `must_exist`, a clear error when the run dir is missing."""
    run = Path(run_dir)
    if must_exist and not run.is_dir():
        raise CheckpointError(
            f"run dir {run} does not exist; pass the run's directory (the one holding config.yaml and checkpoints/)"
        )
    return run / CHECKPOINTS


def step_dirs(run_dir: str | Path) -> list[tuple[int, Path]]:
    """Finished checkpoint folders (step, path), oldest first; [] when there are none."""
    root = checkpoints_dir(run_dir)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if p.is_dir() and (m := STEP_RE.match(p.name))]
    return sorted(found)


def partial_dirs(run_dir: str | Path) -> list[tuple[int, int, Path]]:
    """Unfinished saves (step, pid, path): `step_N.tmp-PID` folders, oldest step first."""
    root = checkpoints_dir(run_dir)
    if not root.is_dir():
        return []
    found = [
        (int(m.group(1)), int(m.group(2)), p) for p in root.iterdir() if p.is_dir() and (m := PARTIAL_RE.match(p.name))
    ]
    return sorted(found)


def find_step(run_dir: str | Path, step: int) -> Path:
    """The folder of finished checkpoint `step`, or an error listing the steps that exist."""
    path = checkpoints_dir(run_dir) / step_name(step)
    if not path.is_dir():
        have = [s for s, _ in step_dirs(run_dir)]
        raise CheckpointError(f"no checkpoint for step {step} in {path.parent}; available steps: {have or 'none'}")
    return path


def step_of(path: Path) -> int | None:
    """The step a `step_N` folder holds, None for any other name."""
    m = STEP_RE.match(Path(path).name)
    return int(m.group(1)) if m else None
