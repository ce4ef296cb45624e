"""Read a checkpoint's files, which are data only: JSON and safetensors, nothing else.

    read_json(path)       a JSON file, or CheckpointError naming it
    read_tensors(path)    a safetensors file as {name: tensor}, or CheckpointError naming it

Both refuse what they cannot parse with one line (the file and what is wrong), so a loader
handed a file full of anything else (a pickle, garbage) stops there: neither format has a
way to run code, and nothing here falls back to one that does.
"""

from __future__ import annotations

import json
from pathlib import Path

from meshrl.inputs.checkpoint.errors import CheckpointError


def read_json(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise CheckpointError(
            f"{path}: not a readable JSON file ({type(err).__name__}); the checkpoint is damaged"
        ) from None


def read_tensors(path: Path) -> dict:
    from safetensors import SafetensorError  # lazy: safetensors.torch imports torch
    from safetensors.torch import load_file

    try:
        return load_file(path)
    except (OSError, SafetensorError) as err:
        raise CheckpointError(f"{path}: not a readable safetensors file ({err}); the checkpoint is damaged") from None
