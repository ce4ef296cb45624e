"""The run's audit log: `RUN_DIR/audit.jsonl`, one JSON line per action that changes a run.

    record_action(run_dir, "scale", run_id=..., changes={"rollout": {"from": 1, "to": 3}})
    →  {"time": 1767.., "when": "2026-..Z", "who": "alice", "action": "scale", "run_id": ..., ...}

`who` is $USER (the OS account when unset): on one machine that is who typed the command;
the gateway's tokens name the caller in a cluster. Appended with one write, so concurrent
writers never interleave within a line.
"""
from __future__ import annotations

import getpass
import json
import os
import time
from pathlib import Path

AUDIT_FILE = "audit.jsonl"


def current_user() -> str:
    try:
        return os.environ.get("USER") or getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return f"uid:{os.getuid()}"


def record_action(run_dir: Path, action: str, **what) -> dict:
    """Append one row (who, when, action, what) and return it."""
    now = time.time()
    row = {"time": now, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
           "who": current_user(), "action": action, **what}
    with (Path(run_dir) / AUDIT_FILE).open("a") as log:
        log.write(json.dumps(row) + "\n")
    return row
