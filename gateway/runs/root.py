"""The runs root: each subdirectory holding a run (its config.yaml) is a run, named by its
directory name. Names are one path component, so a request can never reach outside the root.

    root = RunsRoot(Path("runs"))
    root.path("grpo-0412")     # runs/grpo-0412, or GatewayError NOT_FOUND / INVALID_ARGUMENT
    root.summaries()           # [RunSummary(name=..., live=..., last_step=...)]
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from meshrl import run_layout as layout
from meshrl.api.gateway.v1 import gateway_pb2
from meshrl.errors import LaunchError
from meshrl.gateway.errors import invalid, not_found
from meshrl.gateway.runs.status import last_metrics_row
from meshrl.run.presence import LauncherInfo, find_launcher, launcher_problem
from meshrl.run_layout import RunDir

log = logging.getLogger("meshrl.gateway")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# logs/: a start that failed sets its config and metrics aside there (meshrl/launch/failed_start.py)
RUN_MARKERS = (layout.CONFIG, layout.METRICS, layout.PRESENCE, layout.LOGS)


def check_name(name: str) -> str:
    if not NAME.fullmatch(name or ""):
        raise invalid(
            f"run name {name!r} is not a run dir name: letters, digits, '.', '_', '-', starting with a letter or digit"
        )
    return name


class RunsRoot:
    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise ValueError(f"runs root {root} is not a directory; pass --runs-root DIR holding run dirs")

    def path(self, name: str) -> Path:
        path = self.root / check_name(name)
        if not any((path / m).exists() for m in RUN_MARKERS):
            raise not_found(f"no run {name!r} under {self.root}; list them with ListRuns (GET /api/runs)")
        return path

    def launcher(self, name: str) -> LauncherInfo | None:
        """The run's live launcher, only if the kernel confirms what launcher.json says (its pid
        holds the run's launch lock, its NATS and learner ports are its own processes'): the
        file is the run's to rewrite, and the gateway sends the run's credentials, and its
        signals, where it points. Otherwise the run counts as not live (a warning says why)."""
        try:
            info = find_launcher(self.path(name))
        except LaunchError:
            return None
        problem = launcher_problem(info.pid, info.nats_url, info.learner_grpc, self.path(name))
        if problem is not None:
            log.warning("run %s: launcher.json is not trusted (%s); treating the run as not live", name, problem)
            return None
        return info

    def names(self) -> list[str]:
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and NAME.fullmatch(p.name) and any((p / m).exists() for m in RUN_MARKERS)
        )

    def summary(self, name: str) -> gateway_pb2.RunSummary:
        path, launcher = self.path(name), self.launcher(name)
        out = gateway_pb2.RunSummary(name=name, live=launcher is not None, run_id=launcher.run_id if launcher else "")
        run = RunDir(path)
        if run.metrics.is_file():
            out.updated_unix = run.metrics.stat().st_mtime
            try:
                out.last_step = int(last_metrics_row(run).get("step", 0))
            except (ValueError, TypeError, OverflowError):
                pass  # a step that is no number: the summary shows none
        return out

    def summaries(self) -> list[gateway_pb2.RunSummary]:
        return [self.summary(name) for name in self.names()]
