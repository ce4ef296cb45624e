"""The MLflow rows a run could not send, kept in the run dir and sent later.

`RUN_DIR/trackers/mlflow-run.json` names the tracking URI and the MLflow run of this meshrl
run (written when the learner starts it); `RUN_DIR/trackers/mlflow-unsent.jsonl` holds the
jobs the server did not take (rows dropped from a full queue, and whatever was still waiting
when the learner stopped, its run's end included). They are sent by the next start of the
same run (less the end: the run goes on) or by `meshrl trackers flush RUN_DIR`, which also
ends the MLflow run with the status the learner meant to give it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict
from pathlib import Path

from mlflow.entities import Metric, RunStatus
from mlflow.tracking import MlflowClient

from meshrl.errors import LaunchError
from meshrl.run_layout import RunDir
from meshrl.services.learner.trackers.background import Job

_NOT_A_NAME = re.compile(r"[^/\w.\- :]")


def mlflow_key(key: str) -> str:
    """A metrics.jsonl key MLflow accepts (alphanumerics, _ - . space : /)."""
    return _NOT_A_NAME.sub("_", key)


def unsent_path(run_dir: Path) -> Path:
    return RunDir(run_dir).mlflow_unsent


def run_file(run_dir: Path) -> Path:
    return RunDir(run_dir).mlflow_run


def remember_run(run_dir: Path, tracking_uri: str, mlflow_run_id: str, ended: str | None = None) -> None:
    """Which MLflow run the unsent rows belong to (the URI holds no password: the config refuses
    one), and `ended`: the status the run was ended with, None while a learner has it RUNNING
    (so `meshrl status` can tell a run a killed learner left RUNNING without asking MLflow)."""
    path = run_file(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"tracking_uri": tracking_uri, "run_id": mlflow_run_id, "ended": ended}
    path.write_text(json.dumps(record) + "\n")


def mark_ended(run_dir: Path, status: str) -> None:
    """Record that RUN_DIR's MLflow run was ended with `status` (FINISHED, KILLED, FAILED)."""
    where = remembered_run(run_dir)
    if where is not None:
        remember_run(run_dir, *where, ended=status)


def remembered_run(run_dir: Path) -> tuple[str, str] | None:
    path = run_file(run_dir)
    if not path.is_file():
        return None
    saved = json.loads(path.read_text())
    return saved["tracking_uri"], saved["run_id"]


def load_unsent(run_dir: Path) -> list[Job]:
    path = unsent_path(run_dir)
    if not path.is_file():
        return []
    return [Job(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def save_unsent(run_dir: Path, jobs: list[Job]) -> None:
    """Replace the file with `jobs` (removed when none are left)."""
    path = unsent_path(run_dir)
    if not jobs:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(asdict(job)) + "\n" for job in jobs))
    tmp.replace(path)


def set_aside(run_dir: Path, tracking_uri: str, mlflow_run_id: str) -> Path:
    """Rows kept for another MLflow run (the tracking URI changed between starts): moved to a
    file of their own, its first line naming their run, so none is sent to the wrong one."""
    aside = unsent_path(run_dir).with_name(f"mlflow-unsent-{mlflow_run_id}.jsonl")
    header = json.dumps({"tracking_uri": tracking_uri, "run_id": mlflow_run_id})
    aside.write_text(header + "\n" + unsent_path(run_dir).read_text())
    unsent_path(run_dir).unlink()
    return aside


def send(client: MlflowClient, mlflow_run_id: str, job: Job) -> None:
    """One job to the MLflow run: a step's metrics, the samples table, a tag, or the run's end."""
    if job.kind == "metrics":
        now, step = job.payload["time_ms"], job.payload["step"]
        metrics = [Metric(k, v, now, step) for k, v in job.payload["values"].items()]
        client.log_batch(mlflow_run_id, metrics=metrics)
    elif job.kind == "samples":
        columns, data = job.payload["columns"], job.payload["data"]
        table = {c: [row[i] for row in data] for i, c in enumerate(columns)}
        client.log_table(mlflow_run_id, table, artifact_file="samples.json")
    elif job.kind == "tag":
        client.set_tag(mlflow_run_id, job.payload["key"], job.payload["value"])
    elif job.kind == "end":
        client.set_terminated(mlflow_run_id, RunStatus.to_string(getattr(RunStatus, job.payload["status"])))
    # "catch_up" (mlflow_tracker.py) needs no sending here: a flush ends with mlflow_backfill


def client_for(run_dir: Path) -> tuple[MlflowClient, str, str] | None:
    """(a client, the tracking URI, the MLflow run) of RUN_DIR's MLflow run; None without one."""
    where = remembered_run(run_dir)
    if where is None:
        return None
    # one try each: MLflow's own retries would hold a down server's answer for minutes
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    return MlflowClient(tracking_uri=where[0]), *where


def flush(run_dir: Path) -> int:
    """Send RUN_DIR's unsent jobs in order; how many were sent. A server that fails keeps the
    rest in the file and raises one line saying so."""
    jobs, found = load_unsent(run_dir), client_for(run_dir)
    if not jobs:
        return 0
    if found is None:
        raise LaunchError(
            f"{unsent_path(run_dir)} has rows but {run_file(run_dir)} is missing: no MLflow run to send them to"
        )
    client, uri, mlflow_run_id = found
    for sent, job in enumerate(jobs):
        try:
            send(client, mlflow_run_id, job)
        except Exception as err:  # MLflow raises its own and requests' errors: all mean "not taken"
            save_unsent(run_dir, jobs[sent:])
            raise LaunchError(
                f"MLflow at {uri} did not take row {sent + 1} of {len(jobs)} ({type(err).__name__}: "
                f"{str(err)[:200]}): {len(jobs) - sent} rows stay in {unsent_path(run_dir)}; "
                f"start the server and run `meshrl trackers flush {run_dir}` again"
            ) from None
    save_unsent(run_dir, [])
    ends = [job.payload["status"] for job in jobs if job.kind == "end"]
    if ends:
        mark_ended(run_dir, ends[-1])
    return len(jobs)
