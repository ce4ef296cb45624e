"""Peak memory of a running mesh: sum of RSS over a process and all its descendants.

Attach it to a `meshrl train` that is already running (e.g. the main job) and it samples
the whole tree (NATS, rollout + vLLM workers, reward + math-verify pool, reference,
learner) every second until that process exits, then prints the peak:

    .venv/bin/python benchmarks/mesh_memory.py $(pgrep -f "meshrl train" | head -1)

`benchmarks/mesh_step.py CONFIG` does the same for a run it starts itself.
Simplifications: sampled, so a spike shorter than a second can be missed; pages shared
between processes (the /dev/shm weight files) count once per process that maps them.
"""
from __future__ import annotations

import argparse
import time

import psutil


def tree_rss(root: psutil.Process) -> int:
    total = 0
    for proc in [root, *root.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
        except psutil.Error:  # exited between the listing and the read
            pass
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pid", type=int, help="the `meshrl train` process")
    ap.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    args = ap.parse_args()
    root, peak, when = psutil.Process(args.pid), 0, ""
    while root.is_running() and root.status() != psutil.STATUS_ZOMBIE:
        if (rss := tree_rss(root)) > peak:
            peak, when = rss, time.strftime("%H:%M:%S")
        time.sleep(args.every)
    print(f"peak RSS of the process tree: {peak / 2**30:.2f} GiB ({peak} bytes) at {when}")


if __name__ == "__main__":
    main()
