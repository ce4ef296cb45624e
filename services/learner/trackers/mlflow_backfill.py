"""The steps of RUN_DIR/metrics.jsonl that the run's MLflow run lacks, sent to it.

A learner killed outright (SIGKILL, the machine gone) cannot write its waiting rows to
mlflow-unsent.jsonl, but metrics.jsonl has every step (it is written before any tracker is
called). `meshrl trackers flush` therefore ends with this: each step whose first number is not
in the MLflow run's history of that key is sent as the learner would have sent it (the same
keys, the step's own time), so after a flush the MLflow run has every step metrics.jsonl has.
A resumed learner does the same for the steps before the one it trains first (mlflow_tracker.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from mlflow.tracking import MlflowClient

from meshrl.run_layout import RunDir
from meshrl.services.learner.metric_logger import finite_numbers
from meshrl.services.learner.trackers import mlflow_unsent
from meshrl.services.learner.trackers.background import Job
from meshrl.services.learner.trackers.mlflow_unsent import mlflow_key


def step_rows(metrics_file: Path) -> dict[int, dict]:
    """step -> the row's numbers as MLflow keys, with its time; a step logged again (after a
    resume from an earlier checkpoint) keeps its last row, as the learner's last log of it."""
    rows: dict[int, dict] = {}
    if not metrics_file.is_file():
        return rows
    for line in metrics_file.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        step, when = row.pop("step", None), row.pop("time", 0.0)
        values = {mlflow_key(k): float(v) for k, v in finite_numbers(row).items()}
        if isinstance(step, int) and values:
            rows[step] = {"step": step, "time_ms": int(float(when) * 1000), "values": values}
    return rows


def backfill(run_dir: Path, client: MlflowClient, mlflow_run_id: str, before: int | None = None) -> int:
    """Send the steps MLflow lacks (only those below `before`, when given); how many were sent."""
    logged: dict[str, set[int]] = {}
    sent = 0
    for step, payload in sorted(step_rows(RunDir(run_dir).metrics).items()):
        if before is not None and step >= before:
            break
        first = next(iter(payload["values"]))
        if first not in logged:
            logged[first] = {m.step for m in client.get_metric_history(mlflow_run_id, first)}
        if step not in logged[first]:
            mlflow_unsent.send(client, mlflow_run_id, Job("metrics", payload))
            sent += 1
    return sent
