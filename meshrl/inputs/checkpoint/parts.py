"""What a checkpoint trains: named parts (module, optimizer, scheduler) and their DCP state.

The policy is the part named "policy"; `extra_modules` adds others (PPO's critic with its
own AdamW). An extra may be given as a module, `(module, optimizer)`,
`(module, optimizer, scheduler)` or a `Part`.

Model and optimizer state go through `torch.distributed.checkpoint.state_dict`
(`get_state_dict` / `set_state_dict`): keys are parameter names (FQNs), not optimizer
indices, and tensors are DTensor shards under FSDP2, so a checkpoint written by N ranks
loads on M ranks, or on one process unsharded.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

from torch import nn

from meshrl.inputs.checkpoint.errors import CheckpointError

POLICY = "policy"


@dataclass
class Part:
    module: nn.Module
    optimizer: Any = None
    scheduler: Any = None


def as_part(name: str, value) -> Part:
    if isinstance(value, Part):
        return value
    if isinstance(value, nn.Module):
        return Part(value)
    if isinstance(value, tuple) and 1 <= len(value) <= 3 and isinstance(value[0], nn.Module):
        return Part(*value)
    raise CheckpointError(
        f"extra_modules[{name!r}] is a {type(value).__name__}; give an "
        f"nn.Module, (module, optimizer), (module, optimizer, scheduler) or a Part"
    )


def collect_parts(model, optimizer, scheduler, extra_modules: Mapping | None) -> dict[str, Part]:
    """{"policy": Part(model, optimizer, scheduler), **extras}, checked."""
    extras = dict(extra_modules or {})
    if POLICY in extras:
        raise CheckpointError(
            f"extra_modules may not use the name {POLICY!r}: it is the model passed as model=; rename the extra part"
        )
    parts = {POLICY: Part(model, optimizer, scheduler)}
    parts.update({name: as_part(name, value) for name, value in extras.items()})
    return parts


def part_state(part: Part) -> dict:
    """{"model": ..., "optim": ...} of one part (FQN keys; DTensor shards under FSDP2)."""
    from torch.distributed.checkpoint.state_dict import (
        get_model_state_dict,
        get_state_dict,
    )  # lazy: torch.distributed.checkpoint costs ~0.5-4 s; only when saving or loading

    if part.optimizer is None:
        return {"model": get_model_state_dict(part.module)}
    model_sd, optim_sd = get_state_dict(part.module, part.optimizer)
    return {"model": model_sd, "optim": optim_sd}


def apply_part_state(part: Part, state: dict) -> None:
    """Load what `part_state` produced (after DCP filled it in place) into module and optimizer."""
    from torch.distributed.checkpoint.state_dict import (
        set_model_state_dict,
        set_state_dict,
    )  # lazy: torch.distributed.checkpoint costs ~0.5-4 s; only when saving or loading

    if part.optimizer is None:
        set_model_state_dict(part.module, state["model"])
    else:
        set_state_dict(part.module, part.optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])


@contextlib.contextmanager
def quiet_single_process():
    """DCP warns on every call without a process group even when told `no_dist=True`."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield
