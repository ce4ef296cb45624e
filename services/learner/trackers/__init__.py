"""Experiment trackers beside metrics.jsonl: `telemetry.trackers: [tensorboard, mlflow, wandb]`.

Each is a MetricLogger (services/learner/metric_logger.py): `log(step, metrics)`,
`log_final_model(path)`, `close()`. `start_trackers` starts the configured ones at learner
start-up, so a tracker that cannot start stops the run there with one clear line, never
mid-run. See meshrl/config/trackers.py for the settings and docs/trackers.md for the guide.

MLflow and W&B are optional extras whose clients cost seconds to import: each tracker's
module imports its package at the top, and `tracker_class` imports that module only when the
config names it (`OPTIONAL`), so a missing package is a one-line ConfigError naming the extra.
"""

from __future__ import annotations

import importlib

from meshrl.config import ConfigError, RunConfig
from meshrl.run_layout import RunDir
from meshrl.services.learner.metric_logger import MetricLogger, TensorBoardLogger

# tracker name -> (its module, its class, the package it needs): imported only when named
OPTIONAL = {
    "mlflow": ("meshrl.services.learner.trackers.mlflow_tracker", "MlflowTracker", "mlflow"),
    "wandb": ("meshrl.services.learner.trackers.wandb_tracker", "WandbTracker", "wandb"),
}


class TrackerUnavailable(ConnectionError):
    """A tracker that cannot start: the learner stops at start-up with this one line (a
    ConnectionError, so the service runner reports it as a start-up failure, exit 2), instead
    of failing mid-run."""


def missing_package(tracker: str, package: str) -> str:
    return (
        f"telemetry.trackers names {tracker}, but the {package} package is not installed: "
        f"pip install 'meshrl[trackers]' (or remove {tracker} from telemetry.trackers)"
    )


def tracker_class(name: str) -> type:
    """The class of an optional tracker, its module (and package) imported now."""
    module, cls, package = OPTIONAL[name]
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as err:
        if (err.name or "").startswith("meshrl."):
            raise  # our own code is broken, not the extra missing
        raise ConfigError(missing_package(name, package)) from None


def start_tracker(name: str, cfg: RunConfig, run_id: str) -> MetricLogger:
    if name == "tensorboard":
        return TensorBoardLogger(RunDir(cfg.run.dir).tensorboard)
    return tracker_class(name)(cfg, run_id)


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
