"""Where the learner's per-step metrics go: small loggers behind one protocol.

`metrics.jsonl` in the run dir is the record every tool reads (the CLI's progress bar,
`meshrl plot`, tests). A `NullLogger` stands in where nothing should be written, so call
sites never test whether logging is on. `with_prometheus` adds the live view: the same
numbers as gauges on the learner's /metrics endpoint (`MultiLogger` fans out to both).
`TensorBoardLogger` (tensorboard in telemetry.trackers) writes them as scalars to
RUN_DIR/tensorboard for `tensorboard --logdir RUN_DIR/tensorboard`; MLflow and W&B are in
`trackers/`. Each logger also hears the final model's path (`log_final_model`).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Protocol


class MetricLogger(Protocol):
    def log(self, step: int, metrics: dict[str, float]) -> None: ...

    def log_final_model(self, path: Path) -> None: ...  # the run's final model dir, once saved

    def close(self) -> None: ...


class NullLogger:
    def log(self, step: int, metrics: dict[str, float]) -> None:
        pass

    def log_final_model(self, path: Path) -> None:
        pass

    def close(self) -> None:
        pass


def _jsonable(value):
    """Floats that JSON can carry: NaN and inf become null rather than invalid JSON."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def finite_numbers(metrics: dict) -> dict[str, float]:
    """The finite numbers of a step (0-d tensors included): what a tracker can plot. Text,
    booleans, None, NaN and inf are left out."""
    out = {}
    for key, value in metrics.items():
        number = _jsonable(value)
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            out[key] = number
    return out


class JsonlLogger:
    """One JSON object per step, flushed at once so a reader tailing the file sees it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", buffering=1)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        row = {"step": step, "time": time.time(), **{k: _jsonable(v) for k, v in metrics.items()}}
        self._file.write(json.dumps(row) + "\n")

    def log_final_model(self, path: Path) -> None:
        pass  # the run dir's `final/` is where every reader looks

    def close(self) -> None:
        self._file.close()


def forget_steps_from(path: str | Path, step: int) -> int:
    """Drop the rows of `step` and later from a metrics.jsonl, in place; returns how many.

    A learner that died between checkpoints logged steps that its resume trains again; without
    this they would appear twice. In place (not a new file) so that a JsonlLogger already open
    in append mode keeps writing to the same file, at its new end."""
    path = Path(path)
    if not path.is_file():
        return 0
    lines = path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if _step_of(line) < step]
    if len(kept) < len(lines):
        with path.open("r+") as f:
            f.write("".join(kept))
            f.truncate()
    return len(lines) - len(kept)


def _step_of(line: str) -> float:
    """A row's step; a torn last line (the process died while writing it) counts as later."""
    try:
        return json.loads(line)["step"]
    except (ValueError, KeyError, TypeError):
        return math.inf


class MultiLogger:
    def __init__(self, *loggers: MetricLogger):
        self.loggers = loggers

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for logger in self.loggers:
            logger.log(step, metrics)

    def log_final_model(self, path: Path) -> None:
        for logger in self.loggers:
            logger.log_final_model(path)

    def close(self) -> None:
        for logger in self.loggers:
            logger.close()


class PrometheusLogger:
    """Each step's metrics as Prometheus gauges `meshrl_train_<key>` (plus `..._step`).

    `clip_ratio/low` becomes `meshrl_train_clip_ratio_low`, `time/forward` becomes
    `meshrl_train_step_phase_seconds{phase="forward"}` (meshrl.telemetry.metrics.
    train_series: names promtool accepts; the learner is the `service` label); a NaN keeps the gauge at its last finite value. The endpoint belongs
    to whoever started it (the learner's serve()), so `close()` leaves it running.
    """

    PREFIX = "meshrl_train_"

    def __init__(self, handle):
        self.handle = handle

    def log(self, step: int, metrics: dict[str, float]) -> None:
        # tensors → numbers; NaN stays NaN: set_values counts it (the non-finite alert rules)
        values = {k: (v.item() if hasattr(v, "item") else v) for k, v in metrics.items()}
        self.handle.set_values({"step": step, **values}, prefix=self.PREFIX)

    def log_final_model(self, path: Path) -> None:
        pass

    def close(self) -> None:
        pass


def with_prometheus(logger: MetricLogger, handle) -> MetricLogger:
    """`logger` plus a PrometheusLogger on `handle`; `logger` alone when metrics are off."""
    return logger if handle is None else MultiLogger(logger, PrometheusLogger(handle))


class TensorBoardLogger:
    """Every finite number of a step as a TensorBoard scalar (tag = the metrics.jsonl key)."""

    def __init__(self, log_dir: str | Path):
        try:
            from torch.utils.tensorboard import (
                SummaryWriter,
            )  # lazy: tensorboard is an optional extra, only when the tensorboard logger is on
        except ImportError as err:  # torch's writer needs the tensorboard package
            raise RuntimeError(
                "telemetry.tensorboard=true needs the tensorboard package: "
                "pip install 'meshrl[tensorboard]' (or set it to false)"
            ) from err
        self.writer = SummaryWriter(log_dir=str(log_dir))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for key, number in finite_numbers(metrics).items():
            self.writer.add_scalar(key, number, global_step=step)
        self.writer.flush()

    def log_final_model(self, path: Path) -> None:
        self.writer.add_text("final_model", str(path))
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
