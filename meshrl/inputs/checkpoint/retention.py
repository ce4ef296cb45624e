"""Retention: tag, prune and roll back the checkpoints of a run.

- `tag(run_dir, step, name)` protects a checkpoint from pruning.
- `prune(run_dir, keep_last=K)` keeps the newest K intact checkpoints plus every tagged
  one and deletes older intact ones. Corrupt checkpoints are never pruned (they are
  evidence; `list_checkpoints` shows them); partial `.tmp-PID` saves are deleted when
  their process is no longer alive on this host.
- `rollback(run_dir, to_step)` makes `to_step` current by MOVING every later checkpoint
  into `checkpoints/rolled_back/<time>-to-step_K/` (with a `ROLLBACK.json` note). Nothing
  is deleted; `latest_good_checkpoint` then returns `to_step`, and a resumed run writes
  new `step_N` folders without colliding with the ones it replaced. (No CURRENT pointer
  file: the newest folder in `checkpoints/` is always the current one.)

Deleting goes through a rename to `step_N.tmp-PID` first, so a crash mid-delete leaves a
folder that readers already ignore instead of a half-empty `step_N`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.layout import ROLLED_BACK, checkpoints_dir, find_step, partial_dirs, step_dirs
from meshrl.inputs.checkpoint.manifest import read_manifest, verify_checkpoint
from meshrl.inputs.checkpoint.scan import inspect_checkpoint
from meshrl.inputs.checkpoint.tags import read_tags, write_tags


def tag(run_dir: str | Path, step: int, name: str) -> Path:
    """Add tag `name` to checkpoint `step` (its manifest must be intact); return its folder."""
    path = find_step(run_dir, step)
    read_manifest(path)
    write_tags(path, read_tags(path) + [name])
    return path


def untag(run_dir: str | Path, step: int, name: str) -> Path:
    path = find_step(run_dir, step)
    tags = read_tags(path)
    if name not in tags:
        raise CheckpointError(f"step {step} has no tag {name!r} (its tags: {tags or 'none'})")
    write_tags(path, [t for t in tags if t != name])
    return path


def prune(run_dir: str | Path, keep_last: int) -> list[Path]:
    """Delete intact, untagged checkpoints older than the newest `keep_last`; return what went."""
    if keep_last < 1:
        raise CheckpointError(f"prune(keep_last={keep_last}): keep at least 1 checkpoint")
    rows = [inspect_checkpoint(path, step, full=False) for step, path in step_dirs(run_dir)]
    intact = [r for r in rows if r.status == "ok"]
    keep = {r.step for r in intact[-keep_last:]} | {r.step for r in intact if r.tags}
    doomed = [r.path for r in intact if r.step not in keep]
    doomed += [p for _, pid, p in partial_dirs(run_dir) if not _alive(pid)]
    for path in doomed:
        _delete(path)
    return doomed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _delete(path: Path) -> None:
    if ".tmp-" not in path.name:
        doomed = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        os.rename(path, doomed)
        path = doomed
    shutil.rmtree(path)


def rollback(run_dir: str | Path, to_step: int) -> Path:
    """Make checkpoint `to_step` current, moving later ones aside (module docstring)."""
    target = find_step(run_dir, to_step)
    try:
        verify_checkpoint(target)
    except CheckpointError as err:
        raise CheckpointError(f"cannot roll back to step {to_step}: {err}") from err
    later = [p for s, p in step_dirs(run_dir) if s > to_step]
    later += [p for s, _, p in partial_dirs(run_dir) if s > to_step]
    if later:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        aside = checkpoints_dir(run_dir) / ROLLED_BACK / f"{stamp}-to-{target.name}"
        aside.mkdir(parents=True, exist_ok=True)
        for path in later:
            os.rename(path, aside / path.name)
        note = {"to_step": to_step, "moved": sorted(p.name for p in later), "time": stamp}
        (aside / "ROLLBACK.json").write_text(json.dumps(note, indent=2) + "\n")
    return target
