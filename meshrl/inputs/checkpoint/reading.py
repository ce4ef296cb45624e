"""Read a checkpoint's files, which are data only: JSON and safetensors, nothing else.

    read_json(path)       a JSON file, or CheckpointError naming it
    read_tensors(path)    a safetensors file as {name: tensor}, or CheckpointError naming it

Both refuse what they cannot parse with one line (the file and what is wrong), so a loader
handed a file full of anything else (a pickle, garbage) stops there: neither format has a
way to run code, and nothing here falls back to one that does.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

from meshrl.inputs.checkpoint.errors import CheckpointError

MAX_JSON_BYTES = 16 << 20  # a manifest, the loop state, a config: far smaller in any real checkpoint


def json_text(path: Path, limit: int = MAX_JSON_BYTES) -> str:
    """A checkpoint's JSON file's text: never through a symlink (a link to a secret would show
    its values), never beyond `limit` bytes (OSError: what to say is the caller's)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fh.fileno()).st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes")
        return fh.read().decode()


def parse_json(text: str):
    """json.loads, with a nesting bomb's RecursionError and a 100,000-digit integer's
    ValueError as ValueError alike (the callers name the file)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep") from None


def read_json(path: Path):
    try:
        return parse_json(json_text(Path(path)))
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
