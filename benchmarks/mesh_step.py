"""Benchmark the whole mesh on a real job: step time split, mesh overhead, peak memory.

Runs `meshrl train CONFIG [overrides]` as a child process, samples the resident memory of
its whole process tree (NATS, rollout + vLLM workers, reward + math-verify pool,
reference, learner) every second, then reads the run's metrics.jsonl and prints, per step
(mean over steps after the first, which includes start-up):

    generation / reward / reference busy time (wall time the stage was running),
    training, weight push (serialise + transport + notice), waiting (the rest),
    mesh overhead share = (step − training − busy services) / step,
    and the peak memory of all the mesh's processes together (PSS and RSS sums, split by
    service: see benchmarks/process_memory.py).

    .venv/bin/python -m benchmarks.mesh_step examples/grpo_smollm2.yaml learner.steps=6
    .venv/bin/python -m benchmarks.mesh_step --run-dir /tmp/run   # only summarise a finished run

Simplification: memory is sampled each second, so a shorter spike can be missed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.process_memory import PeakSampler

PARTS = [
    ("generation", "time/generate_busy"),
    ("reward", "time/reward_busy"),
    ("reference", "time/reference_busy"),
    ("training", "time/train"),
]


def run_and_sample(cmd: list[str]) -> tuple[int, PeakSampler]:
    """Run `cmd`; return its exit code and the memory sampler of its process tree."""
    child = subprocess.Popen(cmd)
    sampler = PeakSampler(child.pid).start()
    rc = child.wait()
    sampler.join(timeout=5)
    return rc, sampler


def summarise(run_dir: Path) -> dict[str, float]:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    steady = rows[1:] or rows  # step 0 waits for every service to start

    def mean(key):
        return float(np.mean([r.get(key) or 0.0 for r in steady]))

    out = {name: mean(key) for name, key in PARTS}
    out["weight push"] = mean("time/weights_serialise") + mean("time/weights_push")
    out["step"] = mean("time/step")
    out["waiting"] = max(0.0, out["step"] - sum(out[n] for n, _ in PARTS) - out["weight push"])
    out["mesh overhead share"] = mean("mesh/overhead_share")
    out["reward first→last"] = (rows[0].get("reward"), rows[-1].get("reward"))
    out["steps"] = len(rows)
    return out


def print_summary(s: dict, memory: PeakSampler | None) -> None:
    print(f"steps: {s['steps']} (step 0 excluded from means)")
    for name in ["generation", "reward", "reference", "training", "weight push", "waiting", "step"]:
        share = 100 * s[name] / s["step"] if s["step"] else 0.0
        print(f"  {name:<12} {s[name]:8.2f} s   {share:5.1f} %")
    print(
        f"  mesh overhead share (everything but generation/reward/reference/training): "
        f"{100 * s['mesh overhead share']:.1f} %"
    )
    print(f"  reward: step 0 {s['reward first→last'][0]}, last step {s['reward first→last'][1]}")
    if memory is not None:
        print(memory.report())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", nargs="?")
    ap.add_argument("overrides", nargs="*")
    ap.add_argument("--run-dir", help="summarise this finished run instead of starting one")
    args = ap.parse_args()
    if args.run_dir:
        return print_summary(summarise(Path(args.run_dir)), None)
    run_dir = Path(f"/tmp/meshrl-bench-{int(time.time())}")
    cmd = [str(Path(sys.executable).with_name("meshrl")), "train", args.config, *args.overrides, f"run.dir={run_dir}"]
    rc, memory = run_and_sample(cmd)
    if rc != 0:
        sys.exit(f"the run failed (exit {rc}); see {run_dir}/logs")
    print_summary(summarise(run_dir), memory)


if __name__ == "__main__":
    main()
