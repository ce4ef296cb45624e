"""Write a state dict as a safetensors file straight from the tensors' memory, hashing it
on the way: one pass, no intermediate `bytes` of the whole model.

    sha256_hex, size = write_safetensors(state_dict, path)
    blake3_hex, size = write_safetensors(state_dict, path, digest="blake3")

`safetensors.torch.save` first builds the whole file in memory (538 MB for SmolLM2-135M
in fp32; docs/benchmarks.md, "Weights push") before anything can be written or hashed.
Here the header is built from shapes alone, then each tensor's buffer is written in place
while a second thread feeds the same buffers, in the same order, to sha256 (both release the
GIL), so the hash costs almost nothing on top of the write. The file is the standard format (8-byte
little-endian header length, JSON header padded to 8 bytes, raw little-endian data), loaded
by `safetensors.safe_open`, vLLM and transformers alike.

Simplification: CPU tensors only (the caller moves them); no alignment beyond the header's.
"""

from __future__ import annotations

import json
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from meshrl.transport.weights.notice import new_digest

DTYPES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.float64: "F64",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}


def _raw(tensor: torch.Tensor) -> memoryview:
    """The tensor's bytes without a copy (when it is already contiguous on the CPU)."""
    flat = tensor.detach().contiguous().reshape(-1)
    return memoryview(flat.view(torch.uint8).numpy())


def header_bytes(tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The length prefix and the JSON header, padded with spaces to a multiple of 8 bytes."""
    header: dict = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, t in tensors.items():
        if t.dtype not in DTYPES:
            raise TypeError(f"{name}: dtype {t.dtype} cannot be stored in safetensors here")
        size = t.numel() * t.element_size()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def write_safetensors(
    tensors: dict[str, torch.Tensor], path: str | Path, metadata: dict[str, str] | None = None, digest: str = "sha256"
) -> tuple[str, int]:
    """Write `tensors` to `path`; return (hex `digest` of the file: sha256 or blake3, its
    size in bytes)."""
    cpu = {name: t.detach().cpu() for name, t in tensors.items()}
    chunks = [header_bytes(cpu, metadata), *(_raw(t) for t in cpu.values())]
    digest, size = new_digest(digest), 0
    with open(path, "wb") as out, ThreadPoolExecutor(1, thread_name_prefix="digest") as hasher:
        for chunk in chunks:  # one worker: updates run in submission order
            hasher.submit(digest.update, chunk)
            out.write(chunk)
            size += len(chunk)
    return digest.hexdigest(), size
