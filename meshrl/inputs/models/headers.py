"""A model's tensors read from its safetensors headers alone: names, shapes, dtypes, without
torch and without reading a weight (each file opens with an 8-byte little-endian length and a
JSON header), so checks that need only shapes run in milliseconds before anything starts.

`linear_shapes(folder)` gives (module name, in_features, out_features) for every 2-D `.weight`
that is not an embedding: what PEFT's LoRA can target (a Linear's weight is [out, in]).
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path

EMBEDDING = re.compile(r"(embed_tokens|embeddings|wte|wpe|embed_in|embed)$")


def safetensors_header(path: Path) -> dict:
    """The JSON header of one .safetensors file (tensor name -> {dtype, shape, data_offsets})."""
    with open(path, "rb") as fh:
        (length,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(length))
    header.pop("__metadata__", None)
    return header


def safetensors_numel(path: Path) -> int:
    return sum(math.prod(v["shape"]) for v in safetensors_header(path).values())


def linear_shapes(folder: Path) -> list[tuple[str, int, int]] | None:
    """(module, in, out) of each Linear-like weight in the folder's safetensors; None when the
    folder holds none (a GGUF or .bin model: build it on the meta device instead)."""
    files = sorted(Path(folder).glob("*.safetensors"))
    if not files:
        return None
    shapes = []
    for file in files:
        for name, tensor in safetensors_header(file).items():
            module = name.removesuffix(".weight")
            if name.endswith(".weight") and len(tensor["shape"]) == 2 and not EMBEDDING.search(module):
                out_features, in_features = tensor["shape"]
                shapes.append((module, in_features, out_features))
    return shapes
