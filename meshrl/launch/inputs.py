"""Check that the files a run reads exist before any process starts, with a fix in the message."""

from __future__ import annotations

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
            resolve_model_source(cfg.model.path, cfg.model.gguf_file)
        except ModelLoadError as err:
            problems.append(f"model.path: {err}")
    if cfg.model.tokenizer and not expand(cfg.model.tokenizer).exists():
        problems.append(f"model.tokenizer={cfg.model.tokenizer} does not exist")
    kind = "pairs" if cfg.algorithm.offline else "arithmetic"
    for key, value in (("data.train", cfg.data.train), ("data.eval", cfg.data.eval)):
        if value and not expand(value).exists():
            problems.append(f"{key}={value} does not exist; make one with `meshrl data {kind} --out {value} --n 512`")
    return problems


def check_inputs(cfg: RunConfig) -> None:
    """Raise LaunchError listing every missing input."""
    problems = missing_inputs(cfg)
    if problems:
        raise LaunchError("; ".join(problems))
