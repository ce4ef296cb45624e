"""Check the files a run reads before any process starts, with a fix in the message: the model
(and that rollout.max_model_len fits its context), the tokenizer, and data files that are files."""

from __future__ import annotations

import json
from pathlib import Path

from meshrl.config.schema import RunConfig
from meshrl.errors import LaunchError
from meshrl.inputs.models.load import ModelLoadError, resolve_model_source  # pathlib only, no torch


def expand(path: str) -> Path:
    return Path(path).expanduser()


def missing_inputs(cfg: RunConfig) -> list[str]:
    """One message per missing input (model dir or GGUF file, tokenizer, data files)."""
    problems = []
    if not expand(cfg.model.path).exists():
        problems.append(
            f"model.path={cfg.model.path} does not exist; run `meshrl models "
            f"fetch-smollm2` for SmolLM2-135M-Instruct, or point model.path at a "
            f"Hugging Face model dir"
        )
    else:
        try:
            folder, gguf = resolve_model_source(cfg.model.path, cfg.model.gguf_file)
            problems += context_problems(cfg, folder) if gguf is None else []
        except ModelLoadError as err:
            problems.append(f"model.path: {err}")
    if cfg.model.tokenizer and not expand(cfg.model.tokenizer).exists():
        problems.append(f"model.tokenizer={cfg.model.tokenizer} does not exist")
    kind = "pairs" if cfg.algorithm.offline else "arithmetic"
    for key, value in (("data.train", cfg.data.train), ("data.eval", cfg.data.eval)):
        if value and not expand(value).exists():
            problems.append(f"{key}={value} does not exist; make one with `meshrl data {kind} --out {value} --n 512`")
        elif value and not expand(value).is_file():
            problems.append(f"{key}={value} is not a file (a directory?); name the .jsonl or .parquet file itself")
    return problems


def context_problems(cfg: RunConfig, model_dir: Path) -> list[str]:
    """rollout.max_model_len beyond the model's context (config.json's max_position_embeddings):
    vLLM refuses to start such an engine, after NATS and the other services have started."""
    try:
        model_config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return [f"model.path: {model_dir / 'config.json'} cannot be read as JSON ({err})"]
    context = model_config.get("max_position_embeddings") if isinstance(model_config, dict) else None
    if cfg.algorithm.offline or not isinstance(context, int) or cfg.rollout.max_model_len <= context:
        return []
    return [
        f"rollout.max_model_len={cfg.rollout.max_model_len} exceeds the model's context "
        f"(max_position_embeddings={context} in {model_dir / 'config.json'}); set "
        f"rollout.max_model_len to {context} or less"
    ]


def check_inputs(cfg: RunConfig) -> None:
    """Raise LaunchError listing every missing input."""
    problems = missing_inputs(cfg)
    if problems:
        raise LaunchError("; ".join(problems))
