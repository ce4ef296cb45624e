"""Tell a checkpoint an older meshrl wrote (format 1) apart, before reading any of it.

Format 1 kept model and optimizer in `dcp/` (torch.distributed.checkpoint, whose metadata is
a pickle) and schedulers and RNG states in `.pt` files (torch.save pickles): reading any of
them can run code a crafted file carries. Such a folder is refused by its names alone
(nothing in it is opened), with the command that converts it once the operator vouches for
it (convert.py).
"""

from __future__ import annotations

from pathlib import Path

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.layout import FORMAT, LEGACY_NAMES

CONVERT_FLAG = "--i-trust-this-file"


class LegacyCheckpointError(CheckpointError):
    """A format-1 checkpoint: refused, with the converter's command."""


def is_legacy(ckpt: Path, manifest_format: str | None = None) -> bool:
    """A `dcp/` folder, a `.pt` file, or a manifest that names another format."""
    old_format = manifest_format is not None and manifest_format != FORMAT
    return old_format or any((ckpt / name).exists() for name in LEGACY_NAMES) or any(ckpt.rglob("*.pt"))


def convert_command(ckpt: Path) -> str:
    return f"meshrl checkpoints convert {ckpt} {CONVERT_FLAG}"


def refuse_legacy(ckpt: Path, manifest_format: str | None = None) -> None:
    if is_legacy(ckpt, manifest_format):
        raise LegacyCheckpointError(
            f"{ckpt}: written by an older meshrl (pickled dcp/ and .pt files, which can run code when "
            f"read), so it is not loaded; if you trust where it came from, convert it: {convert_command(ckpt)}"
        )
