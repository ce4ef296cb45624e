"""The run directory's layout: every file and folder a run keeps, named here once.

    run = RunDir(cfg.run.dir)
    run.metrics            # RUN_DIR/metrics.jsonl
    run.log("learner-0")   # RUN_DIR/logs/learner-0.log

The run dir is the run's shared record: the launcher, every service, the gateway and the CLI
read and write it, so each path goes through this module (a leaf on the ground floor: it
imports nothing of meshrl, and every floor may use it).

    config.yaml        the resolved config, so a run can be repeated exactly (the launcher)
    metrics.jsonl      one line of metrics per step (the learner; read by plot, gateway, progress bar)
    groups.jsonl       the ledger: every group published, trained or dropped (the learner)
    data_report.json   the data set after tokenisation (the learner)
    samples.jsonl      a few trained and evaluated responses per step (the learner's eval)
    alerts.jsonl       every alert raised (alert sinks; alerts.events_file names it)
    traces/            every process's spans, OTLP JSON lines (telemetry; read by meshrl trace)
    logs/              each process's log (the launcher's supervisor)
    checkpoints/       checkpoints, step_N (the learner; meshrl.inputs.checkpoint)
    final/             the trained policy as a Hugging Face model dir (the learner)
    nats/              JetStream data of the embedded NATS server (the launcher)
    tensorboard/       step metrics as TensorBoard scalars (telemetry.trackers)
    trackers/          the run's MLflow run and the rows it did not take (services/learner/trackers)
    learner.heartbeat  touched every 20 s while the learner runs: alive between metrics rows (the learner)
    launcher.json      the running launcher's calling card (meshrl.run.presence)
    launcher.lock      flocked by the running launcher: who it is, told by the kernel (meshrl.run.presence)
    scale.json         the replica counts `meshrl scale` asked for (meshrl.run.scale)
    audit.jsonl        every action that changed the run (meshrl.run.audit)
    restarts.jsonl     every restart of a service (meshrl.launch.restarts)
    shm_segments.json  the shared memory the run's processes map, for the next launcher to free (meshrl.launch.shm)
    secrets/           the run's NATS users, TLS files and gRPC certificates (meshrl.run.secrets)
    keys/              the run's signing key: notices and checkpoints (meshrl.security.run_key)
    metrics.png        `meshrl plot`'s default output
"""

from __future__ import annotations

from pathlib import Path

CONFIG = "config.yaml"
METRICS = "metrics.jsonl"
LEDGER = "groups.jsonl"
# what a started run leaves behind, even one that failed before its first checkpoint: a fresh
# start refuses a dir holding any of them (meshrl.launch.run_dir), a failed start moves them aside
RUN_MARKS = (CONFIG, METRICS, LEDGER)
DATA_REPORT = "data_report.json"
SAMPLES = "samples.jsonl"
ALERTS = "alerts.jsonl"
TRACES = "traces"
LOGS = "logs"
CHECKPOINTS = "checkpoints"
FINAL = "final"
NATS = "nats"
TENSORBOARD = "tensorboard"
TRACKERS = "trackers"
MLFLOW_RUN = "mlflow-run.json"
MLFLOW_UNSENT = "mlflow-unsent.jsonl"
HEARTBEAT = "learner.heartbeat"
PRESENCE = "launcher.json"
LAUNCH_LOCK = "launcher.lock"
SCALE = "scale.json"
AUDIT = "audit.jsonl"
RESTARTS = "restarts.jsonl"
SHM_SEGMENTS = "shm_segments.json"
SECRETS = "secrets"
KEYS = "keys"
PLOT = "metrics.png"


class RunDir:
    """The paths of one run dir (nothing is created here)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    config = property(lambda self: self.path / CONFIG)
    metrics = property(lambda self: self.path / METRICS)
    ledger = property(lambda self: self.path / LEDGER)
    data_report = property(lambda self: self.path / DATA_REPORT)
    samples = property(lambda self: self.path / SAMPLES)
    alerts = property(lambda self: self.path / ALERTS)
    traces = property(lambda self: self.path / TRACES)
    logs = property(lambda self: self.path / LOGS)
    checkpoints = property(lambda self: self.path / CHECKPOINTS)
    final = property(lambda self: self.path / FINAL)
    nats = property(lambda self: self.path / NATS)
    tensorboard = property(lambda self: self.path / TENSORBOARD)
    mlflow_run = property(lambda self: self.path / TRACKERS / MLFLOW_RUN)
    mlflow_unsent = property(lambda self: self.path / TRACKERS / MLFLOW_UNSENT)
    heartbeat = property(lambda self: self.path / HEARTBEAT)
    presence = property(lambda self: self.path / PRESENCE)
    scale = property(lambda self: self.path / SCALE)
    audit = property(lambda self: self.path / AUDIT)
    keys = property(lambda self: self.path / KEYS)
    restarts = property(lambda self: self.path / RESTARTS)
    shm_segments = property(lambda self: self.path / SHM_SEGMENTS)
    secrets = property(lambda self: self.path / SECRETS)
    plot = property(lambda self: self.path / PLOT)

    def log(self, key: str) -> Path:
        """RUN_DIR/logs/<key>.log, e.g. key learner-0."""
        return self.path / LOGS / f"{key}.log"
