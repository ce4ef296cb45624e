"""Which CPU cores each local service computes on, as environment variables.

On one CPU host generation (vLLM) and training (torch) either take turns or run at once:

- `shared`: every process may use every core (`OMP_NUM_THREADS` = all of them) and vLLM is
  bound to all of them explicitly. This is right when they take turns, which is what an
  on-policy run (`max_staleness: 0`) does: the learner waits for the batch, rollout waits
  for the weights.
- `split`: rollout gets the first `launch.rollout_cores` of the cores (default half) and the
  learner (and the reference) the rest, each bound to its own (`VLLM_CPU_OMP_THREADS_BIND` for
  vLLM, `GOMP_CPU_AFFINITY` for torch's libgomp), so an asynchronous run (`max_staleness >= 1`)
  generates the next batch while it trains without the two fighting over cores. A split that
  leaves either side no core, or fewer rollout cores than tensor-parallel workers, is refused
  before anything starts (`core_split_problem`).
- `auto` (the default): `shared`. On a 2-core host one core each trains slower than both cores
  taking turns, asynchronous runs included (docs/benchmarks.md, "Cores for asynchronous
  runs"), so `split` is for hosts with cores to spare.

Either way vLLM is bound explicitly: its automatic binding reserves one core for its
scheduler, which on a small host leaves generation a core short. Several rollout replicas
share the rollout cores round-robin. A variable already set in the launcher's own
environment wins (see specs.py).

    plan_cores([0, 1], mode="split", max_staleness=1).rollout_env(0)
    == {"VLLM_CPU_OMP_THREADS_BIND": "0", "OMP_NUM_THREADS": "1"}
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshrl.config.schema import RunConfig

MODES = ("auto", "shared", "split")


@dataclass(frozen=True)
class CorePlan:
    mode: str  # "shared" or "split": what `auto` resolved to
    rollout: tuple[int, ...]
    trainer: tuple[int, ...]  # the learner's and the reference's

    def rollout_env(self, replica: int = 0, replicas: int = 1, tensor_parallel: int = 1) -> dict[str, str]:
        """A replica's binding; with tensor parallelism its cores in one `|`-separated group per
        worker (vLLM's CPU workers each bind one group; its automatic binding needs one NUMA
        node per worker and refuses TP=2 on a single-node host)."""
        groups = worker_groups(replica_cores(self.rollout, replica, replicas), tensor_parallel)
        return {
            "VLLM_CPU_OMP_THREADS_BIND": "|".join(",".join(map(str, g)) for g in groups),
            "OMP_NUM_THREADS": str(len(groups[0])),
        }

    def trainer_env(self) -> dict[str, str]:
        env = {"OMP_NUM_THREADS": str(len(self.trainer))}
        if self.mode == "split":  # pinned only when another process owns the other cores
            env["GOMP_CPU_AFFINITY"] = " ".join(map(str, self.trainer))
        return env


def worker_groups(cores: tuple[int, ...], workers: int) -> list[tuple[int, ...]]:
    """`cores` split into `workers` groups (every n-th core from i); with fewer cores than
    workers, workers share them round-robin."""
    if workers <= len(cores):
        return [cores[i::workers] for i in range(workers)]
    return [(cores[i % len(cores)],) for i in range(workers)]


def replica_cores(cores: tuple[int, ...], replica: int, replicas: int) -> tuple[int, ...]:
    """Replica i of n: every n-th core from i when there are enough, else all of them."""
    if replicas <= 1 or replicas > len(cores):
        return cores
    return cores[replica % replicas :: replicas]


def usable_cores() -> list[int]:
    """The cores this process may run on (a container's cpuset, taskset), sorted."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def core_split_problem(
    cores: list[int], *, mode: str = "auto", rollout_cores: int | None = None, tensor_parallel: int = 1
) -> str | None:
    """Why `cores` cannot be planned this way (one line naming the key and the fix), or None."""
    if mode not in MODES:
        return f"launch.cores={mode!r}; choose one of {', '.join(MODES)}"
    if not cores:
        return "no CPU core is usable by this process; check its affinity (taskset)"
    if mode != "split":
        return None
    if len(cores) < 2:
        return f"launch.cores=split needs at least 2 cores, this process may use {cores}; use launch.cores=shared"
    share = rollout_share(len(cores), rollout_cores)
    if share >= len(cores):
        return (
            f"launch.rollout_cores={rollout_cores} leaves the learner no core of the {len(cores)} this process "
            f"may use ({cores}); give rollout at most {len(cores) - 1}"
        )
    if tensor_parallel > share:
        return (
            f"rollout.tensor_parallel_size={tensor_parallel} needs a core per worker, launch.cores=split gives "
            f"rollout {share} of {len(cores)}; raise launch.rollout_cores or use launch.cores=shared"
        )
    return None


def core_problems(cfg: RunConfig) -> list[str]:
    """The run's core split against the cores this process may use (known only on this host)."""
    launch = cfg.launch
    problem = core_split_problem(
        usable_cores(),
        mode=launch.cores,
        rollout_cores=launch.rollout_cores,
        tensor_parallel=cfg.rollout.tensor_parallel_size,
    )
    return [problem] if problem else []


def rollout_share(usable: int, rollout_cores: int | None) -> int:
    """How many of `usable` cores the rollout gets under `split`: `rollout_cores`, else half."""
    return rollout_cores if rollout_cores is not None else usable // 2


def plan_cores(
    cores: list[int], *, mode: str = "auto", max_staleness: int = 0, rollout_cores: int | None = None
) -> CorePlan:
    """The plan for `cores` (see the module docstring); ValueError names a bad setting."""
    if problem := core_split_problem(cores, mode=mode, rollout_cores=rollout_cores):
        raise ValueError(problem)
    if mode == "auto":
        mode = "shared"  # the faster on a small host, asynchronous runs included (see above)
    everything = tuple(cores)
    if mode == "shared":
        return CorePlan("shared", everything, everything)
    share = rollout_share(len(cores), rollout_cores)
    return CorePlan("split", everything[:share], everything[share:])
