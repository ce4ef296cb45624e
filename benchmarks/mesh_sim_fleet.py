"""The simulated replicas of benchmarks/mesh_sim.py as child processes: start, SIGKILL, CPU.

Each replica is `python -m benchmarks.mesh_sim_replica ROLE ...` (its own process, its own
NATS connection). `kill_random()` SIGKILLs one live replica (no clean shutdown: its
in-flight messages come back after ack_wait) and starts a replacement under a new id.
CPU seconds per kind are sampled with psutil every `sample()`; a killed process keeps
its last sample (up to one sample period of its CPU is not counted).
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]


class Fleet:
    def __init__(self, url: str, run_id: str, args, log_dir: Path):
        self.url, self.run_id, self.args, self.log_dir = url, run_id, args, log_dir
        self.procs: dict[str, tuple[str, subprocess.Popen]] = {}  # replica id → (kind, process)
        self.cpu: dict[int, tuple[str, float]] = {}  # pid → (kind, CPU s at last sample)
        self.started, self.killed = defaultdict(int), []
        self.rng = random.Random(args.seed)
        self.logs = []

    def start(self, kind: str) -> str:
        replica_id = f"{kind}-{self.started[kind]}"
        self.started[kind] += 1
        cmd = [
            sys.executable,
            "-m",
            "benchmarks.mesh_sim_replica",
            kind,
            self.url,
            self.run_id,
            replica_id,
            "--gen-ms",
            str(self.args.gen_ms),
            "--ack-wait",
            str(self.args.ack_wait),
        ]
        log = open(self.log_dir / f"{replica_id}.log", "wb")
        self.logs.append(log)
        self.procs[replica_id] = (kind, subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT))
        return replica_id

    def start_all(self, rollouts: int, rewards: int) -> None:
        for _ in range(rollouts):
            self.start("rollout")
        for _ in range(rewards):
            self.start("reward")

    def kill_random(self) -> tuple[str, str]:
        """SIGKILL one live replica and start a new one of its kind: (killed id, new id)."""
        self.sample()
        victim = self.rng.choice(sorted(self.procs))
        kind, proc = self.procs.pop(victim)
        proc.kill()
        proc.wait()
        self.killed.append(victim)
        return victim, self.start(kind)

    def dead_early(self) -> list[str]:
        """Replicas that exited without being killed (a crash: see their log)."""
        return [rid for rid, (_, proc) in self.procs.items() if proc.poll() is not None]

    def sample(self) -> None:
        for kind, proc in self.procs.values():
            try:
                t = psutil.Process(proc.pid).cpu_times()
            except psutil.Error:
                continue
            self.cpu[proc.pid] = (kind, t.user + t.system)

    def cpu_by_kind(self) -> dict[str, float]:
        totals: dict[str, float] = defaultdict(float)
        for kind, seconds in self.cpu.values():
            totals[kind] += seconds
        return dict(totals)

    def stop(self) -> None:
        self.sample()
        for _, proc in self.procs.values():
            proc.kill()
            proc.wait()
        self.procs.clear()
        for log in self.logs:
            log.close()
