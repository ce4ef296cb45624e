"""A local run's last phase: keep every service alive until the learner finishes; the result.

    result = keep_training(procs, run, url, commands, progress=True, grace_s=15.0)
    print(result.summary())   # steps, last reward and KL, where a step's time went

Meanwhile it shows a progress bar from RUN_DIR/metrics.jsonl, restarts any service that dies
with back-off within `launch.restart_budget` (the learner with `--resume RUN_DIR`: it continues
from its newest good checkpoint; restarts.py reports each one), keeps as many replicas as
`meshrl scale RUN_DIR rollout=N ...` last asked for (scaler.py; RUN_DIR/launcher.json says a
launcher runs), and notes the shared memory the processes map (processes.py).
Raises ServiceGaveUp (a RunFailed) when a service will not be restarted.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from meshrl.launch.outcome import stop_reason
from meshrl.launch.processes import RunProcesses
from meshrl.launch.progress import RunProgress, time_split
from meshrl.launch.restarts import Keeper, RestartPolicy, restart_reports
from meshrl.launch.run_dir import LocalRun
from meshrl.launch.scaler import scaling
from meshrl.launch.specs import ServiceCommands, with_resume
from meshrl.run.presence import LauncherInfo
from meshrl.run_layout import RunDir

LEARNER = "learner-0"  # the child whose exit 0 ends the run


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    steps: int
    last_metrics: dict
    time_split: str = ""  # where a step's time went (progress.time_split)
    total: int = 0  # learner.steps
    failure: str = ""  # why the learner stopped short (outcome.stop_reason); "" = it finished

    def summary(self) -> str:
        if self.failure:
            return (
                f"run {self.run_id} FAILED after {self.steps} of {self.total} steps: {self.failure}; "
                f"fix that, then `meshrl train --resume {self.run_dir}`"
            )
        shown = ", ".join(
            f"{k}={self.last_metrics[k]:.4g}"
            for k in ("reward", "kl")
            if isinstance(self.last_metrics.get(k), (int, float))
        )
        done = f"run {self.run_id} done: {self.steps} steps{', ' + shown if shown else ''}; see {self.run_dir}"
        return done + (f"\n{self.time_split}" if self.time_split else "")


def keep_training(
    procs: RunProcesses, run: LocalRun, url: str, commands: ServiceCommands, *, progress: bool, grace_s: float
) -> RunResult:
    """Until the learner exits 0: restart dead services, follow `meshrl scale`, show progress."""
    presence = LauncherInfo(os.getpid(), run.id, url, f"127.0.0.1:{run.cfg.learner.grpc_port}")
    started = time.time()
    bar = RunProgress(RunDir(run.dir).metrics, run.cfg.learner.steps, desc=run.id, enabled=progress)
    try:
        with (
            scaling(
                procs.sup, run.dir, presence, command_for=commands.of_replica, on_left=procs.free_left, grace_s=grace_s
            ) as scaler,
            restart_reports(run.cfg, run.dir, run.id, url, started=procs.sup.children) as reporter,
        ):
            keeper = Keeper(
                procs.sup,
                RestartPolicy.from_config(run.cfg.launch),
                reporter,
                run_dir=run.dir,
                run_id=run.id,
                argv_for_restart=lambda key, argv: with_resume(argv, run.dir) if key == LEARNER else argv,
                on_restarted=procs.free_left,
            )
            keeper.wait_for(LEARNER, on_tick=lambda: (bar.update(), procs.scan_now_and_then(), scaler.tick()))
    finally:
        bar.close()
    total = run.cfg.learner.steps
    why = stop_reason(RunDir(run.dir), steps_done=bar.steps_done, total=total, since=started)
    return RunResult(run.id, run.dir, bar.steps_done, bar.last, time_split(bar.rows), total, why)
