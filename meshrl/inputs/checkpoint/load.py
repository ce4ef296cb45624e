"""Load a checkpoint into live objects, after verifying it against its manifest.

`load_checkpoint(path)` accepts a `step_N` folder or a run dir (then the newest good
checkpoint is used). Nothing is read but the manifest until its signature verifies with the
user's checkpoint key and every checksum matches, and nothing is touched until, when
`new_config` is given, the config is compatible. Every file read is safetensors or JSON:
nothing is unpickled. Every rank of a process group calls it with its own (possibly
sharded) model and keeps the slices it needs, so the world size may differ from the one
that saved.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

from meshrl.inputs.checkpoint import dist
from meshrl.inputs.checkpoint.compat import DEFAULT_KEYS, check_compatible
from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.layout import CHECKPOINTS, CONFIG, LEGACY_NAMES, MANIFEST, RNG_DIR, SCHEDULERS, STATE
from meshrl.inputs.checkpoint.manifest import verify_checkpoint
from meshrl.inputs.checkpoint.parts import Part, collect_parts
from meshrl.inputs.checkpoint.reading import read_json
from meshrl.inputs.checkpoint.rng import load_rng
from meshrl.inputs.checkpoint.scan import latest_good_checkpoint

log = logging.getLogger(__name__)


def resolve_checkpoint(path_or_run_dir: str | Path) -> Path:
    """A verified checkpoint: a `step_N` folder as given, or the newest good one of a run dir.

    Under a process group rank 0 verifies and broadcasts its answer (or its error), so
    every rank loads the same checkpoint and the files are hashed once, not once per rank.
    """

    def on_main() -> tuple[str | None, str | None]:
        try:
            return str(_resolve_here(Path(path_or_run_dir))), None
        except CheckpointError as err:
            return None, str(err)

    found, error = dist.broadcast_from_main(on_main() if dist.rank() == 0 else None)
    if error is not None:
        raise CheckpointError(error)
    return Path(found)


def _resolve_here(path: Path) -> Path:
    if (path / MANIFEST).exists() or any((path / name).exists() for name in LEGACY_NAMES):
        verify_checkpoint(path)  # an older meshrl's folder is refused first, by its names
        return path
    if path.is_dir() and (path / CHECKPOINTS).is_dir():
        return latest_good_checkpoint(path)  # verifies while it walks back
    raise CheckpointError(
        f"{path} is neither a checkpoint (no {MANIFEST}) nor a run dir with "
        f"{CHECKPOINTS}/; pass RUN_DIR or RUN_DIR/{CHECKPOINTS}/step_N"
    )


def read_config(ckpt: str | Path) -> dict | None:
    """The resolved run config saved with the checkpoint (None when none was given)."""
    path = Path(ckpt) / CONFIG
    return read_json(path) if path.is_file() else None


def load_checkpoint(
    path_or_run_dir: str | Path,
    *,
    model,
    optimizer=None,
    scheduler=None,
    extra_modules: Mapping | None = None,
    restore_rng: bool = True,
    new_config: dict | None = None,
    compat_keys: tuple[str, ...] = DEFAULT_KEYS,
) -> dict:
    """Verify, then load weights, optimizer, schedulers and RNG; return the saved `state`.

    `optimizer=None` loads the weights only. `new_config` (the resuming run's resolved
    config) is checked against the saved one first; see `check_compatible`.
    """
    ckpt = resolve_checkpoint(path_or_run_dir)
    if new_config is not None:
        check_compatible(read_config(ckpt) or {}, new_config, keys=compat_keys)
    parts = collect_parts(model, optimizer, scheduler, extra_modules)
    load_shards(ckpt, parts)
    _load_schedulers(ckpt, parts)
    if restore_rng and not load_rng(ckpt / RNG_DIR, dist.rank()):
        log.warning(
            "%s has no RNG state for rank %d (saved with another world size); "
            "random streams will differ from the original run",
            ckpt,
            dist.rank(),
        )
    return read_json(ckpt / STATE)


def load_shards(ckpt: Path, parts: dict[str, Part]) -> None:
    """Fill every part's model (and optimizer, when given) from `ckpt` (verified by the caller)."""
    from meshrl.inputs.checkpoint.state_files import (
        apply_part,
        read_part,
    )  # lazy: torch.distributed.checkpoint.state_dict costs ~0.5-4 s; only when state is read

    for name, part in parts.items():
        apply_part(part, read_part(ckpt, name, part), ckpt, name)


def _load_schedulers(ckpt: Path, parts: dict[str, Part]) -> None:
    saved = read_json(ckpt / SCHEDULERS)
    if not isinstance(saved, dict):
        raise CheckpointError(
            f"{ckpt / SCHEDULERS}: not a mapping of part to scheduler state; the checkpoint is damaged"
        )
    for name, part in parts.items():
        if part.scheduler is None:
            continue
        if name not in saved:
            raise CheckpointError(
                f"{ckpt} has no scheduler state for part {name!r} "
                f"(saved: {sorted(saved)}); pass scheduler=None to skip it"
            )
        part.scheduler.load_state_dict(saved[name])
