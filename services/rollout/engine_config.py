"""`EngineConfig`: what the rollout engine (`engine.py`) builds its vLLM `AsyncLLM` from.

`EngineConfig.from_run_config` reads the run config (model dir, KV cache, dtype resolved for
this host, tensor parallelism, LoRA rank) and refuses what the engine cannot serve (a GGUF
file, a tensor-parallel size that does not split the model's heads); `lora_args` are vLLM's
LoRA settings when the run pushes adapters. No vLLM here: tests and benchmarks build configs
without starting an engine. Used as `EngineConfig.from_run_config(cfg, replica_id="rollout-0")`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from meshrl.config.lora import engine_lora_rank, pushes_adapter
from meshrl.errors import ConfigError
from meshrl.inputs.models.load import ModelLoadError
from meshrl.inputs.models.precision import resolve_model_dtype
from meshrl.plan.parallel import tensor_parallel_problem

if TYPE_CHECKING:
    from meshrl.config import RunConfig

log = logging.getLogger(__name__)
# LoRA: adapters in one batch (the new version beside the one running requests started
# with) and adapters vLLM keeps loaded (meshrl.transport.weights.adapter keeps as many dirs)
BATCH_LORAS, CPU_LORAS = 2, 3


@dataclass(frozen=True)
class EngineConfig:
    """What `RolloutEngine` needs to build its AsyncLLM. `kv_cache_gb` may be fractional."""

    model: str
    tokenizer: str | None = None
    max_model_len: int = 512
    kv_cache_gb: float = 1.0
    enforce_eager: bool = True
    dtype: str = "float32"
    seed: int = 0
    logprobs_mode: str = "processed_logprobs"
    pause_mode: str = "keep"  # "keep" in-flight requests across an update, or "wait" for them
    max_num_seqs: int = 256
    replica_id: str = "rollout-0"
    tensor_parallel_size: int = 1  # vLLM workers the engine spans (rollout.tensor_parallel_size)
    max_lora_rank: int = 0  # > 0: serve pushed LoRA adapters up to this rank (model.lora.push=adapter)
    extra_engine_args: dict = field(default_factory=dict)

    @classmethod
    def from_run_config(cls, cfg: "RunConfig", replica_id: str = "rollout-0") -> "EngineConfig":
        if cfg.model.gguf_file:
            raise ModelLoadError(
                f"model.gguf_file={cfg.model.gguf_file!r}: the rollout engine serves HF "
                f"safetensors dirs; convert the GGUF to safetensors first (see DESIGN.md)"
            )
        if problem := tensor_parallel_problem(cfg.model.path, cfg.rollout.tensor_parallel_size):
            raise ConfigError(problem)
        dtype, why = resolve_model_dtype(cfg.model.dtype)
        log.info("rollout dtype %s: %s", dtype, why)
        return cls(
            model=cfg.model.path,
            tokenizer=cfg.model.tokenizer,
            max_model_len=cfg.rollout.max_model_len,
            kv_cache_gb=cfg.rollout.kv_cache_gb,
            enforce_eager=cfg.rollout.enforce_eager,
            dtype=dtype,
            seed=cfg.run.seed,
            replica_id=replica_id,
            tensor_parallel_size=cfg.rollout.tensor_parallel_size,
            max_lora_rank=engine_lora_rank(cfg.model.lora.rank) if pushes_adapter(cfg) else 0,
        )


def lora_args(config: EngineConfig) -> dict:
    """vLLM's LoRA support when the run pushes adapters (module docstring), else nothing."""
    if not config.max_lora_rank:
        return {}
    return {
        "enable_lora": True,
        "max_lora_rank": config.max_lora_rank,
        "max_loras": BATCH_LORAS,
        "max_cpu_loras": CPU_LORAS,
    }
