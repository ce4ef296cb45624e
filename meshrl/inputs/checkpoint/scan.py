"""Find checkpoints in a run dir and tell good ones from corrupt or unfinished ones.

`latest_good_checkpoint` walks back from the newest step and returns the first one whose
manifest is intact and whose files all match it, logging why each newer one was skipped
(missing manifest, tampered manifest, checksum mismatch naming the file, a partial
`.tmp-*` save).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.layout import checkpoints_dir, partial_dirs, step_dirs
from meshrl.inputs.checkpoint.manifest import verify_checkpoint
from meshrl.inputs.checkpoint.tags import read_tags

log = logging.getLogger(__name__)


@dataclass
class CheckpointInfo:
    """One row of `list_checkpoints`: status is "ok", "corrupt" or "partial"."""

    step: int
    path: Path
    status: str
    reason: str = ""
    created: str = ""
    size: int = 0
    tags: list[str] = field(default_factory=list)


def inspect_checkpoint(path: Path, step: int, *, full: bool = True) -> CheckpointInfo:
    """The status of one finished checkpoint folder (`full=False`: sizes only, no hashing)."""
    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    try:
        manifest = verify_checkpoint(path, full=full)  # first: nothing else is read from an untrusted folder
        tags = read_tags(path)
    except CheckpointError as err:
        return CheckpointInfo(step, path, "corrupt", str(err), size=size)
    return CheckpointInfo(step, path, "ok", created=manifest.get("created", ""), size=size, tags=tags)


def list_checkpoints(run_dir: str | Path, *, full: bool = True) -> list[CheckpointInfo]:
    """Every checkpoint of a run, finished or partial, oldest step first."""
    rows = [inspect_checkpoint(path, step, full=full) for step, path in step_dirs(run_dir)]
    rows += [
        CheckpointInfo(
            step,
            path,
            "partial",
            f"unfinished save by process {pid} ({path.name}); ignored",
            size=sum(p.stat().st_size for p in path.rglob("*") if p.is_file()),
        )
        for step, pid, path in partial_dirs(run_dir)
    ]
    return sorted(rows, key=lambda r: (r.step, r.status != "ok"))


def latest_good_checkpoint(run_dir: str | Path, *, missing_ok: bool = False) -> Path | None:
    """The newest verified checkpoint of `run_dir`.

    Raises CheckpointError listing every skipped checkpoint and why when none is usable;
    with `missing_ok`, a run dir with no checkpoints at all (a fresh run) gives None.
    """
    skipped = [f"{path.name}: partial save, ignored" for _, _, path in partial_dirs(run_dir)]
    for step, path in reversed(step_dirs(run_dir)):
        info = inspect_checkpoint(path, step)
        if info.status == "ok":
            for reason in skipped:
                log.warning("skipping checkpoint %s", reason)
            return path
        skipped.append(f"{path.name}: {info.reason}")
    if not step_dirs(run_dir) and missing_ok:
        return None
    root = checkpoints_dir(run_dir)
    detail = "; ".join(skipped) if skipped else "the folder is empty or missing"
    raise CheckpointError(f"no usable checkpoint in {root}: {detail}")
