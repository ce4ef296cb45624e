"""Model checks: the path resolves (meshrl.inputs.models.load), its config loads, its size, and
the settings that depend on it (LoRA targets and rank, tensor parallel, a tracker's server:
meshrl/launch/model_settings.py, what `meshrl train` refuses before it starts anything).

`parameter_count` reads only headers (safetensors JSON header, GGUF tensor table), never
the weights, so it is instant even for large models; the disk check uses it.
"""

from __future__ import annotations

from pathlib import Path

from meshrl.cli.doctor.check import Check, failed, passed, skipped, warned
from meshrl.config.lora import adapter_push_warning
from meshrl.inputs.models.headers import safetensors_numel
from meshrl.inputs.models.load import ModelLoadError, resolve_model_source
from meshrl.inputs.models.moe import moe_ratio_warning
from meshrl.launch.cores import core_problems
from meshrl.launch.model_settings import model_setting_problems
from meshrl.launch.tracker_probe import tracker_problems

NAME = "model"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def parameter_count(folder: Path, gguf_file: str | None) -> int:
    if gguf_file:
        from gguf import GGUFReader  # lazy: gguf, only for a GGUF model

        return sum(int(t.n_elements) for t in GGUFReader(folder / gguf_file).tensors)
    files = sorted(folder.glob("*.safetensors"))
    if files:
        return sum(safetensors_numel(f) for f in files)
    return sum(f.stat().st_size for f in folder.glob("pytorch_model*.bin")) // 4  # fp32 .bin


def _tokenizer_problem(cfg, gguf: str | None) -> str | None:
    if gguf and not cfg.model.tokenizer:
        return None  # the GGUF file carries its vocab
    where = Path(cfg.model.tokenizer or cfg.model.path)
    where = where.parent if where.is_file() else where
    if not any((where / n).exists() for n in TOKENIZER_FILES):
        return f"no tokenizer.json / tokenizer_config.json in {where}"
    return None


def check_model(ctx) -> Check:
    if ctx.config is None:
        return skipped(NAME, "no config given")
    loaded = _loaded_config(ctx.config)
    if isinstance(loaded, Check):
        return loaded
    folder, gguf, hf = loaded
    ctx.parameters = parameter_count(folder, gguf)
    found = passed(
        NAME, f"{folder / gguf if gguf else folder}: {hf.model_type}, {ctx.parameters / 1e6:.2f}M parameters"
    )
    rows = [found, *_setting_rows(ctx.config)]
    return rows if len(rows) > 1 else found


def _loaded_config(cfg):
    """(folder, GGUF file or None, the Hugging Face config), or the failed Check naming what does not load."""
    try:
        folder, gguf = resolve_model_source(cfg.model.path, cfg.model.gguf_file)
    except ModelLoadError as err:
        return failed(NAME, str(err).split(";")[0], f"fix model.path in the config: {err}")
    from transformers import AutoConfig  # lazy: transformers (seconds), only when this check runs (--skip model)

    try:
        hf = AutoConfig.from_pretrained(folder, gguf_file=gguf)
    except Exception as err:  # noqa: BLE001 - transformers raises many kinds
        return failed(
            NAME,
            f"{folder}: config does not load ({type(err).__name__}: {err})",
            "model.path must hold a valid config.json (or a .gguf transformers can read)",
        )
    if problem := _tokenizer_problem(cfg, gguf):
        return failed(
            NAME,
            problem,
            "set model.tokenizer to a dir with the tokenizer files (or save them "
            "next to the model with tokenizer.save_pretrained(dir))",
        )
    return folder, gguf, hf


def _setting_rows(cfg) -> list[Check]:
    """The settings that depend on the model: refusals `meshrl train` would make, then warnings."""
    rows = []
    for problem in core_problems(cfg) + model_setting_problems(cfg) + tracker_problems(cfg):
        rows.append(failed(problem.split(" ")[0].split("=")[0], problem.split(";")[0], problem))
    if moe := moe_ratio_warning(cfg):
        rows.append(warned("moe ratio", moe.split(":")[0], moe))
    if lora := adapter_push_warning(cfg):
        rows.append(warned("lora push", lora.split(":")[0], lora))
    return rows
