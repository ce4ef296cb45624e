"""PEFT's LoRA config from `model.lora` (meshrl.config.lora), in one place: the learner wraps
its policy with it (services/learner/lora.py) and `meshrl export` re-creates the same PEFT
model to load a LoRA run's checkpoint into (meshrl/inputs/checkpoint/export.py). Both import
it once peft is wanted; what the CLI says about `model.lora` lives in meshrl/config/lora.py.
"""

from __future__ import annotations

from peft import LoraConfig, get_peft_model

from meshrl.config.lora import LoraSettings


def peft_lora_config(settings: LoraSettings):
    """The `peft.LoraConfig` for `settings` (causal LM, no bias adapters)."""
    return LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=settings.target_modules,
        bias="none",
        task_type="CAUSAL_LM",
    )


def wrap_lora(model, settings: LoraSettings):
    """`model` as PEFT's LoRA model for `settings` (the base frozen, B = 0 until loaded)."""
    return get_peft_model(model, peft_lora_config(settings))
