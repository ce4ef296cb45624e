"""The status of a run no launcher runs (finished, stopped, failed), read from its run dir:
the steps it trained, of how many, and the policy version its last step pushed. Without it
the dashboard of a finished run would read "step 3 / - · policy v-".

    ended_status(Path("runs/grpo-0412"))   # GetRunStatusResponse, learner state "ENDED"

Simplification: only metrics.jsonl's last line and config.yaml are read (the status is
polled every 2 s); `meshrl status RUN_DIR` prints the full summary.
"""

from __future__ import annotations

import json
from pathlib import Path

from meshrl.api.gateway.v1 import gateway_pb2 as pb
from meshrl.gateway.runs import last_line
from meshrl.run_layout import RunDir
from meshrl.run.summary import total_steps


def last_metrics_row(run: RunDir) -> dict:
    """metrics.jsonl's last row; {} when there is none (or its last line is cut mid-write)."""
    if not run.metrics.is_file():
        return {}
    try:
        row = json.loads(last_line(run.metrics) or "{}")
    except ValueError:
        return {}
    return row if isinstance(row, dict) else {}


def ended_status(path: Path) -> pb.GetRunStatusResponse:
    """Steps trained (the last step's index + 1, as the live learner counts them), the total
    the config asked for and the policy version of the last step (its `weights_version`)."""
    run = RunDir(path)
    last = last_metrics_row(run)
    learner = pb.Learner(state="ENDED", total_steps=total_steps(run) or 0)
    if isinstance(last.get("step"), int):
        learner.step = last["step"] + 1
    if isinstance(version := last.get("weights_version"), (int, float)):
        learner.policy_version = int(version)
    return pb.GetRunStatusResponse(learner=learner)
