"""`MlflowTracker`: the run in MLflow, through MLflow's own client (`MlflowClient`).

Where: `telemetry.mlflow.tracking_uri`, or a local store in the run dir
(sqlite:///RUN_DIR/mlflow.db, artifacts in RUN_DIR/mlartifacts; MLflow 3 keeps its file store
in maintenance mode, so sqlite). What: the resolved config as params plus `config.yaml`, every
step's finite numbers as metrics at that step (eval/* included), the new samples.jsonl rows
appended to the `samples.json` table, and the final model's path as tag `meshrl.final_model`.
A resumed learner continues the MLflow run tagged with the same meshrl run id.

Start-up asks the server for the experiment: no answer within `timeout_s` is a start-up error
naming the URI. Afterwards every call goes through a BackgroundSender: a server that goes
down costs the run nothing (rows wait and are retried). Rows it has not taken when the learner
stops stay in the run dir (mlflow_unsent.py) and are sent by the next start of the run or by
`meshrl trackers flush RUN_DIR`, which also ends the MLflow run (FINISHED, or KILLED when
the run stopped before its final model).
Credentials: MLFLOW_TRACKING_TOKEN or _USERNAME/_PASSWORD in the environment, read by MLflow.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path

import yaml
from mlflow.entities import Param
from mlflow.tracking import MlflowClient

from meshrl.config import RunConfig
from meshrl.run_layout import RunDir
from meshrl.services.learner.metric_logger import finite_numbers
from meshrl.services.learner.trackers import TrackerUnavailable, mlflow_backfill, mlflow_unsent
from meshrl.services.learner.trackers.background import BackgroundSender, Job
from meshrl.services.learner.trackers.mlflow_unsent import mlflow_key
from meshrl.services.learner.trackers.samples_tail import SamplesTail, as_table

log = logging.getLogger("meshrl.learner.trackers")
RUN_ID_TAG = "meshrl.run_id"
FINAL_MODEL_TAG = "meshrl.final_model"


def flat_config(tree: dict, prefix: str = "") -> dict[str, str]:
    """The resolved run config as flat `section.key` -> text pairs: the run's MLflow params
    (the W&B config keeps the nested form)."""
    flat: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flat_config(value, f"{name}."))
        else:
            flat[name] = value if isinstance(value, str) else json.dumps(value)
    return flat


def local_store(run_dir: Path) -> str:
    return f"sqlite:///{run_dir.resolve() / 'mlflow.db'}"


class MlflowTracker:
    def __init__(self, cfg: RunConfig, run_id: str):
        settings, run_dir = cfg.telemetry.mlflow, Path(cfg.run.dir)
        self.uri = settings.tracking_uri or local_store(run_dir)
        # MLflow's own retries would hold a call for minutes; the BackgroundSender retries instead.
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(math.ceil(settings.timeout_s)))
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
        self.client = MlflowClient(tracking_uri=self.uri)
        self.run_id = self._start_run(cfg, run_id, run_dir)
        self.samples = SamplesTail(RunDir(run_dir).samples)
        self.final_logged = False
        self.run_dir, self.caught_up = run_dir, False
        self.sender = BackgroundSender(
            self._send,
            name=f"MLflow at {self.uri}",
            retry_every_s=settings.retry_every_s,
            max_pending=settings.max_pending,
            unsent_path=mlflow_unsent.unsent_path(run_dir),
        )
        self.timeout_s = settings.timeout_s
        self._resend_earlier_rows(run_dir)

    def _resend_earlier_rows(self, run_dir: Path) -> None:
        """Rows an earlier learner of this run could not send go first (its end left out: the run
        goes on); rows kept for another MLflow run stay for `meshrl trackers flush`."""
        remembered = mlflow_unsent.remembered_run(run_dir)
        if remembered not in (None, (self.uri, self.run_id)) and mlflow_unsent.load_unsent(run_dir):
            aside = mlflow_unsent.set_aside(run_dir, *remembered)
            log.warning("MLflow: rows for run %s at %s (not this one) moved to %s", remembered[1], remembered[0], aside)
        earlier = [job for job in mlflow_unsent.load_unsent(run_dir) if job.kind != "end"]
        mlflow_unsent.save_unsent(run_dir, [])
        mlflow_unsent.remember_run(run_dir, self.uri, self.run_id)  # RUNNING until close() sends the end
        if earlier:
            log.info("MLflow: sending %d rows an earlier learner of this run could not send", len(earlier))
        for job in earlier:
            self.sender.submit(job)

    def _start_run(self, cfg: RunConfig, run_id: str, run_dir: Path) -> str:
        """The MLflow run for this meshrl run (found by tag on a resume, else new), config logged."""
        name = cfg.telemetry.mlflow.experiment or cfg.run.name
        try:
            experiment = self.client.get_experiment_by_name(name)
            experiment_id = (
                experiment.experiment_id
                if experiment
                else self.client.create_experiment(
                    name,
                    artifact_location=None
                    if cfg.telemetry.mlflow.tracking_uri
                    else (run_dir.resolve() / "mlartifacts").as_uri(),
                )
            )
            earlier = self.client.search_runs([experiment_id], f"tags.`{RUN_ID_TAG}` = '{run_id}'", max_results=1)
            if earlier:
                log.info("MLflow: continuing run %s of %s", earlier[0].info.run_id, self.uri)
                self.client.update_run(earlier[0].info.run_id, status="RUNNING")  # ended by the last learner
                return earlier[0].info.run_id
            run = self.client.create_run(experiment_id, run_name=run_id, tags={RUN_ID_TAG: run_id})
            self._log_config(run.info.run_id, cfg)
        except Exception as err:  # MLflow raises its own and requests' errors: all mean "cannot start"
            raise TrackerUnavailable(
                f"telemetry.trackers names mlflow, but the tracking store {self.uri} did not work "
                f"({type(err).__name__}: {str(err)[:300]}): start the server, fix "
                f"telemetry.mlflow.tracking_uri, or remove mlflow from telemetry.trackers"
            ) from None
        log.info("MLflow: run %s in experiment %r at %s", run.info.run_id, name, self.uri)
        return run.info.run_id

    def _log_config(self, mlflow_run_id: str, cfg: RunConfig) -> None:
        tree = cfg.model_dump(mode="json")
        params = [Param(k, v[:6000]) for k, v in flat_config(tree).items()]
        self.client.log_batch(mlflow_run_id, params=params)
        self.client.log_text(mlflow_run_id, yaml.safe_dump(tree, sort_keys=False), "config.yaml")

    def _send(self, job: Job) -> None:
        if job.kind == "catch_up":
            self._catch_up(job.payload["before"])
            return
        mlflow_unsent.send(self.client, self.run_id, job)
        if job.kind == "end":
            mlflow_unsent.mark_ended(self.run_dir, job.payload["status"])

    def _catch_up(self, before: int) -> None:
        """The steps before `before` that metrics.jsonl has and the MLflow run lacks: a learner
        killed outright (SIGKILL) never sent its last rows, and nobody else will."""
        sent = mlflow_backfill.backfill(self.run_dir, self.client, self.run_id, before=before)
        if sent:
            log.info(
                "MLflow: sent %d earlier steps only metrics.jsonl had (a learner stopped before sending them)", sent
            )

    def log(self, step: int, metrics: dict[str, float]) -> None:
        if not self.caught_up:  # the first step of this learner: metrics.jsonl below it is final
            self.sender.submit(Job("catch_up", {"before": step}))
            self.caught_up = True
        values = {mlflow_key(k): float(v) for k, v in finite_numbers(metrics).items()}
        self.sender.submit(Job("metrics", {"step": step, "time_ms": int(time.time() * 1000), "values": values}))
        rows = self.samples.new_rows()
        if rows:
            columns, data = as_table(rows)
            self.sender.submit(Job("samples", {"columns": columns, "data": data}))

    def log_final_model(self, path: Path) -> None:
        self.sender.submit(Job("tag", {"key": FINAL_MODEL_TAG, "value": str(Path(path).resolve())}))
        self.final_logged = True

    def close(self) -> None:
        self.sender.submit(Job("end", {"status": "FINISHED" if self.final_logged else "KILLED"}))
        self.sender.close(self.timeout_s)
