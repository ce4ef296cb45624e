"""Two-rank vs one-rank learner step: the service's trainer parts on the same batch.

Times what the learner's loop calls each step, `ranks.trainer_parts(...)`: on one process
the TrainStep itself; on 2 ranks (gloo, spawned here with torchrun's environment variables)
rank 0's `Leader`, which splits the batch into whole groups, sends each rank its rows over
the command group and trains its own half while rank 1 follows (`ranks.follow`). Also the
weights export of a push (the full state dict: live tensors on one process, gathered from
the shards on 2 ranks). Model: SmolLM2-135M's shape with random weights
(benchmarks/train_step.py's), fp32; batch: its GRPO batch, 4 groups x 4 rows x (44 + 8..32)
tokens; one optimizer step per batch (old log-probs = current).

Printed per world size: median step and export wall time over `--steps` timed steps after
one warm-up, rank 0's CPU-seconds per step, the load average; then the ratio 2 ranks / 1.
(`benchmarks/train_step.py --configs fp32-1,fp32-2` times the bare TrainStep the same way,
without the rank protocol.)

Simplifications: both world sizes share this machine's cores (2 threads at 1 rank, 1 thread
each at 2 ranks, as the launcher divides them); CPU only.

Run:  .venv/bin/python -m benchmarks.learner_ranks [--steps 3]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

from benchmarks.train_step import grpo_batch, smollm2_135m_shape


def config(world: int, run_dir: str):
    from meshrl.config import load_config

    return load_config(base={
        "run": {"dir": run_dir}, "model": {"path": "unused"}, "data": {"train": "unused"},
        "algorithm": {"preset": "grpo", "kl_coef": 0.0},
        "rollout": {"sampling": {"group_size": 4, "max_tokens": 32}},
        "learner": {"ranks": world, "prompts_per_step": 4},
        "trainer": {"micro_batch_size": 8, "precision": "fp32", "optim": {"lr": 1e-6}}})


def run(rank: int, world: int, port: int, steps: int, out_dir: str) -> None:
    from meshrl.services.learner import ranks
    from meshrl.services.learner.train.policy import build_policy

    os.environ.update(WORLD_SIZE=str(world), RANK=str(rank), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // world))
    cfg = config(world, out_dir)
    ctx = ranks.join()
    policy = build_policy(smollm2_135m_shape(), cfg.trainer, total_steps=100, dist=ctx)
    if rank > 0:
        ranks.follow(ranks.rank_work(cfg, policy, None, None, ctx))
        torch.distributed.destroy_process_group()
        return
    parts = ranks.trainer_parts(cfg, policy, None, None, ctx)
    Path(out_dir, "result.json").write_text(json.dumps(timed_steps(parts, steps)))
    parts.close()


def timed_steps(parts, steps: int) -> dict:
    """Median wall times of a step and an export; rank 0's CPU-seconds per step."""
    batch, step_s, export_s = grpo_batch(), [], []
    parts.train_step(batch, 0)  # warm-up: allocations, AdamW state
    cpu = time.process_time()
    for i in range(steps):
        t0 = time.perf_counter()
        parts.train_step(batch, i + 1)
        t1 = time.perf_counter()
        parts.export_weights()
        export_s.append(time.perf_counter() - t1)
        step_s.append(t1 - t0)
    return {"step_s": statistics.median(step_s), "export_s": statistics.median(export_s),
            "cpu_s": (time.process_time() - cpu) / steps, "all_steps": step_s}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(world: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(run, args=(world, free_port(), steps, tmp), nprocs=world, join=True)
        return json.loads(Path(tmp, "result.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    print(f"SmolLM2-135M shape, fp32, GRPO 4x4 rows x (44 + 8..32) tokens, median of {args.steps} "
          f"steps after 1 warm-up, torch {torch.__version__}, {os.cpu_count()} CPUs")
    results = {}
    for world in (1, 2):
        r = results[world] = measure(world, args.steps)
        print(f"{world} rank{'s' if world > 1 else ' '}: step {r['step_s']:.2f} s wall (all "
              f"{', '.join(f'{s:.2f}' for s in r['all_steps'])}), {r['cpu_s']:.1f} CPU-s on rank 0, "
              f"export {r['export_s']:.3f} s | load avg {os.getloadavg()[0]:.1f}", flush=True)
    print(f"2 ranks / 1 rank: step x{results[2]['step_s'] / results[1]['step_s']:.2f}, "
          f"export x{results[2]['export_s'] / max(results[1]['export_s'], 1e-9):.1f}")


if __name__ == "__main__":
    main()
