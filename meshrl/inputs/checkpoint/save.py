"""Write a checkpoint atomically: into `step_N.tmp-PID`, then one `os.rename` to `step_N`.

Order: every rank gathers the parts' whole state to rank 0 (state_files.py), which writes
it (`model/`, `optim/`: safetensors + JSON); every rank writes its RNG states (`rng/`).
Rank 0 alone then writes the small files (`schedulers.json`, `state.json`, `config.json`,
`hf_config/`), hashes everything into `manifest.json`, signs it with the user's checkpoint
key (key.py) and renames the folder into place. A crash at any point leaves only a
`.tmp-PID` folder, which readers ignore: a `step_N` folder is always complete.

If `step_N` already exists (a run resumed from an earlier step reaches N again) the old
folder is moved to `checkpoints/rolled_back/replaced-<time>/`, never deleted.

Simplifications: every rank must see the same run dir (one host, or a shared filesystem);
the PID in the temporary name is rank 0's, broadcast to the others.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Mapping

import torch

from meshrl.inputs.checkpoint import dist
from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.key import signer_for_save
from meshrl.inputs.checkpoint.layout import (
    CONFIG,
    HF_CONFIG_DIR,
    RNG_DIR,
    ROLLED_BACK,
    SCHEDULERS,
    STATE,
    checkpoints_dir,
    step_name,
)
from meshrl.inputs.checkpoint.manifest import write_manifest, write_text_durable
from meshrl.inputs.checkpoint.parts import POLICY, Part, collect_parts
from meshrl.inputs.checkpoint.rng import save_rng
from meshrl.inputs.checkpoint.state_files import gather_part, write_part
from meshrl.inputs.checkpoint.tags import write_tags

log = logging.getLogger(__name__)


def save_checkpoint(
    run_dir: str | Path,
    step: int,
    *,
    model,
    optimizer,
    scheduler=None,
    extra_modules: Mapping | None = None,
    state: dict | None = None,
    config_hash: str,
    config: dict | None = None,
    tag: str | None = None,
) -> Path:
    """Save everything needed to resume at `step`; return `RUN_DIR/checkpoints/step_N`.

    `state` is anything JSON-able (dataset cursor, trained group ids, policy version...);
    `config` the resolved run config as a dict (kept for `check_compatible`). Every rank
    of a process group must call this with its own (sharded) model and optimizer.
    """
    parts = collect_parts(model, optimizer, scheduler, extra_modules)
    state_text, config_text = _json_or_error("state", state or {}), _json_or_error("config", config)
    signer = _signer_on_main()
    final, tmp = _fresh_tmp(run_dir, step)
    _write_rank_files(parts, tmp)
    if dist.rank() == 0:
        _write_small_files(tmp, parts, state_text, config_text)
        _write_signed_manifest(tmp, step, config_hash, parts, signer)
        _publish(tmp, final, tag)
    dist.barrier()
    return final


def _fresh_tmp(run_dir: str | Path, step: int) -> tuple[Path, Path]:
    """(`step_N`, its empty `step_N.tmp-PID` made by rank 0), once every rank is past it."""
    final = checkpoints_dir(run_dir, must_exist=False) / step_name(step)
    tmp = final.with_name(f"{final.name}.tmp-{dist.broadcast_from_main(os.getpid())}")
    if dist.rank() == 0:
        shutil.rmtree(tmp, ignore_errors=True)  # a stale folder of a crashed process, same PID
        tmp.mkdir(parents=True)
    dist.barrier()
    return final, tmp


def _write_rank_files(parts: dict[str, Part], tmp: Path) -> None:
    """What needs every rank: the gathered parts (rank 0 writes them) and each rank's RNG states."""
    _write_parts(parts, tmp)
    save_rng(tmp / RNG_DIR, dist.rank())
    dist.barrier()


def _write_signed_manifest(tmp: Path, step: int, config_hash: str, parts: dict[str, Part], signer) -> None:
    write_manifest(
        tmp,
        step=step,
        config_hash=config_hash,
        extra={"parts": sorted(parts), "world_size": dist.world_size(), "torch_version": torch.__version__},
        signer=signer,
    )


def _signer_on_main():
    """Rank 0's signer of the user's checkpoint key; a key problem fails on every rank, before any write."""
    signer, problem = None, None
    if dist.rank() == 0:
        try:
            signer = signer_for_save()
        except CheckpointError as err:
            problem = str(err)
    problem = dist.broadcast_from_main(problem)
    if problem is not None:
        raise CheckpointError(problem)
    return signer


def _write_parts(parts: dict[str, Part], tmp: Path) -> None:
    """Every rank gathers (a collective under FSDP2); rank 0, which then holds it all, writes."""
    gathered = {name: gather_part(part) for name, part in parts.items()}
    if dist.rank() == 0:
        for name, whole in gathered.items():
            write_part(tmp, name, whole)


def _json_or_error(what: str, value) -> str | None:
    """Serialize before writing anything, so a bad value fails fast with a clear message."""
    if value is None:
        return None
    try:
        return json.dumps(value, indent=2, sort_keys=True, allow_nan=False) + "\n"
    except (TypeError, ValueError) as err:
        raise CheckpointError(
            f"save_checkpoint({what}=...) must be JSON-able: {err}; convert tensors with .tolist() and sets to lists"
        ) from err


def _write_small_files(tmp: Path, parts: dict[str, Part], state_text: str, config_text: str | None) -> None:
    schedulers = {n: p.scheduler.state_dict() for n, p in parts.items() if p.scheduler is not None}
    write_text_durable(tmp / SCHEDULERS, _json_or_error("the schedulers' state_dict", schedulers))
    write_text_durable(tmp / STATE, state_text)
    if config_text is not None:
        write_text_durable(tmp / CONFIG, config_text)
    policy = parts[POLICY].module
    for hf_part in (getattr(policy, "config", None), getattr(policy, "generation_config", None)):
        if hasattr(hf_part, "save_pretrained"):  # transformers models: lets export rebuild it
            hf_part.save_pretrained(tmp / HF_CONFIG_DIR)


def _publish(tmp: Path, final: Path, tag: str | None) -> None:
    """Rename into place (moving an existing `step_N` aside first) and fsync the parent."""
    if final.exists():
        aside = final.parent / ROLLED_BACK / f"replaced-{time.strftime('%Y%m%dT%H%M%S')}"
        aside.mkdir(parents=True, exist_ok=True)
        log.warning("%s exists; moving it to %s before writing the new one", final, aside)
        os.rename(final, aside / final.name)
    os.rename(tmp, final)
    _fsync_dir(final.parent)
    if tag:
        write_tags(final, [tag])


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
