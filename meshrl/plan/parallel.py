"""Does `rollout.tensor_parallel_size` fit the model? Read from config.json (no torch).

vLLM splits attention heads across the workers: N must divide the attention heads; KV heads
are split too when there are at least N of them (then N must divide them), else each worker
holds a copy (then N must be a multiple of them).
"""

from __future__ import annotations

import json
from pathlib import Path


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def tensor_parallel_problem(model_path: str, tp: int) -> str | None:
    """None when `tp` workers can split the model's heads, else what is wrong and what fits."""
    config = Path(model_path) / "config.json"
    if tp == 1 or not config.is_file():
        return None
    data = json.loads(config.read_text())
    data = data.get("text_config", data)
    heads = int(data["num_attention_heads"])
    kv_heads = int(data.get("num_key_value_heads") or heads)
    fits = [d for d in divisors(heads) if (kv_heads % d == 0 if kv_heads >= d else d % kv_heads == 0)]
    if tp in fits:
        return None
    return (
        f"rollout.tensor_parallel_size={tp} cannot split the model's {heads} attention heads "
        f"({kv_heads} KV heads) evenly over {tp} workers; choose one of {', '.join(map(str, fits))}"
    )
