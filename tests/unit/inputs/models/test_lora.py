"""meshrl/inputs/models/lora.py: PEFT's config from model.lora.

Run: .venv/bin/python -m pytest tests/unit/inputs/models/test_lora.py -q
"""

from meshrl.config import load_config
from meshrl.inputs.models.lora import peft_lora_config


def run_config(*overrides):
    return load_config(
        base={"model": {"path": "m"}, "data": {"train": "t.jsonl"}, "algorithm": {"preset": "grpo"}},
        overrides=list(overrides),
    )


def test_peft_config_carries_model_lora():
    config = peft_lora_config(run_config("model.lora.rank=4", "model.lora.alpha=8").model.lora)
    assert (config.r, config.lora_alpha, config.bias) == (4, 8, "none")
    assert set(config.target_modules) == {"q_proj", "k_proj", "v_proj", "o_proj"}
