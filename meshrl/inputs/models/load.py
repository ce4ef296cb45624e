"""Load a causal LM and its tokenizer from a Hugging Face dir (safetensors) or a GGUF file.

`model.path` in the run config is either a model dir (config.json + *.safetensors), a dir
plus `model.gguf_file`, or a path straight to a `.gguf` file. GGUF weights are dequantized
by transformers (needs the `gguf` package) and copied into a plain model built from the same
config, so nothing downstream sees GGUF quantization metadata (save_pretrained then writes
ordinary safetensors).

Usage:
    model = load_causal_lm("runs/x/ckpt", dtype="float32")
    tok = load_tokenizer("models/smol", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
"""

from __future__ import annotations

import copy
from pathlib import Path

GGUF_MAGIC = b"GGUF"
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")
FIX_HINT = (
    "point model.path at a Hugging Face model dir (config.json + *.safetensors) or a "
    ".gguf file; `python -m meshrl.inputs.models.fetch` makes SmolLM2-135M-Instruct locally"
)


class ModelLoadError(ValueError):
    """A model or tokenizer could not be loaded; the message names the file and the fix."""


def resolve_model_source(path: str | Path, gguf_file: str | None = None) -> tuple[Path, str | None]:
    """(model dir, gguf file name or None) after checking what is on disk."""
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelLoadError(f"model path {p} does not exist; {FIX_HINT}")
    if p.is_file():
        if p.suffix != ".gguf":
            raise ModelLoadError(f"model path {p} is a file but not a .gguf; {FIX_HINT}")
        return p.parent, _checked_gguf(p.parent, p.name)
    if gguf_file:
        return p, _checked_gguf(p, gguf_file)
    _check_hf_dir(p)
    return p, None


def _check_hf_dir(p: Path) -> None:
    if not (p / "config.json").exists():
        raise ModelLoadError(
            f"model dir {p} has no config.json (found: {_listing(p)}); "
            f"if it holds a .gguf file set model.gguf_file; {FIX_HINT}"
        )
    if not any(any(p.glob(pattern)) for pattern in WEIGHT_PATTERNS):
        raise ModelLoadError(
            f"model dir {p} has config.json but no weights (*.safetensors); "
            f"found: {_listing(p)}; save the model with "
            f"save_pretrained(dir, safe_serialization=True)"
        )


def _checked_gguf(folder: Path, name: str) -> str:
    """The GGUF file name, after checking it exists and starts with the GGUF magic bytes."""
    f = folder / name
    if not f.is_file():
        raise ModelLoadError(
            f"GGUF file {f} not found (in {folder}: {_listing(folder)}); fix model.gguf_file or model.path"
        )
    with open(f, "rb") as fh:
        head = fh.read(4)
    if head != GGUF_MAGIC:
        raise ModelLoadError(
            f"{f} is not a GGUF file (starts with {head!r}, expected "
            f"{GGUF_MAGIC!r}); it is truncated or another format: download it "
            f"again (python -m meshrl.inputs.models.fetch) or point at a safetensors dir"
        )
    return name


def _listing(p: Path, limit: int = 10) -> list[str]:
    names = sorted(x.name for x in p.iterdir()) if p.is_dir() else []
    return names[:limit] + (["..."] if len(names) > limit else [])


def torch_dtype(dtype):
    """'float32' | 'bfloat16' | torch.dtype → torch.dtype."""
    import torch  # lazy: torch; the launcher checks model paths here and loads none

    if isinstance(dtype, torch.dtype):
        return dtype
    allowed = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if dtype not in allowed:
        raise ModelLoadError(f"dtype={dtype!r} is not one of {sorted(allowed)}")
    return allowed[dtype]


def load_causal_lm(path: str | Path, *, gguf_file: str | None = None, dtype="float32"):
    """A transformers causal LM in eval mode, weights in `dtype`, from a dir or a GGUF file."""
    from transformers import (
        AutoModelForCausalLM,
    )  # lazy: transformers; the launcher checks model paths here and loads none

    folder, gguf = resolve_model_source(path, gguf_file)
    dt = torch_dtype(dtype)
    try:
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf, dtype=dt)
    except Exception as err:  # transformers raises many types; name the file and the fix
        where = folder / gguf if gguf else folder
        raise ModelLoadError(
            f"could not load model from {where}: {type(err).__name__}: {err}. {_gguf_hint() if gguf else FIX_HINT}"
        ) from err
    if gguf:
        model = plain_copy(model)
    return model.eval()


def _gguf_hint() -> str:
    return (
        "GGUF loading needs the `gguf` package and a llama-family architecture that "
        "transformers can dequantize; convert once with `python -m meshrl.inputs.models.fetch` "
        "style code and use the safetensors dir instead"
    )


def plain_copy(model):
    """The same weights in a fresh model built from the config without GGUF quantization info."""
    from transformers import (
        AutoModelForCausalLM,
    )  # lazy: transformers; the launcher checks model paths here and loads none

    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    # Built on CPU, not on "meta": non-persistent buffers (rotary inv_freq) must be real.
    fresh = AutoModelForCausalLM.from_config(config, dtype=model.dtype)
    fresh.load_state_dict(model.state_dict(), strict=True)
    fresh.generation_config = copy.deepcopy(model.generation_config)
    return fresh


def load_tokenizer(path: str | Path, gguf_file: str | None = None):
    """The tokenizer of a model dir or GGUF file (GGUF vocab converted by transformers)."""
    from transformers import AutoTokenizer  # lazy: transformers; the launcher checks model paths here and loads none

    p = Path(path).expanduser()
    if gguf_file or p.suffix == ".gguf":
        folder, gguf = resolve_model_source(p, gguf_file)
    else:
        folder, gguf = _tokenizer_dir(p), None
    try:
        return AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
    except Exception as err:
        where = folder / gguf if gguf else folder
        raise ModelLoadError(
            f"could not load tokenizer from {where}: {type(err).__name__}: "
            f"{err}. It needs tokenizer.json + tokenizer_config.json (or a "
            f".gguf with its vocab); set model.tokenizer to such a dir"
        ) from err


def _tokenizer_dir(p: Path) -> Path:
    """A tokenizer-only dir is fine (no weights needed), but it must exist and hold one."""
    if not p.is_dir():
        raise ModelLoadError(f"tokenizer path {p} does not exist; {FIX_HINT}")
    if not any((p / n).exists() for n in ("tokenizer.json", "tokenizer_config.json")):
        raise ModelLoadError(
            f"{p} has no tokenizer.json or tokenizer_config.json "
            f"(found: {_listing(p)}); set model.tokenizer to the model dir"
        )
    return p
