"""The samples.jsonl rows written since the last look: what a tracker shows as a table.

The learner's SampleWriter appends train and eval samples before each step's metrics are
logged, so a tracker that reads the new rows at each `log(step, ...)` shows the same samples a
person would find in RUN_DIR/samples.jsonl. Only whole lines are taken (a line still being
written waits for the next look); rows a resumed run wrote before this process are skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

COLUMNS = (
    "step",
    "split",
    "prompt",
    "response",
    "ground_truth",
    "reward",
    "finish_reason",
    "num_tokens",
    "policy_version",
    "components",
)


class SamplesTail:
    def __init__(self, path: Path):
        self.path = path
        self.offset = path.stat().st_size if path.is_file() else 0

    def new_rows(self) -> list[dict]:
        if not self.path.is_file():
            return []
        with self.path.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        whole = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(whole)
        return [json.loads(line) for line in whole.decode("utf-8").splitlines() if line.strip()]


def as_table(rows: list[dict]) -> tuple[list[str], list[list]]:
    """Column names and rows of plain values (components as JSON text) for a tracker's table."""
    data = [[json.dumps(row.get(c)) if c == "components" else row.get(c) for c in COLUMNS] for row in rows]
    return list(COLUMNS), data
