"""What a checkpoint trains: named parts (module, optimizer, scheduler).

The policy is the part named "policy"; `extra_modules` adds others (PPO's critic with its
own AdamW). An extra may be given as a module, `(module, optimizer)`,
`(module, optimizer, scheduler)` or a `Part`.

How a part's state is stored: state_files.py.
"""

from __future__ import annotations

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
