"""What one service process costs: CPU, resident memory and (where torch uses CUDA) GPU.

`ProcessSampler` measures this process together with its live children (a rollout service's
vLLM engine core, a reward service's verifier pool), because that is what the service costs
the machine. CPU is reported in cores busy (1.0 = one core fully used), the same unit as
`top`'s 100%, so a number means the same on a 2-core laptop and a 64-core node.

GPU numbers come from torch only if the process has already imported torch and CUDA is
available; a service that never imports torch (the reward service) never pays for it.

    python -c "from meshrl.ops.telemetry.resources import ProcessSampler as P; s = P(); print(s.cpu_cores(), s.rss_bytes())"
"""
from __future__ import annotations

import os
import sys
import threading

import psutil


class ProcessSampler:
    """CPU and RSS of one process tree (the process and its children, recursively).

    psutil's `cpu_percent()` measures since the previous call on the same `Process` object,
    so the objects are kept across calls; a child seen for the first time reports 0.0 once.
    """

    def __init__(self, pid: int | None = None):
        self.root = psutil.Process(pid or os.getpid())
        self._known: dict[int, psutil.Process] = {}
        self._lock = threading.Lock()  # scrapes may come from several HTTP threads
        self.cpu_cores()  # prime the counters so the first scrape is a real measurement

    def _tree(self) -> list[psutil.Process]:
        try:
            children = self.root.children(recursive=True)
        except psutil.Error:
            children = []
        procs = [self.root, *children]
        alive = {p.pid: self._known.get(p.pid, p) for p in procs}
        self._known = alive
        return list(alive.values())

    def cpu_cores(self) -> float:
        """Cores busy since the previous call, summed over the tree (1.0 = one core)."""
        with self._lock:
            total = 0.0
            for proc in self._tree():
                try:
                    total += proc.cpu_percent(interval=None)
                except psutil.Error:  # a child exited between listing and sampling
                    continue
            return total / 100.0

    def rss_bytes(self) -> int:
        """Resident set size of the tree in bytes (shared pages are counted per process)."""
        with self._lock:
            total = 0
            for proc in self._tree():
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    continue
            return total


def cuda_torch():
    """The already-imported torch module if CUDA is usable, else None (never imports torch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # a broken CUDA driver must not break a metrics scrape
        return None


def gpu_samples() -> list[tuple[int, dict[str, float]]]:
    """Per visible GPU: utilisation (0-1, needs NVML), allocated and reserved bytes.

    Empty when torch is not imported or CUDA is unavailable, so the gauges are omitted.
    """
    torch = cuda_torch()
    if torch is None:
        return []
    samples = []
    for index in range(torch.cuda.device_count()):
        values = {"memory_allocated": float(torch.cuda.memory_allocated(index)),
                  "memory_reserved": float(torch.cuda.memory_reserved(index))}
        try:
            values["utilization"] = torch.cuda.utilization(index) / 100.0
        except Exception:  # pynvml missing or NVML not initialisable: omit that one number
            pass
        samples.append((index, values))
    return samples
