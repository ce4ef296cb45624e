"""Data-parallel training with FSDP2: sharding, rank info, all-reduces, full state dicts.

`fully_shard` (torch.distributed.fsdp, "FSDP2") is applied to every decoder layer, then to
the root module (embeddings, final norm, LM head — tied weights stay in one group). Each
rank holds 1/world of every parameter, its gradient and its AdamW state; parameters are
all-gathered per layer for forward/backward and gradients reduce-scattered (averaged).

gloo on CPU, nccl on GPU. Launch with `torchrun --nproc_per_node N ...`; a single process
without torchrun gets a `DistContext` of world size 1 and no process group, and every helper
here is then a no-op, so the training step has one code path.

Simplifications: one flat data-parallel mesh (no tensor/pipeline parallelism, no HSDP).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


@dataclass(frozen=True)
class DistContext:
    """Where this process sits: rank, world size and the device it computes on."""

    rank: int = 0
    world_size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @property
    def distributed(self) -> bool:
        return self.world_size > 1 and dist.is_available() and dist.is_initialized()

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def all_reduce(self, tensor: torch.Tensor, op=None) -> torch.Tensor:
        """A reduced copy of `tensor` over all ranks (SUM unless `op`); identity on one rank."""
        out = tensor.detach().clone()
        if self.distributed:
            dist.all_reduce(out, op=op or dist.ReduceOp.SUM)
        return out


def init_distributed(backend: str | None = None) -> DistContext:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, MASTER_ADDR...).

    Without those variables (a plain `python` run) return a world of one, no process group.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(f"cuda:{local_rank}") if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend or ("nccl" if cuda else "gloo"))
    rank = dist.get_rank() if dist.is_initialized() else 0
    return DistContext(rank=rank, world_size=world, device=device)


def decoder_layers(model: nn.Module) -> list[nn.Module]:
    """The repeated transformer blocks: children of a ModuleList whose class is a no-split module.

    Hugging Face models name their block classes in `_no_split_modules` (e.g.
    `LlamaDecoderLayer`); those are the natural FSDP units.
    """
    names = set(getattr(model, "_no_split_modules", None) or [])
    layers = [
        m
        for lst in model.modules()
        if isinstance(lst, nn.ModuleList)
        for m in lst
        if type(m).__name__ in names or type(m).__name__.endswith("DecoderLayer")
    ]
    if not layers:
        raise ValueError(
            f"found no decoder layers in {type(model).__name__}: expected an "
            f"nn.ModuleList of {sorted(names) or '*DecoderLayer'} blocks"
        )
    return layers


def shard_model(
    model: nn.Module, ctx: DistContext, *, bf16_params: bool = False, reshard_after_forward: bool = True
) -> nn.Module:
    """Apply FSDP2 per decoder layer, then to the root; return the (same, now sharded) model.

    `bf16_params` adds a MixedPrecisionPolicy: bf16 compute copies of the parameters and
    fp32 gradient reduction, with fp32 master weights and optimizer state.
    """
    mesh = init_device_mesh(ctx.device.type, (ctx.world_size,))
    kwargs = {"mesh": mesh, "reshard_after_forward": reshard_after_forward}
    if bf16_params:
        kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in decoder_layers(model):
        fully_shard(layer, **kwargs)
    fully_shard(model, **kwargs)
    return model


def set_gradient_sync(model: nn.Module, enabled: bool) -> None:
    """Skip (False) or do (True) the gradient reduce-scatter on the next backward.

    Gradient accumulation: only the last micro-batch of a mini-batch needs to communicate.
    No-op for an unsharded model.
    """
    if hasattr(model, "set_requires_gradient_sync"):
        model.set_requires_gradient_sync(enabled)


def clip_grad_norm(parameters, max_norm: float) -> torch.Tensor:
    """Clip gradients to `max_norm` (global over ranks for DTensor grads); return the norm.

    `torch.nn.utils.clip_grad_norm_` reduces DTensor shards into the true global norm; the
    result is then a DTensor, made a plain 0-dim tensor with `full_tensor()`.
    """
    params = [p for p in parameters if p.grad is not None]
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    return norm.full_tensor() if hasattr(norm, "full_tensor") else norm


def full_state_dict(model: nn.Module, ctx: DistContext) -> dict[str, torch.Tensor]:
    """Unsharded CPU state dict on rank 0 (empty dict on other ranks); all ranks must call it.

    On one CPU process these are the live tensors (no 538 MB clone for SmolLM2-135M):
    callers write them out before the model is updated again."""
    if not ctx.distributed:
        return {k: v.detach().cpu() for k, v in model.state_dict().items()}
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    state = get_model_state_dict(model, options=options)
    return state if ctx.is_main else {}
