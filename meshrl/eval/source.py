"""What `meshrl eval CHECKPOINT_OR_EXPORT` names, and the model dir to serve from it.

Accepted, in this order:
- a Hugging Face model dir (config.json + weights; e.g. from `meshrl export`): served as is;
  its run config is the one saved with the checkpoint it was exported from, when
  `meshrl_export.json` names one that still exists;
- a checkpoint folder `RUN_DIR/checkpoints/step_N` (verified against its manifest), or a
  run dir (its newest good checkpoint): exported to WORK_DIR/model with
  `meshrl.inputs.checkpoint.export_hf`; its run config is the one saved with it (config.json).

Errors name the path and what to pass instead: a missing path or an unknown step (listing
the steps that exist) raise LaunchError / CheckpointError; a corrupt checkpoint
CheckpointError (from the checkpoint library).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from meshrl.errors import LaunchError
from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.export import export_hf
from meshrl.inputs.checkpoint.layout import CHECKPOINTS, STEP_RE, find_step, step_of
from meshrl.inputs.checkpoint.load import read_config, resolve_checkpoint

EXPORT_PROVENANCE = "meshrl_export.json"


@dataclass(frozen=True)
class EvalSource:
    kind: str  # "export" | "checkpoint"
    path: Path  # the HF dir, or the verified checkpoint folder
    saved_config: dict | None  # the run config saved with the checkpoint, when there is one
    step: int | None


def is_hf_dir(path: Path) -> bool:
    return (path / "config.json").is_file() and any(path.glob("*.safetensors"))


def resolve_source(arg: str | Path) -> EvalSource:
    path = Path(arg).expanduser()
    if not path.exists():
        if STEP_RE.match(path.name) and path.parent.name == CHECKPOINTS:
            find_step(path.parent.parent, int(STEP_RE.match(path.name).group(1)))  # lists steps
        raise LaunchError(
            f"{path} does not exist; pass RUN_DIR, RUN_DIR/checkpoints/step_N or "
            f"a Hugging Face model dir (`meshrl export` writes one)"
        )
    if is_hf_dir(path):
        return export_source(path)
    return checkpoint_source(path)


def export_source(path: Path) -> EvalSource:
    provenance = path / EXPORT_PROVENANCE
    info = json.loads(provenance.read_text()) if provenance.is_file() else {}
    ckpt = Path(info["checkpoint"]) if info.get("checkpoint") else None
    saved = None
    if ckpt is not None and (ckpt / "config.json").is_file():
        saved = json.loads((ckpt / "config.json").read_text())
    return EvalSource("export", path, saved, info.get("step"))


def checkpoint_source(path: Path) -> EvalSource:
    try:
        ckpt = resolve_checkpoint(path)
    except CheckpointError as err:
        raise CheckpointError(f"{err} (or a Hugging Face model dir)") from None
    return EvalSource("checkpoint", ckpt, read_config(ckpt), step_of(ckpt))


def model_dir_for(
    source: EvalSource, work_dir: Path, *, base_model: str | None = None, tokenizer: str | None = None
) -> Path:
    """The HF dir to serve: the export itself, or the checkpoint exported into WORK_DIR/model."""
    if source.kind == "export":
        return source.path

    return export_hf(source.path, work_dir / "model", base_model_dir=base_model, tokenizer_dir=tokenizer)
