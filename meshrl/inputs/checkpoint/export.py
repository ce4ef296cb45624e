"""Export a checkpoint's policy weights as a standard Hugging Face model dir.

    OUT_DIR/model.safetensors        weights (tied embeddings stored once, as transformers does)
    OUT_DIR/config.json, generation_config.json
    OUT_DIR/tokenizer.json, tokenizer_config.json (with chat_template), special_tokens_map.json,
           chat_template.jinja
    OUT_DIR/meshrl_export.json       provenance: source checkpoint, step, config hash
    OUT_DIR/adapter/                 a LoRA run's adapter alone, PEFT's format (LoRA runs only)

A LoRA run (`model.lora` in the config saved with the checkpoint) checkpoints its PEFT model:
the base is wrapped the same way (meshrl.inputs.models.lora), the adapters loaded, written
alone to OUT_DIR/adapter, and OUT_DIR itself is the merged model (PEFT's `merge_and_unload`),
the same layout as the run's own RUN_DIR/final.

The architecture comes from `model_factory()` when given, else `base_model_dir`'s
config.json, else the HF config the checkpoint saved (`hf_config/`). The tokenizer comes
from `tokenizer_dir`, else `base_model_dir`, else the saved run config's `model.tokenizer`
or `model.path`. Written into a temporary sibling folder and renamed into place.

Simplifications: one file (no sharding of the safetensors; fine up to a few GB).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Callable

import torch

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.layout import HF_CONFIG_DIR
from meshrl.inputs.checkpoint.load import load_shards, read_config, resolve_checkpoint
from meshrl.inputs.checkpoint.manifest import read_manifest
from meshrl.inputs.checkpoint.parts import POLICY, Part
from meshrl.inputs.models.tokenizer_files import write_portable_tokenizer_files

log = logging.getLogger(__name__)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def export_hf(
    checkpoint_path: str | Path,
    out_dir: str | Path,
    *,
    model_factory: Callable[[], torch.nn.Module] | None = None,
    base_model_dir: str | Path | None = None,
    tokenizer_dir: str | Path | None = None,
    dtype: str | None = None,
) -> Path:
    """Write `out_dir` (module docstring) from a checkpoint (or a run dir's latest good one)."""
    ckpt = resolve_checkpoint(checkpoint_path)
    manifest = read_manifest(ckpt)
    out, cast = _fresh_out_dir(out_dir), _dtype(dtype) if dtype else None
    model = _with_lora(_build_model(ckpt, model_factory, base_model_dir), read_config(ckpt))
    load_shards(ckpt, {POLICY: Part(model)})
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model = _merged_after_adapter(model, tmp)
        _write_dir(tmp, model.to(cast) if cast else model, ckpt, manifest, base_model_dir, tokenizer_dir)
        os.rename(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # only left when writing failed
    return out


def _write_dir(tmp: Path, model, ckpt: Path, manifest: dict, base_model_dir, tokenizer_dir) -> None:
    model.save_pretrained(tmp, safe_serialization=True)
    _copy_generation_config(ckpt, base_model_dir, tmp)
    tokenizer = _write_tokenizer(_tokenizer_source(ckpt, tokenizer_dir, base_model_dir), tmp)
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    if vocab is not None and len(tokenizer) > vocab:
        raise CheckpointError(
            f"tokenizer has {len(tokenizer)} tokens but the model's vocab_size "
            f"is {vocab}: it is not this model's tokenizer; pass the run's "
            f"tokenizer_dir="
        )
    provenance = {"checkpoint": str(ckpt.resolve()), "step": manifest["step"], "config_hash": manifest["config_hash"]}
    (tmp / "meshrl_export.json").write_text(json.dumps(provenance, indent=2) + "\n")


def _fresh_out_dir(out_dir) -> Path:
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CheckpointError(f"export target {out} already exists and is not empty; pick a new OUT_DIR or remove it")
    if out.is_dir():
        out.rmdir()
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def _dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise CheckpointError(f"export dtype={name!r} is not one of {sorted(DTYPES)}")
    return DTYPES[name]


def _build_model(ckpt: Path, factory, base_model_dir) -> torch.nn.Module:
    """The architecture to load the weights into (randomly initialised, float32, CPU)."""
    if factory is not None:
        return factory()
    from transformers import AutoConfig, AutoModelForCausalLM  # lazy: transformers (seconds), only when exporting

    source = Path(base_model_dir) if base_model_dir else ckpt / HF_CONFIG_DIR
    if not (source / "config.json").is_file():
        raise CheckpointError(
            f"no config.json in {source}: the checkpoint saved no HF config "
            f"(its model was not a transformers model); pass model_factory= "
            f"or base_model_dir= (a HF dir with the same architecture)"
        )
    try:
        config = AutoConfig.from_pretrained(source)
    except (OSError, ValueError) as err:  # transformers' words for a config it cannot parse
        raise CheckpointError(f"{source / 'config.json'}: not a readable HF config ({type(err).__name__})") from None
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32)


def _with_lora(model: torch.nn.Module, config: dict | None) -> torch.nn.Module:
    """The model wrapped as the run's PEFT model when the saved config trained LoRA."""
    lora = ((config or {}).get("model") or {}).get("lora")
    if not lora:
        return model
    from meshrl.config.lora import LoraSettings
    from meshrl.inputs.models.lora import wrap_lora  # lazy: peft (seconds), only for a LoRA run's checkpoint

    return wrap_lora(model, LoraSettings(**lora))


def _merged_after_adapter(model: torch.nn.Module, tmp: Path) -> torch.nn.Module:
    """A PEFT model: its adapter written to tmp/adapter, then the merged plain model; any
    other model as it is."""
    if not hasattr(model, "peft_config"):
        return model
    tmp.mkdir(mode=0o700)
    model.save_pretrained(tmp / "adapter")
    return model.merge_and_unload()


def _copy_generation_config(ckpt: Path, base_model_dir, tmp: Path) -> None:
    """The base model's generation_config.json (sampling defaults, eos ids) wins over a default."""
    for folder in (base_model_dir, ckpt / HF_CONFIG_DIR):
        if folder and (Path(folder) / "generation_config.json").is_file():
            shutil.copyfile(Path(folder) / "generation_config.json", tmp / "generation_config.json")
            return


def _tokenizer_source(ckpt: Path, tokenizer_dir, base_model_dir) -> tuple[Path, str | None]:
    """(folder, gguf file or None) to read the tokenizer from; an error naming the options."""
    if tokenizer_dir or base_model_dir:
        return Path(tokenizer_dir or base_model_dir), None
    model_cfg = (read_config(ckpt) or {}).get("model", {})
    if model_cfg.get("tokenizer") or model_cfg.get("path"):
        return Path(model_cfg.get("tokenizer") or model_cfg["path"]), model_cfg.get("gguf_file")
    raise CheckpointError(
        f"{ckpt}: no tokenizer to export: pass tokenizer_dir= (or "
        f"base_model_dir=); the checkpoint's config names no model.path"
    )


def _write_tokenizer(source: tuple[Path, str | None], tmp: Path):
    """Tokenizer files every reader understands, with the chat template in both places."""
    from transformers import AutoTokenizer  # lazy: transformers (seconds), only when exporting

    folder, gguf = source
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
    except Exception as err:  # transformers raises many types; name the folder and the fix
        raise CheckpointError(
            f"could not load a tokenizer from {folder}: {type(err).__name__}: "
            f"{err}; pass tokenizer_dir= a HF dir with tokenizer.json"
        ) from err
    if not tokenizer.chat_template:
        log.warning("tokenizer from %s has no chat template; the export will have none", folder)
    tokenizer.save_pretrained(tmp)
    write_portable_tokenizer_files(tmp, tokenizer, model_max_length=int(min(tokenizer.model_max_length, 1 << 30)))
    return tokenizer
