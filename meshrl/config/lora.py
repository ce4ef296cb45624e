"""`model.lora`: train low-rank adapters (PEFT's LoRA) over a frozen base instead of the
whole model.

    model:
      path: ~/.cache/meshrl/models/SmolLM2-135M-Instruct
      lora: {rank: 16, alpha: 32, dropout: 0.0, target_modules: [q_proj, k_proj, v_proj, o_proj]}

Each targeted linear layer W (out × in) gets B·A with A (rank × in), B (out × rank), B = 0 at
the start, and computes W·x + (alpha / rank)·B·A·x (Hu et al. 2021, "LoRA", arXiv:2106.09685).
Only A and B are trained and held by AdamW. `target_modules` are module-name suffixes (PEFT's
matching) or "all-linear". Whether they match and whether `rank` fits the layers is checked
against the model when the learner loads it (services/learner/lora.py).
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from meshrl.config.algorithm import Strict
from meshrl.errors import ConfigError


class LoraSettings(Strict):
    rank: int = Field(16, ge=1)
    alpha: float = Field(32.0, gt=0.0)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] | Literal["all-linear"] = ["q_proj", "k_proj", "v_proj", "o_proj"]

    @field_validator("target_modules")
    @classmethod
    def _some_target(cls, value):
        if isinstance(value, list) and not [v for v in value if v.strip()]:
            raise ConfigError("model.lora.target_modules is empty: name the linear layers to adapt "
                              "(e.g. [q_proj, v_proj]) or all-linear")
        return value
