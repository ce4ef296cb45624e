"""Peak memory of a running mesh, per service: PSS and RSS sums over a process tree.

Attach it to a `meshrl train` that is already running (e.g. the main job) and it samples
the whole tree (NATS, rollout + vLLM engine core, reward + math-verify pool, reference,
learner) every second until that process exits, then prints the peak, split by service:

    .venv/bin/python -m benchmarks.mesh_memory $(pgrep -f "meshrl train" | head -1)

`python -m benchmarks.mesh_step CONFIG` does the same for a run it starts itself.
Simplifications: sampled, so a spike shorter than a second can be missed; see
benchmarks/process_memory.py for what PSS and RSS sums count.
"""

from __future__ import annotations

import argparse

from benchmarks.process_memory import PeakSampler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pid", type=int, help="the `meshrl train` process")
    ap.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    args = ap.parse_args()
    sampler = PeakSampler(args.pid, every=args.every)
    sampler.watch()
    print(sampler.report())


if __name__ == "__main__":
    main()
