"""Disk check: room under the run dir for K checkpoints of this model.

One checkpoint ≈ P × (4 + 8) bytes: fp32 weights (4 B/param) plus AdamW's two fp32 moments
(exp_avg, exp_avg_sq: 8 B/param), i.e. weights + 2× for optimizer state. A save writes the
new checkpoint before the oldest is pruned, so K kept checkpoints need room for K + 1.
P comes from the model check (headers only).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from meshrl.cli.doctor.check import Check, failed, passed, skipped

NAME = "disk for checkpoints"
BYTES_PER_PARAM = 4 + 8
GB = 1e9


def checkpoint_bytes(parameters: int) -> int:
    return parameters * BYTES_PER_PARAM


def needed_bytes(parameters: int, keep: int) -> int:
    return (keep + 1) * checkpoint_bytes(parameters)


def existing_ancestor(path: Path) -> Path:
    path = path.resolve()
    while not path.exists():
        path = path.parent
    return path


def check_disk(ctx) -> Check:
    if ctx.config is None:
        return skipped(NAME, "no config given")
    if ctx.parameters is None:
        return skipped(NAME, "model size unknown (the model check did not pass)")
    run_dir = Path(ctx.config.run.dir)
    where = existing_ancestor(run_dir)
    free = shutil.disk_usage(where).free
    need = needed_bytes(ctx.parameters, ctx.keep_checkpoints)
    summary = (
        f"{ctx.keep_checkpoints}+1 checkpoints × {checkpoint_bytes(ctx.parameters) / GB:.3g} GB "
        f"= {need / GB:.3g} GB needed, {free / GB:.3g} GB free at {where}"
    )
    if free < need:
        return failed(
            NAME,
            summary,
            f"free {(need - free) / GB:.3g} GB there, set run.dir to a bigger disk, "
            f"or keep fewer checkpoints (prune with keep_last)",
        )
    return passed(NAME, summary)
