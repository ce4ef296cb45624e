"""LoRA in the learner, through PEFT: wrap the base model, check the config against it, and
give rollout and export the merged weights (base names, base shapes).

`apply_lora` checks `model.lora` against the loaded model first (meshrl.config.lora's
`lora_problem`, which `meshrl train` also runs before anything starts; ConfigError naming the
fix). Then PEFT's `get_peft_model` freezes the base and adds A, B to each matched layer.

`merged_state_dict` is the policy rollout serves: for every adapted layer W + (alpha/rank)·B·A
(PEFT's own `get_delta_weight`), every other tensor as is, under the base model's names — so
every weights transport and every engine load it like a full model, and the base weights are
never modified (PEFT's merge/unmerge would add rounding to them at each push).
`BaseReference` gives a training step reference log-probs from the same base with the adapter
disabled (PEFT's `disable_adapter()`), so a LoRA run needs no reference service and no second
copy of the model (config/schema.py: reference_enabled is off for online LoRA runs).
`adapter_state_dict` is the adapter alone (PEFT's `get_peft_model_state_dict`, what PEFT's
`save_pretrained` writes) and `adapter_config_json` its config as PEFT saves it: what the
learner pushes to rollout with `model.lora.push: adapter` (the default), and what `export`
writes beside the merged model.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import torch
from peft import get_peft_model_state_dict
from torch import nn

from meshrl.config import ConfigError
from meshrl.config.lora import LoraSettings, lora_problem
from meshrl.inputs.models.lora import wrap_lora

BASE_PREFIX = "base_model.model."


def linear_shapes(model: nn.Module) -> list[tuple[str, int, int]]:
    return [(name, m.in_features, m.out_features) for name, m in model.named_modules() if isinstance(m, nn.Linear)]


def apply_lora(model: nn.Module, settings: LoraSettings) -> nn.Module:
    """The PEFT model: base frozen, adapters on the matched layers (checked first)."""
    if problem := lora_problem(settings, linear_shapes(model), type(model).__name__):
        raise ConfigError(problem)
    return wrap_lora(model, settings)


def is_lora(model: nn.Module) -> bool:
    return hasattr(model, "peft_config")


@torch.no_grad()
def merged_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The base model's state dict with each adapter folded in (module docstring)."""
    deltas = {
        f"{name}.base_layer.weight": module.get_delta_weight(module.active_adapters[0])
        for name, module in model.named_modules()
        if hasattr(module, "get_delta_weight") and hasattr(module, "base_layer") and module.merged is False
    }
    merged = {}
    for name, tensor in model.state_dict().items():
        if ".lora_" in name:
            continue
        value = tensor.detach()
        if name in deltas:
            value = value + deltas[name].to(value.dtype)
        merged[name.removeprefix(BASE_PREFIX).replace(".base_layer.", ".")] = value
    return merged


def adapter_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().contiguous() for k, v in get_peft_model_state_dict(model).items()}


def adapter_config_json(model: nn.Module) -> str:
    """The adapter's `adapter_config.json`, written by PEFT's own `save_pretrained`."""
    with tempfile.TemporaryDirectory() as tmp:
        model.peft_config[model.active_adapter].save_pretrained(tmp)
        return (Path(tmp) / "adapter_config.json").read_text()


def lora_summary(model: nn.Module) -> str:
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return f"{trainable:,} trainable of {total:,} parameters ({100 * trainable / total:.2f} %)"


class BaseReference:
    """A TrainStep whose batches get `ref_logprobs` from the base model (adapter off) when the
    algorithm needs them and they did not come with the batch."""

    def __init__(self, step):
        self.step = step

    def __call__(self, batch, step_index: int) -> dict[str, float]:
        if batch.ref_logprobs is None:
            with self.step.policy.model.disable_adapter():
                ref, _ = self.step.recompute_logprobs(batch)
            batch = dataclasses.replace(batch, ref_logprobs=ref)
        return self.step(batch, step_index)

    def __getattr__(self, name: str):
        return getattr(self.step, name)
