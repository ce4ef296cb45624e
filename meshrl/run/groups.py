"""A run's prompt groups, one row each: what the ledger says of it and how long its trace took.

    rows = group_rows("runs/x", load_spans("runs/x"))
    # [{"group_id": "g-1", "state": "trained", "step": 0, "reward": 0.5, "duration_ns": 120_000_000}, ...]

From RUN_DIR/groups.jsonl (meshrl.services.learner.ledger: `published`, `trained` with the step
and the group's mean reward, `dropped` with its reason) and the spans of RUN_DIR/traces: a
group's duration runs from the first to the last span of the trace(s) holding a span tagged
with its id (publish to gather). A group only the traces know (no ledger) is listed too;
what is not known is None. Rows come in the order the groups were published (else traced).
"""

from __future__ import annotations

from pathlib import Path

from meshrl.run.records import read_rows
from meshrl.run_layout import RunDir
from meshrl.telemetry.spans.propagation import GROUP_ID_KEY
from meshrl.telemetry.spans.read import group_ids


def ledger_rows(run_dir: str | Path) -> dict[str, dict]:
    """group id -> its row, in publishing order; a later trained/dropped event settles it."""
    rows: dict[str, dict] = {}
    for e in read_rows(RunDir(run_dir).ledger):
        gid = e.get("group_id")
        if not isinstance(gid, str):
            continue  # resumed / weights_loaded rows name no group
        row = rows.setdefault(gid, {"group_id": gid, "state": "not settled", "step": None, "reward": None})
        if e.get("event") == "trained":
            row.update(state="trained", step=e.get("step"), reward=e.get("reward"))
        elif e.get("event") == "dropped":
            row["state"] = f"dropped: {e.get('reason', '?')}"
    return rows


def durations(spans: list[dict]) -> dict[str, int]:
    """group id -> ns from the first to the last span of the traces its spans are in."""
    traces_of: dict[str, set[str]] = {}
    extent: dict[str, tuple[int, int]] = {}
    for s in spans:
        gid = s.get("attributes", {}).get(GROUP_ID_KEY)
        if gid is not None:
            traces_of.setdefault(gid, set()).add(s["trace_id"])
        first, last = extent.get(s["trace_id"], (s["start_unix_ns"], s["end_unix_ns"]))
        extent[s["trace_id"]] = (min(first, s["start_unix_ns"]), max(last, s["end_unix_ns"]))
    return {gid: max(extent[t][1] for t in ids) - min(extent[t][0] for t in ids) for gid, ids in traces_of.items()}


def group_rows(run_dir: str | Path, spans: list[dict]) -> list[dict]:
    """Every group the ledger or the traces know, with state, step, reward and duration."""
    rows = ledger_rows(run_dir)
    took = durations(spans)
    for gid in group_ids(spans):  # the order their first span started
        rows.setdefault(gid, {"group_id": gid, "state": "traced only", "step": None, "reward": None})
    return [{**row, "duration_ns": took.get(gid)} for gid, row in rows.items()]
