"""Model settings checked before anything starts: what vLLM or the learner would otherwise
refuse only after NATS, vLLM and every service had started.

- `model.lora`: every `target_modules` entry matches a linear layer and `rank` is below each
  matched layer's smaller side (meshrl.config.lora.lora_problem, the learner's own rule), on
  the shapes in the model's safetensors headers (no torch, no weight read);
- `rollout.tensor_parallel_size` divides the model's attention heads (meshrl.plan.parallel);
- vLLM's CPU build has an attention kernel for the model's head size (meshrl.plan.head_size);
- a tracker's server answers (an MLflow tracking server over http(s); tracker_probe.py);
- `launch.cores=split` leaves rollout and learner a core each on the cores this process may
  use, and rollout one per tensor-parallel worker (meshrl.launch.cores.core_problems).

`meshrl train` (with or without `--dry-run`) and `meshrl doctor` run these; the first problem
is one line and exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

from meshrl.config.lora import lora_problem
from meshrl.config.schema import RunConfig
from meshrl.errors import ConfigError, LaunchError
from meshrl.inputs.models.headers import linear_shapes
from meshrl.inputs.models.load import ModelLoadError, resolve_model_source
from meshrl.launch.cores import core_problems
from meshrl.launch.tracker_probe import tracker_problems
from meshrl.plan.head_size import head_size_problem
from meshrl.plan.parallel import tensor_parallel_problem


def model_setting_problems(cfg: RunConfig) -> list[str]:
    """LoRA and tensor-parallel problems against the model's own config (none when the model
    is missing: missing_inputs says that)."""
    try:
        folder, gguf = resolve_model_source(cfg.model.path, cfg.model.gguf_file)
    except ModelLoadError:
        return []
    problems = []
    if gguf is None and (problem := tensor_parallel_problem(str(folder), cfg.rollout.tensor_parallel_size)):
        problems.append(problem)
    if gguf is None and (problem := head_size_problem(str(folder))):
        problems.append(problem)
    if cfg.model.lora is not None and (problem := lora_setting_problem(cfg, folder, gguf)):
        problems.append(problem)
    return problems


def lora_setting_problem(cfg: RunConfig, folder: Path, gguf: str | None) -> str | None:
    """The learner's LoRA rule on the model's linear layers: read from its safetensors headers
    (milliseconds, no torch), or for a GGUF / .bin model built from its config on the meta device."""
    shapes = linear_shapes(folder) if gguf is None else None
    name = model_class_name(folder)
    if shapes is None:
        from meshrl.plan.shapes import hf_config, model_shape  # lazy: torch + transformers, only without safetensors

        try:
            config = hf_config(str(folder), gguf)
            shapes = model_shape(config).linear_shapes
        except Exception as err:  # noqa: BLE001 - transformers raises many kinds; the model check names it
            return f"model.lora: the model at {folder} could not be built from its config to check the adapter ({type(err).__name__})"
    return lora_problem(cfg.model.lora, shapes, name)


def model_class_name(folder: Path) -> str:
    """The architecture config.json names (e.g. LlamaForCausalLM), for messages."""
    try:
        architectures = json.loads((folder / "config.json").read_text()).get("architectures") or ["the model"]
    except (OSError, ValueError, AttributeError):
        return "the model"
    return str(architectures[0])


def check_model_settings(cfg: RunConfig) -> None:
    """ConfigError for a model setting the model cannot take, LaunchError for a tracker that
    does not answer; both one line, before anything starts."""
    if problems := model_setting_problems(cfg) + core_problems(cfg):
        raise ConfigError(problems[0])
    if problems := tracker_problems(cfg):
        raise LaunchError(problems[0])
