"""Read a run's `metrics.jsonl` into one float array per metric, indexed by step.

The learner writes one JSON object per step; NaN and inf are written as null, and a value
missing from a row is missing. Both become NaN here, so a plotted line shows a gap instead of
a made-up number. A resumed run can write a step twice: the last row for a step wins. A run
still being written may end in a half-written line; that one line is ignored.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from meshrl import run_layout as layout

METRICS_FILE = layout.METRICS


class PlotError(ValueError):
    """A run dir that cannot be plotted; the message says which file and why."""


def _rows(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            if number == len(lines):  # the learner may be writing this line right now
                continue
            raise PlotError(
                f"{path}:{number} is not JSON ({err.msg}); each line must be one JSON object per step"
            ) from None
        if not isinstance(row, dict):
            raise PlotError(f"{path}:{number} is {type(row).__name__}, expected a JSON object")
        rows.append(row)
    return rows


def _by_step(rows: list[dict]) -> dict[float, dict]:
    """Last row per step; rows without a `step` get their position (0, 1, ...)."""
    latest: dict[float, dict] = {}
    for index, row in enumerate(rows):
        step = row.get("step", index)
        latest[float(step if isinstance(step, (int, float)) else index)] = row
    return dict(sorted(latest.items()))


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return float("nan")
    return float(value)


def load_series(run_dir: str | Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(steps, {metric: values}) from RUN_DIR/metrics.jsonl; only numeric metrics are kept."""
    run_dir = Path(run_dir)
    path = run_dir / METRICS_FILE
    if not run_dir.is_dir():
        raise PlotError(
            f"run dir {run_dir} does not exist; pass the directory a run wrote "
            f"(it holds config.yaml and {METRICS_FILE})"
        )
    if not path.is_file():
        raise PlotError(
            f"{run_dir} has no {METRICS_FILE}; the learner writes it after its "
            f"first step — is this a run dir, and has the run trained a step yet?"
        )
    return series_from_rows(_rows(path), str(path))


def series_from_rows(rows: list[dict], source: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(steps, {metric: values}) from metrics rows, read from `source` (a file, a gateway URL)."""
    by_step = _by_step(rows)
    if not by_step:
        raise PlotError(f"{source} has no steps yet; plot again after the first step")
    keys = {
        k
        for row in by_step.values()
        for k, v in row.items()
        if k != "step" and (v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)))
    }
    series = {k: np.array([_number(row.get(k)) for row in by_step.values()]) for k in sorted(keys)}
    return np.array(list(by_step)), series
