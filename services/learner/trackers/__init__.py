"""Experiment trackers beside metrics.jsonl: `telemetry.trackers: [tensorboard, mlflow, wandb]`.

Each is a MetricLogger (services/learner/metric_logger.py): `log(step, metrics)`,
`log_final_model(path)`, `close()`. `start_trackers` starts the configured ones at learner
start-up, so a tracker that cannot start stops the run there with one clear line, never
mid-run. See meshrl/config/trackers.py for the settings and docs/trackers.md for the guide.
"""

from __future__ import annotations

from meshrl.config import RunConfig
from meshrl.services.learner.metric_logger import MetricLogger, TensorBoardLogger
from meshrl.run.layout import RunDir


def start_tracker(name: str, cfg: RunConfig, run_id: str) -> MetricLogger:
    if name == "tensorboard":
        return TensorBoardLogger(RunDir(cfg.run.dir).tensorboard)
    if name == "mlflow":
        from meshrl.services.learner.trackers.mlflow_tracker import (
            MlflowTracker,
        )  # lazy: mlflow's client costs seconds to import

        return MlflowTracker(cfg, run_id)
    from meshrl.services.learner.trackers.wandb_tracker import WandbTracker  # lazy: as above

    return WandbTracker(cfg, run_id)


def start_trackers(cfg: RunConfig, run_id: str) -> list[MetricLogger]:
    """The configured trackers, started in order; if one fails, those already started are closed."""
    started: list[MetricLogger] = []
    try:
        for name in cfg.telemetry.tracker_names:
            started.append(start_tracker(name, cfg, run_id))
    except BaseException:
        for tracker in started:
            tracker.close()
        raise
    return started
