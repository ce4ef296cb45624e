"""Alerts appended to a JSONL events file (RUN_DIR/alerts.jsonl), one object per line.

Each line is written and flushed at once, so `tail -f` and a crash both see whole lines.
"""

import json
from pathlib import Path

from meshrl.alerts.types import Alert


class JsonlSink:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, alert: Alert) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(alert.to_dict(), allow_nan=False, default=str) + "\n")
