"""Rollout tokens/s with tensor parallelism, TP=2 vs TP=1, on the same work and the same cores.

Each measurement is its own process (a fresh `RolloutEngine`, as a rollout replica starts
it, bound the way the launcher binds a replica on this host: TP=1 one worker on every core
`VLLM_CPU_OMP_THREADS_BIND=0,1`; TP=2 one worker per core `0|1`, meshrl/launch/cores.py).
Work: `--prompts` prompt groups × `--samples` samples × `--tokens` tokens (`ignore_eos`-free
sampling at T=1 with fixed seeds), after one warm-up group; tokens/s = generated tokens /
wall seconds of the timed part. Rounds run in ABBA order (TP=1, TP=2, TP=2, TP=1, ...) so a
load that drifts over the minutes weighs on both alike; each row also records the host's
load average and `cores_used` (CPU seconds of the engine's processes per wall second of the
timed part, out of 2): how much of the host the measurement really got.

Models: `tiny` (the tests' 2-layer hidden-64 Llama) and `mid` (the same tokenizer, 12
layers, hidden 768, 12 heads / 4 KV heads: ≈104M parameters, where the matmuls dominate).

Run:  .venv/bin/python -m benchmarks.tensor_parallel [--models tiny,mid] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPES = {"tiny": {}, "mid": dict(hidden=768, layers=12, heads=12, kv_heads=4, head_dim=64)}
BINDING = {1: "0,1", 2: "0|1"}  # this 2-core host; the launcher's rollout_env


def cpu_seconds() -> float:
    """CPU seconds used so far by this process and every live descendant (vLLM's engine core
    and its workers)."""
    import psutil  # a vLLM dependency

    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def tasks(args):
    import numpy as np

    from meshrl.api.common.v1 import common_pb2 as pb

    def one(i: int):
        ids = np.arange(10 + i, 26 + i, dtype=np.int32)
        return pb.PromptTask(
            run_id="bench",
            group_id=f"g{i}",
            prompt_token_ids=ids.tobytes(),
            sampling=pb.SamplingParams(n=args.samples, temperature=1.0, top_p=1.0, max_tokens=args.tokens, seed=i + 1),
        )

    return [one(i) for i in range(args.prompts)]


async def measure_one(args) -> dict:
    """In the child: start the engine, warm up, time the work."""
    from meshrl.services.rollout.engine import EngineConfig, RolloutEngine

    t0 = time.perf_counter()
    engine = await RolloutEngine.start(
        EngineConfig(model=args.model_dir, max_model_len=256, kv_cache_gb=1.0, tensor_parallel_size=args.tp)
    )
    started = time.perf_counter() - t0
    try:
        work = tasks(args)
        await engine.generate_group(work[0])  # warm-up
        load0, cpu0, t1 = os.getloadavg()[0], cpu_seconds(), time.perf_counter()
        groups = await asyncio.gather(*(engine.generate_group(t) for t in work))
        wall, cpu = time.perf_counter() - t1, cpu_seconds() - cpu0
        tokens = sum(len(s.response_token_ids) // 4 for g in groups for s in g.samples)
        load1 = os.getloadavg()[0]
    finally:
        engine.shutdown()
    return {
        "tp": args.tp,
        "tokens": tokens,
        "wall_s": round(wall, 2),
        "tokens_per_s": round(tokens / wall, 1),
        "startup_s": round(started, 1),
        "load1_before": load0,
        "load1_after": load1,
        "cores_used": round(cpu / wall, 2),
    }  # CPU seconds of the engine's processes per wall second


def run_child(model: str, model_dir: Path, tp: int, args) -> dict:
    env = {**os.environ, "VLLM_CPU_OMP_THREADS_BIND": BINDING[tp], "OMP_NUM_THREADS": str(3 - tp)}
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.tensor_parallel",
        "--child",
        "--tp",
        str(tp),
        "--model-dir",
        str(model_dir),
        "--prompts",
        str(args.prompts),
        "--samples",
        str(args.samples),
        "--tokens",
        str(args.tokens),
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    rows = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode or not rows:
        raise RuntimeError(f"TP={tp} on {model} failed ({out.returncode}): {out.stderr[-3000:]}")
    return {"model": model, **json.loads(rows[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny,mid")
    parser.add_argument("--rounds", type=int, default=2, help="ABBA rounds: each TP runs 2 × rounds times")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tp", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(measure_one(args))), flush=True)
        return
    from meshrl.inputs.models.tiny import build_tiny_model_dir

    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            model_dir = build_tiny_model_dir(Path(tmp) / model, **SHAPES[model])
            for _ in range(args.rounds):
                for tp in (1, 2, 2, 1):
                    print(json.dumps(run_child(model, model_dir, tp, args)), flush=True)


if __name__ == "__main__":
    main()
