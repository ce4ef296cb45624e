"""Load a checkpoint into live objects, after verifying it against its manifest.

`load_checkpoint(path)` accepts a `step_N` folder or a run dir (then the newest good
checkpoint is used). Nothing is touched until every checksum matches and, when
`new_config` is given, the config is compatible. Every rank of a process group calls it
with its own (possibly sharded) model; DCP reads the slices each rank needs, so the
world size may differ from the one that saved.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Mapping

import torch

from meshrl.inputs.checkpoint import dist
from meshrl.inputs.checkpoint.compat import DEFAULT_KEYS, check_compatible
from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.layout import CHECKPOINTS, CONFIG, DCP_DIR, MANIFEST, RNG_DIR, SCHEDULERS, STATE
from meshrl.inputs.checkpoint.manifest import verify_checkpoint
from meshrl.inputs.checkpoint.parts import Part, apply_part_state, collect_parts, part_state, quiet_single_process
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
    if (path / MANIFEST).exists() or (path / DCP_DIR).exists():
        verify_checkpoint(path)
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
    return json.loads(path.read_text()) if path.is_file() else None


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
    return json.loads((ckpt / STATE).read_text())


def load_shards(ckpt: Path, parts: dict[str, Part]) -> None:
    """Fill every part's model (and optimizer, when given) from `ckpt/dcp`, unpickling
    nothing but plain data (safe_dcp.py)."""
    import torch.distributed.checkpoint as dcp  # lazy: torch.distributed.checkpoint costs ~0.5-4 s; only when shards are read
    from torch.distributed.checkpoint.api import (
        CheckpointException,
    )  # lazy: torch.distributed.checkpoint costs ~0.5-4 s; only when shards are read
    from meshrl.inputs.checkpoint.safe_dcp import (
        SafePlanner,
        SafeReader,
        unsafe_cause,
    )  # lazy: imports torch.distributed.checkpoint, see above

    _check_saved_parts(ckpt, parts)
    sd = {name: part_state(part) for name, part in parts.items()}
    try:
        with quiet_single_process():
            dcp.load(
                sd, storage_reader=SafeReader(str(ckpt / DCP_DIR)), planner=SafePlanner(), no_dist=not dist.active()
            )
    except (Exception, CheckpointException) as err:  # a BaseException in DCP: add context
        if unsafe_cause(err) is not None:
            raise CheckpointError(f"{ckpt}: {unsafe_cause(err)}") from None
        last = [line for line in str(err).splitlines() if line.strip()][-1:] or [type(err).__name__]
        raise CheckpointError(
            f"{ckpt}: could not load parts {sorted(parts)}: {last[0]}; the "
            f"model or optimizer does not match the saved one (architecture, "
            f"parameter names, optimizer type)"
        ) from err
    for name, part in parts.items():
        apply_part_state(part, sd[name])


def _check_saved_parts(ckpt: Path, parts: dict[str, Part]) -> None:
    """Name a part (or a part's optimizer) that the checkpoint does not hold, before DCP does."""
    from meshrl.inputs.checkpoint.safe_dcp import (
        SafeReader,
        UnsafeCheckpoint,
    )  # lazy: torch.distributed.checkpoint, see load_shards

    try:
        metadata = SafeReader(str(ckpt / DCP_DIR)).read_metadata()
    except UnsafeCheckpoint as err:
        raise CheckpointError(f"{ckpt}: {err}") from None
    saved = {key.split(".")[0] + "." + key.split(".")[1] for key in metadata.state_dict_metadata}
    for name, part in parts.items():
        wanted = [f"{name}.model"] + ([f"{name}.optim"] if part.optimizer is not None else [])
        missing = [w for w in wanted if w not in saved]
        if missing:
            raise CheckpointError(
                f"{ckpt}: the checkpoint has no {missing[0]!r} (it holds "
                f"{sorted(saved)}); pass optimizer=None / drop that extra "
                f"module to load what it has"
            )


def _load_schedulers(ckpt: Path, parts: dict[str, Part]) -> None:
    saved = torch.load(ckpt / SCHEDULERS, weights_only=True)
    for name, part in parts.items():
        if part.scheduler is None:
            continue
        if name not in saved:
            raise CheckpointError(
                f"{ckpt} has no scheduler state for part {name!r} "
                f"(saved: {sorted(saved)}); pass scheduler=None to skip it"
            )
        part.scheduler.load_state_dict(saved[name])
