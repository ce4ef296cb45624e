"""A part's model and optimizer state as safetensors and JSON: whole, unsharded, no pickle.

    gathered = gather_part(part)            # every rank (a collective under FSDP2)
    write_part(folder, "policy", gathered)  # rank 0: model/policy.safetensors, optim/policy.*
    apply_part(part, read_part(ckpt, "policy", part))   # every rank

Saving goes through `torch.distributed.checkpoint.state_dict` with `full_state_dict=True,
cpu_offload=True`: keys are parameter names, and rank 0 holds every tensor whole. Loading
reads the same files on every rank, and `set_*_state_dict(full_state_dict=True)` keeps the
slice each rank's shards need, so a checkpoint written by N ranks loads on M, or on one
process. Optimizer tensors are keyed `PARAM_NAME/STATE_NAME` (parameter names have no `/`);
param_groups and any non-tensor state go to JSON, which has no tuples: a value the live
optimizer holds as a tuple (AdamW's betas) is made a tuple again after the load.

Simplification: rank 0 holds the whole state in CPU memory while it writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.layout import MODEL_DIR, OPTIM_DIR
from meshrl.inputs.checkpoint.parts import Part
from meshrl.inputs.checkpoint.reading import read_json, read_tensors


def _options(**extra):
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
    )  # lazy: torch.distributed.checkpoint costs ~0.5-4 s; only when saving or loading

    return StateDictOptions(full_state_dict=True, **extra)


def gather_part(part: Part) -> tuple[dict, dict | None]:
    """(model state, optimizer state or None), whole on rank 0's CPU; empty on other ranks."""
    from torch.distributed.checkpoint.state_dict import (
        get_model_state_dict,
        get_optimizer_state_dict,
    )  # lazy: see _options

    options = _options(cpu_offload=True)
    model_sd = get_model_state_dict(part.module, options=options)
    if part.optimizer is None:
        return model_sd, None
    return model_sd, get_optimizer_state_dict(part.module, part.optimizer, options=options)


def write_part(folder: Path, name: str, gathered: tuple[dict, dict | None]) -> None:
    model_sd, optim_sd = gathered
    (folder / MODEL_DIR).mkdir(exist_ok=True)
    save_file(_unshared(model_sd), folder / MODEL_DIR / f"{name}.safetensors")
    if optim_sd is None:
        return
    (folder / OPTIM_DIR).mkdir(exist_ok=True)
    tensors, values = {}, {}
    for param, entries in optim_sd["state"].items():
        for key, value in entries.items():
            if torch.is_tensor(value):
                tensors[f"{param}/{key}"] = value
            else:
                values.setdefault(param, {})[key] = value
    save_file(_unshared(tensors), folder / OPTIM_DIR / f"{name}.safetensors")
    rest = {"param_groups": optim_sd["param_groups"], "state_values": values}
    (folder / OPTIM_DIR / f"{name}.json").write_text(json_text(rest, f"part {name!r}'s optimizer"))


def json_text(value, what: str) -> str:
    """`value` as JSON text; a CheckpointError naming `what` when JSON cannot hold it."""
    try:
        return json.dumps(value, indent=1, sort_keys=True, allow_nan=False) + "\n"
    except (TypeError, ValueError) as err:
        raise CheckpointError(
            f"{what} holds a value JSON cannot store ({err}); a checkpoint keeps tensors only in its "
            f"state tensors and plain numbers, strings and lists elsewhere"
        ) from err


def _unshared(tensors: dict) -> dict:
    """safetensors refuses tensors that share memory (tied embeddings): each stored on its own."""
    seen, out = set(), {}
    for key, tensor in tensors.items():
        tensor = tensor.detach()
        ptr = tensor.untyped_storage().data_ptr() if tensor.numel() else None
        out[key] = tensor.clone().contiguous() if ptr in seen or not tensor.is_contiguous() else tensor
        seen.add(ptr)
    return out


def read_part(ckpt: Path, name: str, part: Part) -> tuple[dict, dict | None]:
    """What `write_part` wrote, for `part` (its optimizer's state only when it has one)."""
    model_file, optim_file = ckpt / MODEL_DIR / f"{name}.safetensors", ckpt / OPTIM_DIR / f"{name}.safetensors"
    for wanted, path in ((f"{name}.model", model_file), (f"{name}.optim", optim_file)):
        if wanted.endswith("optim") and part.optimizer is None:
            continue
        if not path.is_file():
            raise CheckpointError(
                f"{ckpt}: the checkpoint has no {wanted!r} (it holds {_saved(ckpt)}); pass optimizer=None / "
                f"drop that extra module to load what it has"
            )
    if part.optimizer is None:
        return read_tensors(model_file), None
    state: dict = {}
    for key, tensor in read_tensors(optim_file).items():
        param, _, entry = key.rpartition("/")
        state.setdefault(param, {})[entry] = tensor
    rest = read_json(ckpt / OPTIM_DIR / f"{name}.json")
    if not isinstance(rest, dict) or not isinstance(rest.get("state_values"), dict):
        raise CheckpointError(f"{ckpt / OPTIM_DIR / name}.json: not an optimizer's state; the checkpoint is damaged")
    for param, values in rest["state_values"].items():
        state.setdefault(param, {}).update(values)
    return read_tensors(model_file), {"state": state, "param_groups": rest.get("param_groups")}


def _saved(ckpt: Path) -> list[str]:
    found = [f"{p.stem}.model" for p in (ckpt / MODEL_DIR).glob("*.safetensors")]
    return sorted(found + [f"{p.stem}.optim" for p in (ckpt / OPTIM_DIR).glob("*.safetensors")])


def apply_part(part: Part, loaded: tuple[dict, dict | None], where: Path, name: str) -> None:
    """Load what `read_part` returned into the live module (and optimizer)."""
    from torch.distributed.checkpoint.state_dict import (
        set_model_state_dict,
        set_optimizer_state_dict,
    )  # lazy: see _options

    model_sd, optim_sd = loaded
    try:
        set_model_state_dict(part.module, model_sd, options=_options())
        if optim_sd is not None:
            tuples = [{k for k, v in group.items() if isinstance(v, tuple)} for group in part.optimizer.param_groups]
            set_optimizer_state_dict(part.module, part.optimizer, optim_sd, options=_options())
            for group, keys in zip(part.optimizer.param_groups, tuples):
                group.update({k: tuple(group[k]) for k in keys if isinstance(group.get(k), list)})
    except (RuntimeError, KeyError, ValueError, TypeError, AttributeError) as err:
        last = [line.strip() for line in str(err).splitlines() if line.strip()][-1:] or [type(err).__name__]
        raise CheckpointError(
            f"{where}: could not load parts [{name!r}]: {last[0]}; the model or optimizer does not match "
            f"the saved one (architecture, parameter names, optimizer type)"
        ) from err
