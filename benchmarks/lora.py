"""LoRA vs full fine-tuning on CPU: what a weights push would carry and how long one training
step takes, on the tiny test model and a SmolLM2-135M-shaped model (random weights).

Per model: (1) push size and time — the full state dict (what every transport sends today,
merged weights included) vs the adapter alone (PEFT's get_peft_model_state_dict), each
written as safetensors to /dev/shm (the shm transport's medium) and timed with the merge for
the full LoRA push; (2) one GRPO TrainStep (fp32, 8 × 64 tokens) full vs LoRA r=16 on
q/k/v/o, the median of `--steps` after one warm-up.

Run:  .venv/bin/python -m benchmarks.lora [--steps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import torch
from safetensors.torch import save_file

from benchmarks.plan_memory import synthetic_batch

SHAPES = {
    "tiny": dict(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        tie_word_embeddings=True,
    ),
    "smollm2-135m": dict(
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        tie_word_embeddings=True,
    ),
}


def model_of(shape: dict):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(**shape, pad_token_id=0))


def timed_write(state: dict) -> tuple[int, float]:
    seen, unique = set(), {}
    for k, v in state.items():  # a tied lm_head is the embedding: written once
        if v.data_ptr() not in seen:
            seen.add(v.data_ptr())
            unique[k] = v
    with tempfile.NamedTemporaryFile(dir="/dev/shm", suffix=".safetensors") as f:
        t0 = time.perf_counter()
        save_file({k: v.contiguous() for k, v in unique.items()}, f.name)
        return os.path.getsize(f.name), time.perf_counter() - t0


def step_seconds(model, cfg, steps: int) -> float:
    from meshrl.services.learner.build import plain_train_step
    from meshrl.services.learner.train.fsdp import DistContext
    from meshrl.services.learner.train.policy import build_policy

    policy = build_policy(model, cfg.trainer, total_steps=100)
    step = plain_train_step(cfg, policy, None, DistContext())
    batch = synthetic_batch(8, 32, 32, model.config.vocab_size)
    step(batch, 0)
    times = []
    for i in range(steps):
        t0 = time.perf_counter()
        step(batch, i + 1)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(name: str, steps: int) -> dict:
    from meshrl.config import load_config
    from meshrl.config.lora import LoraSettings
    from meshrl.services.learner.lora import adapter_state_dict, apply_lora, merged_state_dict

    cfg = load_config(
        base={
            "model": {"path": "unused"},
            "data": {"train": "unused"},
            "algorithm": {"preset": "grpo", "kl_coef": 0.0},
            "trainer": {"micro_batch_size": 8, "precision": "fp32"},
        }
    )
    full_bytes, full_s = timed_write(model_of(SHAPES[name]).state_dict())
    lora = apply_lora(
        model_of(SHAPES[name]), LoraSettings(rank=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    )
    adapter_bytes, adapter_s = timed_write(adapter_state_dict(lora))
    t0 = time.perf_counter()
    merged = merged_state_dict(lora)
    merge_s = time.perf_counter() - t0
    return {
        "model": name,
        "full_push_bytes": full_bytes,
        "full_push_write_s": round(full_s, 4),
        "adapter_push_bytes": adapter_bytes,
        "adapter_push_write_s": round(adapter_s, 4),
        "merge_s": round(merge_s, 4),
        "merged_tensors": len(merged),
        "step_full_s": round(step_seconds(model_of(SHAPES[name]), cfg, steps), 3),
        "step_lora_s": round(step_seconds(lora, cfg, steps), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--models", default="tiny,smollm2-135m")
    args = parser.parse_args()
    for name in args.models.split(","):
        print(json.dumps(measure(name, args.steps)), flush=True)


if __name__ == "__main__":
    main()
