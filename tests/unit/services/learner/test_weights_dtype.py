"""The learner pushes weights in the engines' configured dtype (bf16 halves the file) and
never changes its own fp32 masters.

Run: .venv/bin/python -m pytest tests/unit/services/learner/test_weights_dtype.py
"""

import torch
from safetensors import safe_open

from meshrl.services.learner.weights import WeightsPublisher, rollout_dtype


def read_back(path):
    with safe_open(str(path), framework="pt") as f:
        return {name: f.get_tensor(name) for name in f.keys()}


def test_rollout_dtype_follows_an_explicit_model_dtype_only():
    assert rollout_dtype("bfloat16") is torch.bfloat16
    assert rollout_dtype("float32") is None and rollout_dtype("auto") is None


def test_bf16_push_writes_bf16_and_leaves_the_masters_fp32(tmp_path):
    masters = {"w": torch.tensor([[1.0, 1.0 + 2**-10], [3.0, -4.5]]), "b": torch.tensor([0.25, 7.0])}
    half = WeightsPublisher(None, None, "r", dtype=torch.bfloat16)
    _, size_half = half.write(masters, tmp_path / "half.safetensors")
    _, size_full = WeightsPublisher(None, None, "r").write(masters, tmp_path / "full.safetensors")
    got = read_back(tmp_path / "half.safetensors")
    assert got["w"].dtype == torch.bfloat16
    assert got["w"].tolist() == [[1.0, 1.0], [3.0, -4.5]]  # 1 + 2^-10 rounds to 1 in bf16
    assert masters["w"].dtype == torch.float32 and masters["w"][0, 1].item() == 1.0 + 2**-10
    assert read_back(tmp_path / "full.safetensors")["w"].dtype == torch.float32
    assert size_full - size_half == 6 * 2  # six values, two bytes fewer each
