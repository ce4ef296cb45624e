"""The policy being trained: model, AdamW, learning-rate schedule, precision.

Schedule (per training step): linear warmup from 0 to the peak `lr` over `warmup_steps`,
then cosine decay to `min_lr_ratio · lr` at `total_steps`:

    f(s) = (s + 1) / warmup                               s < warmup (no zero-LR first step)
    f(s) = m + (1 − m) · ½ (1 + cos(π · progress))        progress = (s − warmup) / (total − warmup)

(the schedule of TRL/verl's `cosine` with a floor). bf16 is autocast: fp32 master weights
and optimizer state, bf16 matmuls. Order matters with FSDP: gradient checkpointing, then
sharding, then the optimizer (which must see the sharded parameters).

Simplifications: the model is given (loading from a path is `meshrl.inputs.models`' job; a path
is accepted and handed to `AutoModelForCausalLM.from_pretrained` as a convenience).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR
from transformers import AutoModelForCausalLM

from meshrl.algos.checks import check_finite
from meshrl.config.algorithm import OptimConfig, TrainerConfig
from meshrl.services.learner.train.fsdp import DistContext, clip_grad_norm, decoder_layers, shard_model


def warmup_cosine(warmup_steps: int, total_steps: int, min_lr_ratio: float) -> Callable[[int], float]:
    """LR multiplier f(step) of the module docstring."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        span = max(1, total_steps - warmup_steps)
        progress = min(1.0, (step - warmup_steps) / span)
        return min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


def use_fused_adamw(setting: str, device: torch.device | str) -> bool:
    """`optim.fused`: on, off, or auto = on for CUDA parameters."""
    return setting == "on" or (setting == "auto" and torch.device(device).type == "cuda")


def build_optimizer(model: nn.Module, optim: OptimConfig, lr: float | None = None) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices only (not on norms and biases, the usual LLM practice);
    one fused kernel per step where `optim.fused` says so."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": optim.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    fused = use_fused_adamw(optim.fused, params[0].device) if params else False
    return torch.optim.AdamW(
        [g for g in groups if g["params"]], lr=lr or optim.lr, betas=tuple(optim.betas), fused=fused or None
    )


def enable_gradient_checkpointing(model: nn.Module) -> None:
    """Recompute activations in backward (HF models; non-reentrant so FSDP2 hooks still fire)."""
    if not hasattr(model, "gradient_checkpointing_enable"):
        raise ValueError(
            f"{type(model).__name__} has no gradient_checkpointing_enable(); set trainer.gradient_checkpointing=false"
        )
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


@dataclass
class TrainedModel:
    """A model with its optimizer, LR schedule and precision: what one update touches."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: LambdaLR
    bf16: bool
    max_grad_norm: float
    device: torch.device

    def autocast(self):
        """bf16 autocast when configured, else a no-op context."""
        if not self.bf16:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)

    @property
    def lr(self) -> float:
        return float(self.scheduler.get_last_lr()[0])

    def clip_gradients(self, name: str, step: int | None = None) -> torch.Tensor:
        """Clip gradients to `max_grad_norm`; return the pre-clip norm. The update itself is
        `apply_gradients` (the step runs it only once nothing else can fail:
        `meshrl.services.learner.train.transaction`).

        A non-finite norm clears the gradients and raises (`NonFiniteError` naming `name` and
        the step): a NaN update would poison every later step.
        """
        norm = clip_grad_norm(self.model.parameters(), self.max_grad_norm)
        if not bool(torch.isfinite(norm)):
            self.optimizer.zero_grad(set_to_none=True)
            check_finite(f"{name} grad_norm", norm.reshape(1), step=step)
        return norm.detach()

    def apply_gradients(self) -> None:
        """Step AdamW on the (clipped) gradients, then clear them."""
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)


def attention_for(setting: str, device: torch.device | str, forward: str = "padded") -> str | None:
    """The attention implementation to set (`trainer.attention`), or None to keep the model's:
    auto = varlen for the packed forward (no N×N mask), else eager on CPU, the model's on CUDA."""
    if setting != "auto":
        return setting
    if forward == "packed":
        return "varlen"
    return "eager" if torch.device(device).type == "cpu" else None


def set_attention(model: nn.Module, setting: str, device: torch.device | str, forward: str = "padded") -> None:
    """Switch a transformers model's attention kernel; other models are left alone (auto) or
    refused (an explicit setting they cannot honour)."""
    wanted = attention_for(setting, device, forward)
    if wanted is None:
        return
    if not hasattr(model, "set_attn_implementation"):
        if setting != "auto":
            raise ValueError(
                f"trainer.attention={setting!r}: {type(model).__name__} is not a transformers "
                f"model with set_attn_implementation(); set trainer.attention=auto"
            )
        return
    if wanted == "varlen":
        from meshrl.algos.varlen_attention import (
            set_varlen_attention,
        )  # lazy: transformers (seconds), only with trainer.attention=varlen (forward=packed's auto)

        set_varlen_attention(model)
    else:
        model.set_attn_implementation(wanted)


COMPILE_BACKEND = "inductor"


def compile_layers(model: nn.Module, backend: str | None = None) -> None:
    """torch.compile each decoder layer in place, dynamic shapes (the units FSDP2 shards, as
    torchtitan does: a whole-model graph would break at every Python-side branch)."""
    for layer in decoder_layers(model):
        layer.compile(backend=backend or COMPILE_BACKEND, dynamic=True)


def prepare_model(model: nn.Module, trainer: TrainerConfig, dist: DistContext) -> nn.Module:
    """Device, train mode, attention kernel, no KV cache, optional checkpointing and
    compilation, FSDP2 when world > 1."""
    model = model.to(dist.device)
    model.train()
    set_attention(model, trainer.attention, dist.device, trainer.forward)
    if getattr(model, "config", None) is not None and hasattr(model.config, "use_cache"):
        model.config.use_cache = False
    if trainer.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    if trainer.compile:
        compile_layers(model)
    if dist.world_size > 1:
        shard_model(model, dist)
    return model


def configured_bf16(trainer: TrainerConfig) -> bool:
    """bf16 as configured; `precision: auto` is resolved by the service at start-up
    (`meshrl.inputs.models.precision.resolve_precision`) and passed in, else it means fp32."""
    return trainer.bf16 or trainer.precision == "bf16"


def build_policy(
    model: nn.Module | str,
    trainer: TrainerConfig,
    *,
    total_steps: int,
    dist: DistContext | None = None,
    bf16: bool | None = None,
) -> TrainedModel:
    """The policy ready to train: (sharded) model, AdamW and warmup-cosine schedule."""
    if isinstance(model, str):
        model = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
    dist = dist or DistContext()
    model = prepare_model(model, trainer, dist)
    optim = trainer.optim
    optimizer = build_optimizer(model, optim)
    schedule = warmup_cosine(optim.warmup_steps, total_steps, optim.min_lr_ratio)
    bf16 = configured_bf16(trainer) if bf16 is None else bf16
    return TrainedModel(model, optimizer, LambdaLR(optimizer, schedule), bf16, optim.max_grad_norm, dist.device)
