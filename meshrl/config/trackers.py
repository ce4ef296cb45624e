"""Experiment trackers the learner's step metrics also go to: `telemetry.trackers`.

    telemetry:
      trackers: [tensorboard, mlflow, wandb]
      mlflow: {tracking_uri: http://127.0.0.1:5000, experiment: math-grpo}
      wandb: {project: meshrl, mode: offline}

metrics.jsonl is always written; each tracker named here gets the resolved config, every
step's metrics (the held-out eval's `eval/*` among them), the samples.jsonl rows as tables,
and the final model's path. Credentials never come from here: MLflow reads
MLFLOW_TRACKING_TOKEN / MLFLOW_TRACKING_USERNAME+PASSWORD and W&B reads WANDB_API_KEY from
the learner's environment, so a tracking URI that carries a password, or a query-string
parameter named like a credential (`?token=`, `?api_key=`, `?sig=`...), is refused; the
message names the parameter, never its value (the URI is printed by --dry-run, saved in
RUN_DIR/config.yaml and sent to every service).
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import parse_qsl, urlsplit

from pydantic import Field, field_validator

from meshrl.config.algorithm import Strict
from meshrl.config.values import check_url_port
from meshrl.errors import ConfigError

TRACKERS = ("tensorboard", "mlflow", "wandb")
SECRET_PARAM = re.compile(r"token|key|secret|pass|pwd|auth|sig|credential|session", re.IGNORECASE)
TrackerName = Literal["tensorboard", "mlflow", "wandb"]


class MlflowConfig(Strict):
    """None = a local store in the run dir (sqlite:///RUN_DIR/mlflow.db, artifacts in
    RUN_DIR/mlartifacts); else a tracking server's http(s) URI or a database URI."""

    tracking_uri: str | None = None
    experiment: str | None = None  # None: run.name
    # One request's limit, and how long the learner waits at start-up for the server to answer.
    timeout_s: float = Field(10.0, gt=0.0)
    # While the server is down, rows wait in memory (bounded) and are retried this often.
    retry_every_s: float = Field(15.0, gt=0.0)
    max_pending: int = Field(10_000, ge=1)

    @field_validator("tracking_uri")
    @classmethod
    def _no_password_in_uri(cls, value: str | None) -> str | None:
        check_no_secret_params("telemetry.mlflow.tracking_uri", value)
        check_url_port("telemetry.mlflow.tracking_uri", value)
        if value is not None and urlsplit(value).password is not None:
            raise ConfigError(
                "telemetry.mlflow.tracking_uri carries a password: remove it and set "
                "MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD (or "
                "MLFLOW_TRACKING_TOKEN) in the learner's environment"
            )
        return value


def check_no_secret_params(key: str, value: str | None) -> None:
    """ConfigError naming the query-string parameter of `value` that looks like a credential."""
    try:
        query = urlsplit(value).query if value and "://" in value else ""
    except ValueError:  # a malformed URL: the port check names it
        return
    names = [name for name, _ in parse_qsl(query, keep_blank_values=True) if SECRET_PARAM.search(name)]
    if names:
        raise ConfigError(
            f"{key} carries {names[0][:32]!r} in its query string: credentials never go in a URI (it is "
            "printed and saved); set MLFLOW_TRACKING_TOKEN (or MLFLOW_TRACKING_USERNAME / "
            "MLFLOW_TRACKING_PASSWORD) in the learner's environment"
        )


class WandbConfig(Strict):
    """W&B's own client. offline (the default): the run is written under RUN_DIR/wandb and
    `wandb sync RUN_DIR/wandb/offline-run-*` uploads it later; online needs WANDB_API_KEY."""

    project: str = "meshrl"
    entity: str | None = None
    mode: Literal["offline", "online"] = "offline"
    name: str | None = None  # None: run.name
    timeout_s: float = Field(60.0, gt=0.0)  # how long wandb.init may take before start-up fails
