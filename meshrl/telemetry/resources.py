"""What one service process costs: CPU, resident memory and (where torch uses CUDA) GPU.

`ProcessSampler` measures what prometheus_client's standard process collector leaves out:
this process's children (a rollout service's vLLM engine core, a reward service's verifier
pool), because that is part of what the service costs the machine. CPU is cumulative seconds
(a Prometheus counter: `rate()` of it is cores busy), so it never depends on scrape timing.

GPU numbers come from torch only if the process has already imported torch and CUDA is
available; a service that never imports torch (the reward service) never pays for it.

    python -c "from meshrl.telemetry.resources import ProcessSampler as P; s = P(); print(s.children_cpu_seconds(), s.rss_bytes())"
"""

from __future__ import annotations

import os
import sys
import threading

import psutil


class ProcessSampler:
    """CPU and RSS of one process tree (the process and its children, recursively)."""

    def __init__(self, pid: int | None = None):
        self.root = psutil.Process(pid or os.getpid())
        self._lock = threading.Lock()  # scrapes may come from several HTTP threads
        self._cpu_high = 0.0

    def _children(self) -> list[psutil.Process]:
        try:
            return self.root.children(recursive=True)
        except psutil.Error:
            return []

    def children_cpu_seconds(self) -> float:
        """User + system CPU seconds of every child so far: live ones plus those already
        reaped (the kernel adds them to the parent's children_* times). Never decreases: a
        child that exits before it is reaped drops out of both sums for a moment."""
        with self._lock:
            total = 0.0
            for proc in [self.root, *self._children()]:
                try:
                    t = proc.cpu_times()
                except psutil.Error:  # a child exited between listing and sampling
                    continue
                total += t.children_user + t.children_system
                if proc is not self.root:
                    total += t.user + t.system
            self._cpu_high = max(self._cpu_high, total)
            return self._cpu_high

    def children_rss_bytes(self) -> int:
        """Resident set size of the live children in bytes (shared pages counted per child)."""
        return self._rss(self._children())

    def rss_bytes(self) -> int:
        """Resident set size of the whole tree, this process included."""
        return self._rss([self.root, *self._children()])

    @staticmethod
    def _rss(procs: list[psutil.Process]) -> int:
        total = 0
        for proc in procs:
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
        values = {
            "memory_allocated": float(torch.cuda.memory_allocated(index)),
            "memory_reserved": float(torch.cuda.memory_reserved(index)),
        }
        try:
            values["utilization"] = torch.cuda.utilization(index) / 100.0
        except Exception:  # pynvml missing or NVML not initialisable: omit that one number
            pass
        samples.append((index, values))
    return samples
