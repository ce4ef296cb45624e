"""Two-rank vs one-rank learner step: the service's trainer parts on the same batch.

Times what the learner's loop calls each step, `ranks.trainer_parts(...)`: on one process
the TrainStep itself; on 2 ranks (gloo, spawned here with torchrun's environment variables)
rank 0's `Leader`, which splits the batch into whole groups, sends each rank its rows over
the command group and trains its own half while rank 1 follows (`ranks.follow`). Also the
weights export of a push (the full state dict: live tensors on one process, gathered from
the shards on 2 ranks). Model: SmolLM2-135M's shape with random weights
(benchmarks/train_step.py's), fp32; batch: its GRPO batch, 4 groups x 4 rows x (44 + 8..32)
tokens; one optimizer step per batch (old log-probs = current).

Configurations RANKSxTHREADS (default: 1 rank with every core's thread, 1 rank with one
thread, 2 ranks with the cores divided as the launcher does). Printed per configuration:
median step and export wall time over `--steps` timed steps after one warm-up, rank 0's
CPU-seconds per step, the load average; then the ratios to the 2-rank step.
(`benchmarks/train_step.py --configs fp32-1,fp32-2` times the bare TrainStep the same way,
without the rank protocol.)

Simplifications: every configuration shares this machine's cores with whatever else runs;
CPU only.

Run:  .venv/bin/python -m benchmarks.learner_ranks [--steps 3] [--configs 1x2,1x1,2x1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

from benchmarks.train_step import grpo_batch, smollm2_135m_shape
from meshrl.addresses import free_port
from meshrl.config import load_config
from meshrl.services.learner import ranks
from meshrl.services.learner.train.policy import build_policy


def config(world: int, run_dir: str):
    return load_config(
        base={
            "run": {"dir": run_dir},
            "model": {"path": "unused"},
            "data": {"train": "unused"},
            "algorithm": {"preset": "grpo", "kl_coef": 0.0},
            "rollout": {"sampling": {"group_size": 4, "max_tokens": 32}},
            "learner": {"ranks": world, "prompts_per_step": 4},
            "trainer": {"micro_batch_size": 8, "precision": "fp32", "optim": {"lr": 1e-6}},
        }
    )


def run(rank: int, world: int, threads: int, port: int, steps: int, out_dir: str) -> None:
    os.environ.update(
        WORLD_SIZE=str(world), RANK=str(rank), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    torch.set_num_threads(threads)
    cfg = config(world, out_dir)
    ctx = ranks.join(world)
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
    return {
        "step_s": statistics.median(step_s),
        "export_s": statistics.median(export_s),
        "cpu_s": (time.process_time() - cpu) / steps,
        "all_steps": step_s,
    }


def measure(world: int, threads: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(run, args=(world, threads, free_port(), steps, tmp), nprocs=world, join=True)
        return json.loads(Path(tmp, "result.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cpus = os.cpu_count() or 2
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--configs", default=f"1x{cpus},1x1,2x{max(1, cpus // 2)}", help="RANKSxTHREADS,...")
    args = parser.parse_args()
    print(
        f"SmolLM2-135M shape, fp32, GRPO 4x4 rows x (44 + 8..32) tokens, median of {args.steps} "
        f"steps after 1 warm-up, torch {torch.__version__}, {cpus} CPUs"
    )
    results = {}
    for name in args.configs.split(","):
        world, threads = map(int, name.split("x"))
        r = results[name] = measure(world, threads, args.steps)
        print(
            f"{world} rank(s) x {threads} thread(s): step {r['step_s']:.2f} s wall (all "
            f"{', '.join(f'{s:.2f}' for s in r['all_steps'])}), {r['cpu_s']:.1f} CPU-s on rank 0, "
            f"export {r['export_s']:.3f} s | load avg {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    two = [n for n in results if n.startswith("2x")]
    for name in (n for n in results if two and n.startswith("1x")):
        print(f"{two[0]} / {name}: step x{results[two[0]]['step_s'] / results[name]['step_s']:.2f}")


if __name__ == "__main__":
    main()
