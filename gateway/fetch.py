"""What the read-only verbs `meshrl trace` and `meshrl plot` fetch from a gateway run URL.

    spans, linked = group_trace("http://127.0.0.1:8080/runs/grpo-0412", "g-0007")  # GetGroupTrace
    rows = metric_rows("http://127.0.0.1:8080/runs/grpo-0412")                     # StreamMetrics, so far

The answers are the run dir's records carried as google.protobuf.Struct, whose numbers are
all doubles: whole numbers the readers count with (a span's depth and times, the step a
linked span trained) come back as ints here, so the waterfall reads as it does from the run
dir. Simplification: a double holds a span's Unix-ns time to ±128 ns, finer than the
waterfall shows. Errors are gateway/client.py's LaunchErrors (token, role, run, reachability).
"""
from __future__ import annotations

import urllib.parse

from meshrl.gateway.client import call

SPAN_INTS = ("depth", "start_unix_ns", "end_unix_ns")
STEP_KEY = "meshrl.step"


def span_record(span: dict) -> dict:
    """One span of a GetGroupTrace answer with its whole-number fields as ints again."""
    out = dict(span, **{k: int(span[k]) for k in SPAN_INTS if k in span})
    attrs = span.get("attributes") or {}
    if isinstance(attrs.get(STEP_KEY), float):
        out["attributes"] = dict(attrs, **{STEP_KEY: int(attrs[STEP_KEY])})
    return out


def group_trace(url: str, group_id: str) -> tuple[list[dict], list[dict]]:
    """(the group's spans in tree order, the spans of other traces linking to it)."""
    answer = call(url, "GET", f"groups/{urllib.parse.quote(group_id, safe='')}/trace")
    return [span_record(s) for s in answer.get("spans", [])], [span_record(s) for s in answer.get("linked", [])]


def metric_rows(url: str) -> list[dict]:
    """Every metrics.jsonl row the run has written so far, in order."""
    return [record.get("row", {}) for record in call(url, "GET", "metrics").get("records", [])]
