"""fp32 vs bf16 autocast for one training step on a SmolLM2-135M-shaped model, on this CPU.

Why it exists: bf16 autocast is a config option (`trainer.bf16`). On a CPU with AVX-512
bf16 it roughly halves the step; on a CPU without it (the AMD EPYC this project was last
measured on reports no avx512 flags), autocast's bf16 kernels fall back to slow paths and
the backward pass is ~30x slower. Run this before turning it on.

    .venv/bin/python -m benchmarks.precision            # both (from the repo root)
    .venv/bin/python -m benchmarks.precision fp32

Prints the learner's own step split (TrainStep metrics) for 2 steps and a plain Hugging Face
forward/backward of the same batch for comparison. Batch: 8 × 64 tokens (see train_step.py).
"""

import sys
import time

import torch

from benchmarks.train_step import smollm2_135m_shape, synthetic_batch
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep


def measure(bf16: bool) -> None:
    model = smollm2_135m_shape()
    trainer = TrainerConfig(micro_batch_size=8, bf16=bf16)
    step = TrainStep(build_policy(model, trainer, total_steps=10), AlgorithmConfig(kl_coef=0.0), trainer)
    batch = synthetic_batch()
    name = "bf16" if bf16 else "fp32"
    for i in range(2):
        t = time.perf_counter()
        metrics = step(batch, i)
        split = {k.removeprefix("time/"): round(v, 2) for k, v in metrics.items() if k.startswith("time/")}
        print(f"{name} step {i}: {time.perf_counter() - t:.1f} s  {split}")
    ids = torch.cat([batch.prompt_ids, batch.response_ids], 1)
    t0 = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = model(input_ids=ids).logits.float().logsumexp(-1).mean()
    t1 = time.perf_counter()
    loss.backward()
    print(f"{name} plain HF forward {t1 - t0:.1f} s, backward {time.perf_counter() - t1:.1f} s")


if __name__ == "__main__":
    torch.set_num_threads(2)
    for choice in sys.argv[1:] or ["fp32", "bf16"]:
        measure(choice == "bf16")
