"""Time one GRPO training step on a SmolLM2-135M-shaped model on CPU; split and memory.

Builds a LlamaForCausalLM with SmolLM2-135M's dimensions (hidden 576, 30 layers, 9 heads,
3 KV heads, intermediate 1536, vocab 49152, tied embeddings; random weights — timing only)
and runs `TrainStep` on a batch of 8 sequences × 64 tokens (32 prompt + 32 response),
GRPO with k3 KL in the loss and rollout correction, for:

    fp32 and bf16 autocast  ×  1 process and 2 FSDP2 ranks (gloo)

Each configuration runs in fresh processes (so peak RSS is its own): 1 warm-up step, then
`--steps` timed steps. Printed per configuration: step time split into the old-log-prob
recompute, forward, backward, optimizer and algorithm math (advantages, losses, KL,
aggregation; should be < 1% of the step), and per rank: parameters + gradients + AdamW
state actually held (FSDP2 shards them, so ≈ half per rank at 2 ranks) and peak RSS
(which also holds torch itself, activations and the unsharded layer being computed).
CPU-seconds per step and the load average are printed too: on a shared machine wall time
stretches with the load, CPU time much less.

`--shortcuts` instead times the learner's shortcuts on one process at the issue-15 batch,
16 sequences x 76 tokens (4 groups of 4 sharing a 44-token prompt, responses 8-32 tokens,
ragged like real samples), GRPO with one optimizer step per batch (max_staleness 0):

    baseline       old log-probs recomputed, padded forward
    skip_old       + old log-probs = current (pass skipped)
    shared_prefix  + each group's prompt forward once
    packed         + no padding, one packed row (instead of shared_prefix)
    *_bf16         the same under bf16 autocast

Simplifications: the CPU is shared with whatever else runs; threads are split evenly
between ranks (2 cores: 2 threads at 1 rank, 1 thread each at 2 ranks).

Run:  .venv/bin/python benchmarks/train_step.py [--steps 2] [--configs fp32-1,bf16-1,fp32-2,bf16-2]
      .venv/bin/python benchmarks/train_step.py --shortcuts [--variants baseline,skip_old,...]
      .venv/bin/python benchmarks/train_step.py --forwards 3   # the three forward paths only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

ROWS, PROMPT, RESPONSE = 8, 32, 32


def smollm2_135m_shape():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=2048,
        rope_theta=100000.0,
        tie_word_embeddings=True,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def synthetic_batch():
    from meshrl.algos.batch import RolloutBatch

    g = torch.Generator().manual_seed(0)
    prompts = torch.randint(1, 49152, (ROWS, PROMPT), generator=g)
    responses = torch.randint(1, 49152, (ROWS, RESPONSE), generator=g)
    logps = -10.0 - torch.rand(ROWS, RESPONSE, generator=g)
    return RolloutBatch(
        prompt_ids=prompts,
        prompt_mask=torch.ones_like(prompts),
        response_ids=responses,
        response_mask=torch.ones(ROWS, RESPONSE),
        rewards=torch.rand(ROWS, generator=g),
        group_ids=torch.arange(ROWS) // 4,
        behaviour_logprobs=logps,
        ref_logprobs=logps + 0.01,
    )


def held_bytes(policy) -> int:
    """Bytes of this rank's parameter shards, their gradients and AdamW state.

    Gradients are counted as one more copy of the parameters: they exist from the first
    backward until `zero_grad(set_to_none=True)` after the optimizer step.
    """

    def nbytes(t):
        t = t.to_local() if hasattr(t, "to_local") else t
        return t.numel() * t.element_size()

    params = sum(nbytes(p) for p in policy.model.parameters())
    state = sum(
        nbytes(v) for s in policy.optimizer.state.values() for v in s.values() if torch.is_tensor(v) and v.dim() > 0
    )
    return 2 * params + state


def run(rank: int, world: int, bf16: bool, steps: int, init_file: str, out_dir: str) -> None:
    from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
    from meshrl.services.learner.train.fsdp import DistContext
    from meshrl.services.learner.train.policy import build_policy
    from meshrl.services.learner.train.step import TrainStep

    torch.set_num_threads(max(1, (os.cpu_count() or 2) // world))
    if world > 1:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    ctx = DistContext(rank=rank, world_size=world)
    trainer = TrainerConfig(micro_batch_size=4, bf16=bf16, optim={"lr": 1e-6})
    algo = AlgorithmConfig(loss_agg_mode="seq-mean-token-mean", kl_coef=0.04)
    policy = build_policy(smollm2_135m_shape(), trainer, total_steps=100, dist=ctx)
    step = TrainStep(policy, algo, trainer, dist=ctx)
    share = ROWS // world
    batch = synthetic_batch().select(slice(rank * share, (rank + 1) * share))
    step(batch, 0)  # warm-up (allocations, optimizer state)
    cpu_start = time.process_time()
    timed = [step(batch, i + 1) for i in range(steps)]
    cpu_per_step = (time.process_time() - cpu_start) / steps
    mean = {k: sum(m[k] for m in timed) / steps for k in timed[0] if k.startswith("time/")}
    mean["cpu_s"] = cpu_per_step
    mean["held_gb"] = held_bytes(policy) / 1e9
    mean["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB → GB
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(mean))
    if world > 1:
        dist.destroy_process_group()


def measure(world: int, bf16: bool, steps: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(run, args=(world, bf16, steps, str(Path(tmp, "init")), tmp), nprocs=world, join=True)
        return [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(world)]


def report(name: str, ranks: list[dict]) -> None:
    r0 = ranks[0]
    step = r0["time/step"]
    parts = ["old_logprobs", "forward", "backward", "optimizer", "algo"]
    split = "  ".join(f"{p} {r0.get('time/' + p, 0.0):.2f}s" for p in parts)
    algo_share = 100.0 * r0.get("time/algo", 0.0) / step
    print(
        f"{name:8s} step {step:6.2f}s wall, {r0['cpu_s']:.1f} CPU-s (rank 0) | {split} | "
        f"algo {algo_share:.2f}% of step | load avg {os.getloadavg()[0]:.1f}"
    )
    for rank, r in enumerate(ranks):
        print(f"{'':8s} rank {rank}: params+grads+AdamW held {r['held_gb']:.3f} GB, peak RSS {r['peak_rss_gb']:.2f} GB")


SHORTCUTS = {  # variant: (old_logprobs, forward, bf16)
    "baseline": ("recompute", "padded", False),
    "skip_old": ("auto", "padded", False),
    "shared_prefix": ("auto", "shared_prefix", False),
    "packed": ("auto", "packed", False),
    "baseline_bf16": ("recompute", "padded", True),
    "skip_old_bf16": ("auto", "padded", True),
    "shared_prefix_bf16": ("auto", "shared_prefix", True),
    "packed_bf16": ("auto", "packed", True),
}


def grpo_batch(groups: int = 4, size: int = 4, prompt: int = 44, max_response: int = 32):
    """groups x size rows; one prompt per group; response lengths uniform in [8, max_response]."""
    import numpy as np

    from meshrl.algos.batch import RolloutBatch

    rng = np.random.default_rng(0)
    prompts = [p for p in (rng.integers(1, 49152, prompt) for _ in range(groups)) for _ in range(size)]
    responses = [rng.integers(1, 49152, rng.integers(8, max_response + 1)) for _ in prompts]
    return RolloutBatch.from_sequences(
        prompts,
        responses,
        rewards=rng.random(len(prompts)),
        group_ids=np.arange(len(prompts)) // size,
        pad_id=0,
        behaviour_logprobs=[-10.0 + 0 * r for r in responses],
    )


def time_shortcut(name: str, steps: int) -> None:
    from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
    from meshrl.services.learner.train.policy import build_policy
    from meshrl.services.learner.train.step import TrainStep

    old, forward, bf16 = SHORTCUTS[name]
    trainer = TrainerConfig(micro_batch_size=16, old_logprobs=old, forward=forward, optim={"lr": 1e-6})
    policy = build_policy(smollm2_135m_shape(), trainer, total_steps=100, bf16=bf16)
    step = TrainStep(policy, AlgorithmConfig(kl_coef=0.0), trainer, max_staleness=0)
    batch = grpo_batch()
    step(batch, 0)  # warm-up
    cpu_start = time.process_time()
    timed = [step(batch, i + 1) for i in range(steps)]
    cpu_s = (time.process_time() - cpu_start) / steps
    parts = ["step", "old_logprobs", "forward", "backward", "optimizer"]
    split = "  ".join(f"{p} {sorted(m['time/' + p] for m in timed)[steps // 2]:.2f}s" for p in parts)
    print(f"{name:20s} {split} | {cpu_s:.1f} CPU-s/step | load avg {os.getloadavg()[0]:.1f}", flush=True)


def time_forwards(rounds: int) -> None:
    """Forward + backward of the GRPO batch per forward path, interleaved round by round so a
    load change on the shared machine hits every path alike; medians of wall and CPU time."""
    from meshrl.algos.logprobs import response_logprobs

    model, batch, results = smollm2_135m_shape(), grpo_batch(), {}
    for _ in range(rounds + 1):  # round 0 warms up
        for forward in ("padded", "shared_prefix", "packed"):
            wall, cpu = time.perf_counter(), time.process_time()
            out = response_logprobs(model, batch, with_entropy=True, forward=forward)
            (out.logprobs.sum() + out.entropy.sum()).backward()
            model.zero_grad(set_to_none=True)
            results.setdefault(forward, []).append((time.perf_counter() - wall, time.process_time() - cpu))
    for forward, runs in results.items():
        runs = sorted(runs[1:])
        print(
            f"{forward:14s} forward+backward {runs[len(runs) // 2][0]:.2f}s wall "
            f"(all {', '.join(f'{w:.1f}' for w, _ in runs)}), "
            f"{sorted(c for _, c in runs)[len(runs) // 2]:.1f} CPU-s | load avg {os.getloadavg()[0]:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--configs", default="fp32-1,bf16-1,fp32-2,bf16-2")
    parser.add_argument("--shortcuts", action="store_true", help="time the learner's shortcuts")
    parser.add_argument("--variants", default=",".join(SHORTCUTS))
    parser.add_argument(
        "--forwards",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="time padded / shared_prefix / packed forward+backward, interleaved",
    )
    args = parser.parse_args()
    if args.forwards:
        torch.set_num_threads(os.cpu_count() or 2)
        time_forwards(args.forwards)
        return
    if args.shortcuts:
        torch.set_num_threads(os.cpu_count() or 2)
        print(
            f"SmolLM2-135M shape, GRPO 4x4 rows x (44 + 8..32) tokens, 1 process, median of "
            f"{args.steps} steps after 1 warm-up, torch {torch.__version__}"
        )
        for name in args.variants.split(","):
            time_shortcut(name, args.steps)
        return
    print(
        f"SmolLM2-135M shape, batch {ROWS} x {PROMPT + RESPONSE} tokens, GRPO, "
        f"{args.steps} timed steps after 1 warm-up, torch {torch.__version__}"
    )
    for name in args.configs.split(","):
        precision, world = name.split("-")
        report(name, measure(int(world), precision == "bf16", args.steps))


if __name__ == "__main__":
    main()
