"""A live progress bar fed by the learner's `metrics.jsonl` (one JSON object per step).

The file is tailed from where it ended when the run started (the learner appends, so an
earlier run in the same dir is not counted); only complete lines are read. `time_split`
says where a step's time went on average (generation, waiting for the batch, scoring,
training by phase, the weights push, idle), so a user sees which service to scale.
"""

from __future__ import annotations

import json
from pathlib import Path

from tqdm import tqdm

POSTFIX = (("reward", "reward", "{:.3f}"), ("kl", "kl", "{:.4f}"), ("perf/throughput", "tok/s", "{:.0f}"))
# (label, metrics.jsonl key): the parts of a step, in the order a step runs them
TIME_SPLIT = (
    ("generate", "time/generate_busy"),
    ("wait", "time/wait_for_batch"),
    ("score", "time/reward_busy"),
    ("reference", "time/reference_busy"),
    ("train", "time/train"),
    ("forward", "time/forward"),
    ("backward", "time/backward"),
    ("optimizer", "time/optimizer"),
    ("push", "time/weights_push"),
    ("idle", "time/idle"),
)
TRAIN_PHASES = ("forward", "backward", "optimizer")


class MetricsTail:
    """New complete JSON lines of a file, from a starting offset."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def read_new(self) -> list[dict]:
        if not self.path.exists():
            return []
        if self.path.stat().st_size < self.offset:
            # A resumed learner rewrote the file without the steps it trains again: go on
            # from its new end (the resumed steps are appended there).
            self.offset = self.path.stat().st_size
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a half-written last line waits for the next read
        self.offset += end
        return [row for line in data[:end].splitlines() if (row := _row(line)) is not None]


def _row(line: bytes) -> dict | None:
    """One metrics row; None for a blank or broken line (a rewrite under the reader can cut one:
    a progress bar skips it rather than stop the run)."""
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) else None


def postfix(row: dict) -> dict[str, str]:
    """The bar's right side: reward, KL and tokens/s of the latest step, where present."""
    shown = {}
    for key, label, fmt in POSTFIX:
        if isinstance(row.get(key), (int, float)):
            shown[label] = fmt.format(row[key])
    return shown


def time_split(rows: list[dict]) -> str:
    """'a step 22.1 s on average: generate 6.1 s, wait 6.3 s, ..., train 5.5 s (forward 1.2 s,
    backward 3.1 s, optimizer 0.4 s), push 0.8 s, idle 1.1 s' over `rows`; "" without steps."""
    steps = [row["time/step"] for row in rows if isinstance(row.get("time/step"), (int, float))]
    if not steps:
        return ""
    means = {}
    for label, key in TIME_SPLIT:
        values = [row[key] for row in rows if isinstance(row.get(key), (int, float))]
        if values:
            means[label] = sum(values) / len(values)
    phases = ", ".join(f"{p} {means[p]:.1f} s" for p in TRAIN_PHASES if p in means)
    parts = [
        f"{label} {means[label]:.1f} s" + (f" ({phases})" if label == "train" and phases else "")
        for label, _ in TIME_SPLIT
        if label in means and label not in TRAIN_PHASES
    ]
    return f"a step {sum(steps) / len(steps):.1f} s on average: " + ", ".join(parts)


class RunProgress:
    """step/total with reward, KL and tokens/s; `update()` is cheap enough to call often."""

    def __init__(
        self, metrics_path: str | Path, total_steps: int, *, desc: str = "train", enabled: bool = True, file=None
    ):
        self.tail = MetricsTail(metrics_path)
        self.steps_done = 0
        self.last: dict = {}
        self.rows: list[dict] = []  # every step this bar saw, for `time_split`
        self.bar = tqdm(
            total=total_steps,
            desc=desc,
            unit="step",
            disable=not enabled,
            dynamic_ncols=file is None,
            file=file,
            mininterval=0,
        )

    def update(self) -> None:
        rows = self.tail.read_new()
        if not rows:
            return
        self.last = rows[-1]
        self.rows += rows
        # Rows carry their step, so a resumed run's bar starts where the checkpoint was.
        done = int(self.last["step"]) + 1 if isinstance(self.last.get("step"), int) else self.steps_done + len(rows)
        self.bar.set_postfix(postfix(self.last), refresh=False)
        self.bar.update(done - self.steps_done)  # negative after a resume redoes steps
        self.steps_done = done

    def close(self) -> None:
        self.update()
        self.bar.close()
