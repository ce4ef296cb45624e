"""Is the run's model a mixture of experts, and does its config train it with a token-level
importance ratio? `meshrl doctor` and `meshrl train --dry-run` say so.

Under expert routing, a token's probability moves with the experts it is routed to: a small
update can re-route a token and swing its ratio π/π_old far from 1, so token-level ratios are
noisy and get clipped at random; GSPO's sequence-level ratio (the geometric mean of a
response's token ratios) averages that out (Zheng et al. 2025, "Group Sequence Policy
Optimization", arXiv:2507.18071, written for Qwen3-MoE). Reads only config.json.
"""

from __future__ import annotations

import json
from pathlib import Path

from meshrl.config.parts import POLICY_LOSSES

EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")


def experts_of(model_path: str, gguf_file: str | None = None) -> int:
    """The routed experts per MoE layer of a HF model dir's config.json; 0 for a dense model
    (or a GGUF file / a dir without config.json: nothing to read)."""
    config = Path(model_path) / "config.json"
    if gguf_file or not config.is_file():
        return 0
    data = json.loads(config.read_text())
    data = data.get("text_config", data)  # multimodal configs nest the language model's
    return max((int(data.get(k) or 0) for k in EXPERT_KEYS), default=0)


def moe_ratio_warning(cfg) -> str | None:
    """A warning when an MoE model is trained online with a token-level ratio, else None."""
    experts = experts_of(cfg.model.path, cfg.model.gguf_file)
    level = cfg.algorithm.importance_sampling_level or POLICY_LOSSES.get(cfg.algorithm.policy_loss)
    if experts <= 1 or cfg.algorithm.offline or level != "token":
        return None
    sequence = ", ".join(name for name, lv in POLICY_LOSSES.items() if lv == "sequence")
    return (
        f"model.path is a mixture-of-experts model ({experts} experts per layer) trained with a "
        f"token-level importance ratio (algorithm.policy_loss={cfg.algorithm.policy_loss}): expert "
        f"routing makes token ratios noisy; use algorithm.preset=gspo (or a sequence-level "
        f"policy_loss: {sequence})"
    )
