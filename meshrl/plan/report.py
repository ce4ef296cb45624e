"""The memory plan as text, and the fit check against a named device.

plan = memory_plan(cfg, device="h100-80gb")   # ServiceMemory per service + warnings
print("\n".join(plan_lines(plan)))

Named devices a plan is checked against (`meshrl plan --device NAME`): usable memory in
bytes. GPU sizes are the cards' memory as the driver reports it (what torch can allocate is a
little less); `cpu` is this host's RAM.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psutil

from meshrl.config import RunConfig
from meshrl.config.lora import lora_problem
from meshrl.plan.memory import (
    ModelShape,
    ServiceMemory,
    dtype_bytes_of,
    frozen_model_memory,
    gib,
    group_tokens,
    kv_cache_needed,
    learner_memory,
    micro_batch_tokens,
    rollout_memory,
)
from meshrl.plan.parallel import tensor_parallel_problem
from meshrl.plan.shapes import hf_config, model_shape

GiB = 1024**3

DEVICES = {
    "h200": 141 * 10**9,
    "h100-80gb": 80 * GiB,
    "a100-80gb": 80 * GiB,
    "a100-40gb": 40 * GiB,
    "l40s": 48 * GiB,
    "a10g": 24 * GiB,
    "l4": 24 * GiB,
    "rtx4090": 24 * GiB,
}


def device_bytes(name: str) -> int:
    """Usable bytes of a named device; `cpu` is the host's RAM. ValueError names the choices."""
    if name == "cpu":
        return psutil.virtual_memory().total
    if name not in DEVICES:
        raise ValueError(f"--device {name!r} is unknown; choose one of: cpu, {', '.join(DEVICES)}")
    return DEVICES[name]


ADVICE = {
    "learner": "trainer.gradient_checkpointing=true, a smaller trainer.micro_batch_size, or more learner.ranks",
    "rollout": "a smaller rollout.kv_cache_gb, model.dtype=bfloat16, or tensor parallelism",
    "reference": "model.dtype=bfloat16",
    "reward_model": "reward_model.dtype=bfloat16",
}


@dataclass
class MemoryPlan:
    shape: ModelShape
    services: list[ServiceMemory]
    device: str | None
    device_bytes: int | None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def memory_plan(cfg: RunConfig, device: str | None = None, shape: ModelShape | None = None) -> MemoryPlan:
    shape = shape or model_shape(hf_config(cfg.model.path, cfg.model.gguf_file))
    on_gpu = device not in (None, "cpu")
    dtype = dtype_bytes_of(cfg.model.dtype, on_gpu)
    services = [learner_memory(cfg, shape, on_gpu)]
    if not cfg.algorithm.offline:
        services.append(rollout_memory(cfg, shape, dtype, tp=cfg.rollout.tensor_parallel_size))
    if cfg.reference_enabled:
        services.append(frozen_model_memory("reference", shape, dtype, micro_batch_tokens(cfg), cfg.reference.replicas))
    if cfg.reward_model is not None:
        rm = model_shape(hf_config(cfg.reward_model.path))
        services.append(
            frozen_model_memory(
                "reward_model", rm, dtype_bytes_of("auto", on_gpu), micro_batch_tokens(cfg), cfg.reward_model.replicas
            )
        )
    plan = MemoryPlan(shape, services, device, device_bytes(device) if device else None)
    if problem := tensor_parallel_problem(cfg.model.path, cfg.rollout.tensor_parallel_size):
        plan.warnings.append(problem)
    if cfg.model.lora is not None and (problem := lora_problem(cfg.model.lora, shape.linear_shapes, "the model")):
        plan.warnings.append(problem)
    check_kv_cache(plan, cfg, dtype)
    check_fit(plan)
    return plan


def check_kv_cache(plan: MemoryPlan, cfg: RunConfig, dtype: int) -> None:
    if cfg.algorithm.offline:
        return
    needed, configured = kv_cache_needed(cfg, plan.shape, dtype), int(cfg.rollout.kv_cache_gb * 1024**3)
    plan.notes.append(
        f"KV cache for one group: {cfg.rollout.sampling.group_size} × "
        f"{group_tokens(cfg) // cfg.rollout.sampling.group_size} tokens = {gib(needed)} "
        f"(rollout.kv_cache_gb={cfg.rollout.kv_cache_gb} holds {configured // max(1, needed)} groups)"
    )
    if configured < needed:
        plan.warnings.append(
            f"rollout.kv_cache_gb={cfg.rollout.kv_cache_gb} is below one group's "
            f"{gib(needed)}: vLLM would run its sequences in turns; raise it"
        )


def check_fit(plan: MemoryPlan) -> None:
    if plan.device_bytes is None:
        return
    for s in plan.services:
        if s.per_device > plan.device_bytes:
            plan.warnings.append(
                f"{s.service} needs {gib(s.per_device)} per device; {plan.device} has "
                f"{gib(plan.device_bytes)}: it does not fit — try {ADVICE[s.service]}"
            )


def plan_lines(plan: MemoryPlan) -> list[str]:
    shape = plan.shape
    lines = [
        f"memory plan (model: {shape.params / 1e6:.1f}M parameters, {shape.layers} layers, "
        f"hidden {shape.hidden}, vocab {shape.vocab}):"
    ]
    for s in plan.services:
        span = f"{s.devices} devices" if s.devices > 1 else "1 device"
        lines.append(f"  {s.service:<14} {gib(s.per_device):>12} per device  (×{s.instances}, each on {span})")
        lines += [f"      {name:<30} {gib(n):>12}" for name, n in s.items.items()]
    if plan.device:
        lines.append(f"  device {plan.device}: {gib(plan.device_bytes)}")
    lines += [f"  note: {n}" for n in plan.notes]
    lines += [f"  WARNING: {w}" for w in plan.warnings]
    return lines
