"""Make a checkpoint the operator vouches for loadable: convert an older meshrl's, sign a foreign one.

    meshrl checkpoints convert RUN_DIR/checkpoints/step_N --i-trust-this-file
    convert_checkpoint(path)   # the same, from Python; the caller is the one who trusts it

- Format 1 (`dcp/`, `.pt` files: legacy.py): its files are checked against its manifest, then
  read the only way they can be, by unpickling (torch.distributed.checkpoint, torch.load):
  that runs whatever code they carry, which is why only an explicit flag gets here. The state
  is written again in format 2 (state_files.py, rng.py, JSON) into a sibling `NAME.tmp-PID`,
  signed with the user's checkpoint key; the old folder moves to `rolled_back/format1-<time>/`
  beside it (never deleted) and the new one is renamed into its place.
- Format 2, unsigned or signed by another key (a checkpoint copied from another user): its
  files are checked against its manifest and the manifest is signed again with this user's key.

Simplifications: one process (no process group); the whole state is held in memory at once.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from safetensors.torch import save_file

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.key import signer_for_save
from meshrl.inputs.checkpoint.layout import (
    CONFIG,
    FORMAT,
    HF_CONFIG_DIR,
    MANIFEST,
    RNG_DIR,
    ROLLED_BACK,
    SCHEDULERS,
    STATE,
    TAGS,
)
from meshrl.inputs.checkpoint.legacy import is_legacy
from meshrl.inputs.checkpoint.manifest import data_files, file_problems, hash_files, read_manifest, write_signed
from meshrl.inputs.checkpoint.state_files import json_text, write_part

KEPT = (STATE, CONFIG, HF_CONFIG_DIR, TAGS)  # carried over as they are: JSON and HF config files


def convert_checkpoint(ckpt: str | Path) -> str:
    """Convert (format 1) or sign (format 2) `ckpt` in place; return what was done, in words."""
    ckpt = Path(ckpt)
    if not (ckpt / MANIFEST).is_file():
        raise CheckpointError(f"{ckpt} is not a checkpoint folder (no {MANIFEST}); pass RUN_DIR/checkpoints/step_N")
    if is_legacy(ckpt):
        _convert_legacy(ckpt)
        return f"converted {ckpt} to {FORMAT} and signed it; the old folder is under {ckpt.parent / ROLLED_BACK}/"
    manifest = _checked_manifest(ckpt, read_manifest(ckpt, signed=False))
    write_signed(ckpt, manifest, signer_for_save())
    return f"signed {ckpt} with your checkpoint key"


def _checked_manifest(ckpt: Path, manifest: dict) -> dict:
    problems = file_problems(ckpt, manifest)
    if problems:
        raise CheckpointError(f"{ckpt}: corrupt checkpoint, not converted: {'; '.join(problems)}")
    return manifest


def _old_manifest(ckpt: Path) -> dict:
    """A format-1 manifest, checked against the files (integrity; trust is the operator's)."""
    try:
        manifest = json.loads((ckpt / MANIFEST).read_text())
    except (OSError, ValueError) as err:
        raise CheckpointError(f"{ckpt}: no readable {MANIFEST} ({err}); not converted") from None
    return _checked_manifest(ckpt, manifest)


def _convert_legacy(ckpt: Path) -> None:
    old = _old_manifest(ckpt)
    signer = signer_for_save()  # a key problem stops before anything is written
    tmp = ckpt.with_name(f"{ckpt.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        _write_converted(ckpt, tmp)
        body = {k: v for k, v in old.items() if k not in ("files", "manifest_sha256", "signature")}
        body.update(format=FORMAT, converted_from=old.get("format"), files=hash_files(tmp, data_files(tmp)))
        write_signed(tmp, body, signer)
        aside = ckpt.parent / ROLLED_BACK / f"format1-{time.strftime('%Y%m%dT%H%M%S')}"
        aside.mkdir(parents=True, exist_ok=True)
        os.rename(ckpt, aside / ckpt.name)
        os.rename(tmp, ckpt)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # only left when converting failed


def _write_converted(ckpt: Path, tmp: Path) -> None:
    from meshrl.inputs.checkpoint.legacy_read import read_legacy  # lazy: torch.distributed.checkpoint

    parts, schedulers, rngs = read_legacy(ckpt)
    for name, (model_sd, optim_sd) in parts.items():
        write_part(tmp, name, (model_sd, optim_sd))
    (tmp / SCHEDULERS).write_text(json_text(schedulers, "the schedulers' state"))
    (tmp / RNG_DIR).mkdir()
    for rank, (tensors, plain) in rngs.items():
        save_file(tensors, tmp / RNG_DIR / f"rank_{rank}.safetensors")
        (tmp / RNG_DIR / f"rank_{rank}.json").write_text(json.dumps(plain) + "\n")
    for name in KEPT:
        if (ckpt / name).is_dir():
            shutil.copytree(ckpt / name, tmp / name)
        elif (ckpt / name).is_file():
            shutil.copyfile(ckpt / name, tmp / name)
