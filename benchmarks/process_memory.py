"""Memory of a process tree, per service: the sampler `mesh_step.py` and `mesh_memory.py` share.

Two sums are kept, because they answer different questions:

- **RSS sum**: every resident page of every process, shared pages (torch's libraries, the
  /dev/shm weights file) counted once per process that maps them. An upper bound.
- **PSS sum** (proportional set size, Linux `smaps_rollup`): a page shared by k processes
  counts 1/k in each, so the sum is the physical memory the tree really holds — what a
  laptop would have to have.

Both also count **shm**: the pages held by meshrl's files in /dev/shm (the weights
versions on tmpfs are memory even while no process maps them; a run removes them when it
ends, so only the running one's are there). While a process maps such a file its pages
are in that process's sum too: counted twice then, never missed.

Each process is labelled by the service it belongs to: the `-m meshrl.services.<name>`
(or `meshrl serve <name>`) ancestor it descends from (vLLM's engine core counts as rollout, the math-verify pool as
reward), else `nats` or `launcher`. A sample is taken every `every` seconds; a spike
shorter than that can be missed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

SERVICES = ("rollout", "reward", "reference", "learner")


def service_of(cmdline: list[str]) -> str | None:
    """'rollout' for `python -m meshrl.services.rollout ...` or `meshrl serve rollout ...`."""
    for i, arg in enumerate(cmdline):
        if arg.startswith("meshrl.services.") and arg.split(".")[2] in SERVICES:
            return arg.split(".")[2]
        if arg == "serve" and i + 1 < len(cmdline) and cmdline[i + 1] in SERVICES:
            return cmdline[i + 1]
    if any("nats-server" in arg for arg in cmdline[:1]):
        return "nats"
    return None


def label_tree(root: psutil.Process) -> dict[psutil.Process, str]:
    """Every process of the tree → the service label of its nearest labelled ancestor."""
    labels: dict[psutil.Process, str] = {}

    def walk(proc: psutil.Process, inherited: str) -> None:
        try:
            label = service_of(proc.cmdline()) or inherited
            kids = proc.children()
        except psutil.Error:
            return
        labels[proc] = label
        for kid in kids:
            walk(kid, label)

    walk(root, "launcher")
    return labels


@dataclass
class Sample:
    rss: dict[str, int] = field(default_factory=dict)
    pss: dict[str, int] = field(default_factory=dict)

    @property
    def rss_total(self) -> int:
        return sum(self.rss.values())

    @property
    def pss_total(self) -> int:
        return sum(self.pss.values())


def shm_bytes(root: Path = Path("/dev/shm")) -> int:
    """Pages allocated to meshrl's files under /dev/shm (st_blocks: sparse files count only
    what they hold)."""
    total = 0
    for path in root.glob("meshrl-*"):
        for f in [path, *path.rglob("*")] if path.is_dir() else [path]:
            try:
                total += f.stat().st_blocks * 512 if f.is_file() else 0
            except OSError:  # removed while we looked
                pass
    return total


def sample_tree(root: psutil.Process) -> Sample:
    out = Sample()
    out.rss["shm"] = out.pss["shm"] = shm_bytes()
    for proc, label in label_tree(root).items():
        try:
            info = proc.memory_full_info()
        except psutil.Error:  # exited between the listing and the read
            continue
        out.rss[label] = out.rss.get(label, 0) + info.rss
        out.pss[label] = out.pss.get(label, 0) + getattr(info, "pss", info.rss)
    return out


class PeakSampler:
    """Samples a process tree in a thread; keeps the sample with the largest PSS and RSS sums."""

    def __init__(self, pid: int, every: float = 1.0):
        self.root, self.every = psutil.Process(pid), every
        self.peak_pss = self.peak_rss = Sample()
        self.per_service_peak_pss: dict[str, int] = {}
        self._thread = threading.Thread(target=self.watch, daemon=True)

    def start(self) -> "PeakSampler":
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _alive(self) -> bool:
        try:
            return self.root.is_running() and self.root.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def watch(self) -> None:
        """Sample until the root process exits (`start()` runs this in a thread)."""
        while self._alive():
            s = sample_tree(self.root)
            if s.pss_total > self.peak_pss.pss_total:
                self.peak_pss = s
            if s.rss_total > self.peak_rss.rss_total:
                self.peak_rss = s
            for label, pss in s.pss.items():
                self.per_service_peak_pss[label] = max(pss, self.per_service_peak_pss.get(label, 0))
            time.sleep(self.every)

    def report(self) -> str:
        gib = 2**30
        p, r = self.peak_pss, self.peak_rss
        lines = [
            f"  peak memory of all mesh processes: PSS {p.pss_total / gib:.2f} GiB "
            f"({p.pss_total / 1e9:.2f} GB); RSS sum {r.rss_total / gib:.2f} GiB "
            f"({r.rss_total / 1e9:.2f} GB, shared pages counted per process)",
            "  at the PSS peak, per service (GiB)   [own peak]",
        ]
        for label in sorted(p.pss, key=p.pss.get, reverse=True):
            lines.append(
                f"    {label:<10} PSS {p.pss[label] / gib:6.2f}   RSS {p.rss[label] / gib:6.2f}"
                f"   [{self.per_service_peak_pss.get(label, 0) / gib:.2f}]"
            )
        return "\n".join(lines)
