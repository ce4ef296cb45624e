"""The memory each service of a run needs, per device, from its config and model shape.

Learner, per rank (FSDP shards weights, gradients and optimizer state over `learner.ranks`):

    weights          4 B × params / ranks                 fp32 masters, whatever the precision
    LoRA adapters    4 B × Σ rank × (in + out)             model.lora: trainable = the adapters only
    gradients        4 B × trainable / ranks
    optimizer        8 B × trainable / ranks               AdamW's two fp32 moments
    FSDP gather      4 B × largest layer × 2               ranks > 1: a layer unsharded (+ prefetch)
    activations      T × L × (11 h + 3 kv + 4 m) × b       saved for backward, T = micro-batch tokens
      checkpointed   T × L × h × b + T × (11 h + 3 kv + 4 m) × b   layer inputs + one layer recomputed
    logits           5 × T × V × 4 B                       fp32 logits and what log-probs + entropy keep
    critic           the same again (PPO's value model on the policy's architecture)
    weights-push     params × engine dtype bytes           the copy a push writes from (the adapter
                                                           alone with LoRA's push: adapter)

with T = trainer.micro_batch_size × (data.max_prompt_tokens + rollout.sampling.max_tokens),
L layers, h hidden, kv = KV heads × head dim, m the MLP width a token passes (MoE: experts per
token × expert width), V vocabulary, b = 4 B (fp32) or 2 B (bf16 autocast: configured, or
`trainer.precision: auto` on a GPU). The per-layer
count is what an HF Llama-style layer keeps for backward (norm inputs and outputs, q/k/v and
their rotary copies, GQA's repeated k/v, attention output, four MLP tensors).

With LoRA the reference is the learner's own base with the adapter off: no reference copy.
Rollout, per replica (over tensor-parallel workers): weights in model.dtype, and the KV cache:
2 × L × kv × dtype bytes per token; one group needs group_size × (prompt + max_tokens) tokens
of it; vLLM preallocates `rollout.kv_cache_gb`. Reference and reward model: weights in their
dtype plus one micro-batch's logits. Not counted: the framework itself (torch, vLLM's
runtime, CUDA context: about 0.5–1 GiB per process), allocator fragmentation.
`ModelShape` is what this arithmetic reads of a model (shapes.py measures it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from meshrl.config import RunConfig


@dataclass(frozen=True)
class ModelShape:
    params: int  # every parameter (tied weights once)
    layers: int
    hidden: int
    kv_dim: int  # key/value heads × head dim: one token's K (or V) per layer
    mlp_width: int  # the MLP's intermediate size a token goes through (× experts per token for MoE)
    vocab: int
    attention_heads: int
    kv_heads: int
    largest_layer_params: int  # what FSDP gathers at once
    linear_shapes: tuple[tuple[str, int, int], ...]  # (module name, in, out) of each nn.Linear


DTYPE_BYTES = {"float32": 4, "bfloat16": 2}


@dataclass
class ServiceMemory:
    service: str
    devices: int  # devices one instance spans (learner ranks, rollout TP workers)
    instances: int  # replicas
    items: dict[str, int] = field(default_factory=dict)  # per device, bytes

    @property
    def per_device(self) -> int:
        return sum(self.items.values())


def micro_batch_tokens(cfg: RunConfig) -> int:
    return cfg.trainer.micro_batch_size * (cfg.data.max_prompt_tokens + cfg.rollout.sampling.max_tokens)


def layer_activation_elements(shape: ModelShape) -> int:
    """Elements one token keeps for backward in one decoder layer (module docstring)."""
    return 11 * shape.hidden + 3 * shape.kv_dim + 4 * shape.mlp_width


def activation_bytes(shape: ModelShape, tokens: int, act_bytes: int, checkpointing: bool) -> int:
    per_layer = tokens * layer_activation_elements(shape) * act_bytes
    if checkpointing:
        return shape.layers * tokens * shape.hidden * act_bytes + per_layer
    return shape.layers * per_layer


def logits_bytes(shape: ModelShape, tokens: int) -> int:
    return 5 * tokens * shape.vocab * 4


def trained_model(shape: ModelShape, cfg: RunConfig, *, trainable: int, act_bytes: int) -> dict[str, int]:
    ranks, tokens = cfg.learner.ranks, micro_batch_tokens(cfg)
    items = {
        "weights (fp32)": 4 * shape.params // ranks,
        "gradients": 4 * trainable // ranks,
        "optimizer (AdamW fp32)": 8 * trainable // ranks,
        "activations" + (" (checkpointed)" if cfg.trainer.gradient_checkpointing else ""): activation_bytes(
            shape, tokens, act_bytes, cfg.trainer.gradient_checkpointing
        ),
        "logits": logits_bytes(shape, tokens),
    }
    if ranks > 1:
        items["FSDP gathered layers"] = 2 * 4 * shape.largest_layer_params
    return items


def lora_params(shape: ModelShape, lora) -> int:
    """Adapter parameters: rank × (in + out) for each linear layer `target_modules` names
    (suffix match as PEFT does; all-linear = every one but lm_head)."""

    def named(module: str) -> bool:
        if lora.target_modules == "all-linear":
            return not module.endswith("lm_head")
        return any(module == t or module.endswith(f".{t}") for t in lora.target_modules)

    return sum(lora.rank * (fan_in + fan_out) for module, fan_in, fan_out in shape.linear_shapes if named(module))


def activation_bytes_per_element(cfg: RunConfig, on_gpu: bool) -> int:
    """What the learner's precision gives: bf16 autocast (configured, or `auto` on a GPU) 2 B,
    else 4 B (`auto` on CPU: fp32, as for the engines' dtype here)."""
    if cfg.trainer.bf16 or cfg.trainer.precision == "bf16":
        return 2
    return 2 if cfg.trainer.precision == "auto" and on_gpu else 4


def push_copy_bytes(cfg: RunConfig, shape: ModelShape, trainable: int, on_gpu: bool) -> int:
    """The learner's copy of what it pushes, in the engines' dtype (weights_staging.py: an
    on-device snapshot on a GPU, host buffers on CPU): the adapter alone with `push: adapter`."""
    pushed = trainable if cfg.model.lora is not None and cfg.model.lora.push == "adapter" else shape.params
    return pushed * dtype_bytes_of(cfg.model.dtype, on_gpu)


def learner_memory(cfg: RunConfig, shape: ModelShape, on_gpu: bool = False) -> ServiceMemory:
    act_bytes = activation_bytes_per_element(cfg, on_gpu)
    trainable = shape.params if cfg.model.lora is None else lora_params(shape, cfg.model.lora)
    items = trained_model(shape, cfg, trainable=trainable, act_bytes=act_bytes)
    if cfg.model.lora is not None:
        items["LoRA adapters"] = 4 * trainable  # beside the frozen fp32 base
    if not cfg.algorithm.offline:
        push_bits = 8 * dtype_bytes_of(cfg.model.dtype, on_gpu)
        items[f"weights-push copy ({push_bits}-bit)"] = push_copy_bytes(cfg, shape, trainable, on_gpu)
    if cfg.algorithm.critic.enabled:
        items.update(
            {
                f"critic {k}": v
                for k, v in trained_model(shape, cfg, trainable=shape.params, act_bytes=act_bytes).items()
            }
        )
    return ServiceMemory("learner", devices=cfg.learner.ranks, instances=1, items=items)


def kv_bytes_per_token(shape: ModelShape, dtype_bytes: int) -> int:
    return 2 * shape.layers * shape.kv_dim * dtype_bytes


def group_tokens(cfg: RunConfig) -> int:
    return cfg.rollout.sampling.group_size * (cfg.data.max_prompt_tokens + cfg.rollout.sampling.max_tokens)


def rollout_memory(cfg: RunConfig, shape: ModelShape, dtype_bytes: int, tp: int = 1) -> ServiceMemory:
    configured = int(cfg.rollout.kv_cache_gb * 1024**3)
    items = {
        f"weights ({8 * dtype_bytes}-bit)": shape.params * dtype_bytes // tp,
        "KV cache (rollout.kv_cache_gb)": configured // tp,
    }
    return ServiceMemory("rollout", devices=tp, instances=cfg.rollout.replicas, items=items)


def frozen_model_memory(name: str, shape: ModelShape, dtype_bytes: int, tokens: int, replicas: int) -> ServiceMemory:
    return ServiceMemory(
        name,
        devices=1,
        instances=replicas,
        items={
            f"weights ({8 * dtype_bytes}-bit)": shape.params * dtype_bytes,
            "logits (one micro-batch)": logits_bytes(shape, tokens),
        },
    )


def dtype_bytes_of(dtype: str, on_gpu: bool) -> int:
    """model.dtype in bytes; auto is bf16 on a GPU and fp32 on CPU (what the engines pick here)."""
    if dtype == "auto":
        return 2 if on_gpu else 4
    return DTYPE_BYTES[dtype]


def kv_cache_needed(cfg: RunConfig, shape: ModelShape, dtype_bytes: int) -> int:
    """KV-cache bytes one group needs at full length: group_size × (prompt + max_tokens) tokens."""
    return group_tokens(cfg) * kv_bytes_per_token(shape, dtype_bytes)


def gib(n: int) -> str:
    return f"{n / 1024**3:.2f} GiB" if n >= 1024**3 / 100 else f"{math.ceil(n / 1024**2)} MiB"
