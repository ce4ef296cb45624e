"""write_safetensors: the standard format (read back by safetensors itself), the right
hash and size, every dtype the learner uses, non-contiguous inputs, and a clear error."""

import hashlib

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from meshrl.transport.weights.file import write_safetensors


def sample_tensors():
    g = torch.Generator().manual_seed(0)
    return {
        "a.weight": torch.randn(5, 3, generator=g),
        "b.bias": torch.randn(7, generator=g).to(torch.bfloat16),
        "c.half": torch.randn(2, 2, 2, generator=g).half(),
        "d.t": torch.randn(4, 6, generator=g).t(),  # not contiguous
        "e.ids": torch.arange(9, dtype=torch.int64),
        "f.scalar": torch.tensor(3.5),
    }


def test_round_trip_hash_and_size(tmp_path):
    tensors = sample_tensors()
    path = tmp_path / "w.safetensors"
    sha, size = write_safetensors(tensors, path, metadata={"format": "pt"})
    data = path.read_bytes()
    assert size == len(data) and sha == hashlib.sha256(data).hexdigest()
    back = load_file(path)
    assert list(back) == list(tensors)
    for name, t in tensors.items():
        assert back[name].dtype == t.dtype and torch.equal(back[name], t), name
    with safe_open(path, "pt") as f:
        assert f.metadata() == {"format": "pt"}


def test_unsupported_dtype_is_named(tmp_path):
    with pytest.raises(TypeError, match="z: dtype torch.complex64"):
        write_safetensors({"z": torch.zeros(2, dtype=torch.complex64)}, tmp_path / "x")
