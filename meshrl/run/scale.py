"""What `meshrl scale` asks of a running local launcher: `RUN_DIR/scale.json`.

    {"rollout": 3, "reward": 2}          # wanted replicas per service; absent = unchanged

The CLI checks and merges the counts and replaces the file atomically; the launcher looks at
its modification time on every tick (twice a second) and reconciles (`scaler.py`). A file,
not the run KV: the launcher's loop is synchronous and must keep working while NATS
restarts, and only a process on this machine can start local replicas anyway.

The kinds meshrl/topology.py marks scalable scale: rollout, reward, reference, reward_model
(a run's learned reward model, when the launcher started it) and environment (`env` for short;
a built-in environment the launcher started); the learner's torchrun ranks are fixed for a run
(`learner.ranks`).
"""

from __future__ import annotations

import json
from pathlib import Path

from meshrl import run_layout as layout
from meshrl import topology
from meshrl.config.values import MAX_REPLICAS
from meshrl.errors import LaunchError
from meshrl.run.presence import write_atomically

REQUEST_FILE = layout.SCALE
SCALABLE = topology.scalable()
ALIASES = {"env": "environment"}


def parse_counts(pairs: list[str]) -> dict[str, int]:
    """["rollout=3", "reward=2"] → {"rollout": 3, "reward": 2}; LaunchError naming the bad one."""
    if not pairs:
        raise LaunchError(f"say what to scale, e.g. `rollout=2`; scalable: {', '.join(SCALABLE)}")
    counts: dict[str, int] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise LaunchError(f"{pair!r}: expected SERVICE=COUNT, e.g. rollout=2")
        counts[check_service(name)] = check_count(name, value)
    return counts


def check_service(name: str) -> str:
    name = ALIASES.get(name, name)
    if name == "learner":
        raise LaunchError(
            "the learner does not scale with `meshrl scale`: its torchrun ranks are "
            "set per run (learner.ranks in the run config); "
            f"scalable: {', '.join(SCALABLE)}"
        )
    if name not in SCALABLE:
        what = f"{name!r} does not scale" if name in topology.KINDS else f"unknown service {name!r}"
        raise LaunchError(f"{what}; scalable: {', '.join(SCALABLE)}")
    return name


def check_count(name: str, value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        raise LaunchError(f"{name}={value!r}: the count must be a whole number") from None
    if not 1 <= count <= MAX_REPLICAS:
        raise LaunchError(
            f"{name}={count}: allowed 1..{MAX_REPLICAS} (a running run needs at least "
            f"one {name}; stop the run to have none)"
        )
    return count


def read_request(run_dir: Path) -> dict[str, int]:
    """The wanted counts in RUN_DIR/scale.json ({} when there is none or it is unreadable)."""
    try:
        data = json.loads((Path(run_dir) / REQUEST_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if k in SCALABLE and isinstance(v, int) and v >= 1}


def write_request(run_dir: Path, counts: dict[str, int]) -> dict[str, int]:
    """Merge `counts` into the standing request and write it; returns the whole request."""
    merged = {**read_request(run_dir), **counts}
    write_atomically(Path(run_dir) / REQUEST_FILE, json.dumps(merged, sort_keys=True) + "\n")
    return merged
