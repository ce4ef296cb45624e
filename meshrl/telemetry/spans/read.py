"""Read a run's span files back and put one group's trace in tree order.

    spans = load_spans("runs/x")                        # every span in RUN_DIR/traces/*.jsonl
    tree = trace_for_group("runs/x", "g-0007")          # DFS order, each with "depth"

A group's trace is every span sharing a trace id with a span tagged meshrl.group_id = the
group (a group republished after a crash can have two traces: both are returned). Children
are ordered by start time; a span whose parent never reached the files (a crashed replica)
is shown as a root of its trace rather than dropped. Lines that are not JSON (a file cut
mid-write) or not OTLP are skipped.

The files hold OTLP JSON lines (spans/export.py); each span comes back as a flat dict:
trace_id, span_id, parent_span_id (hex, None for a root), name, kind (CLIENT, SERVER, ...),
service, replica (the resource's service.name / service.instance.id), start_unix_ns,
end_unix_ns, attributes, links [{trace_id, span_id, attributes}], events [{name,
time_unix_ns, attributes}], status {code (UNSET | OK | ERROR), description}. Lines already in
that flat shape (files written before the OTLP format) are read as they are.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from meshrl.telemetry.spans.export import TRACES_DIR
from meshrl.telemetry.spans.otlp_json import from_otlp_json, span_records
from meshrl.telemetry.spans.propagation import GROUP_ID_KEY


class TraceNotFound(LookupError):
    """No span of the asked group in the run's trace files; the message lists known groups."""


def traces_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / TRACES_DIR


def load_spans(run_dir: str | Path) -> list[dict]:
    """Every span in RUN_DIR/traces/*.jsonl as a flat record (unreadable lines skipped)."""
    folder = traces_dir(run_dir)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder} does not exist: was the run traced? services write "
            f"spans there when started with init_tracing(..., run_dir=RUN_DIR)"
        )
    spans = []
    for path in sorted(folder.glob("*.jsonl")):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                spans += _line_spans(line)
    return spans


def _line_spans(line: str) -> list[dict]:
    try:
        doc = json.loads(line)
        if isinstance(doc, dict) and "trace_id" in doc:
            return [doc]  # the flat record of files written before OTLP JSON
        return span_records(from_otlp_json(doc))
    except ValueError:  # json.JSONDecodeError included: a line cut mid-write
        return []


def group_ids(spans: list[dict]) -> list[str]:
    """Group ids in the order their first span started."""
    first: dict[str, int] = {}
    for s in sorted(spans, key=lambda s: s["start_unix_ns"]):
        gid = s.get("attributes", {}).get(GROUP_ID_KEY)
        if gid is not None:
            first.setdefault(gid, s["start_unix_ns"])
    return list(first)


def tree_order(spans: list[dict]) -> list[dict]:
    """Spans in depth-first order (children by start time), each copied with a "depth" key."""
    ids = {s["span_id"] for s in spans}
    children: dict[str | None, list[dict]] = defaultdict(list)
    for s in spans:
        parent = s.get("parent_span_id")
        children[parent if parent in ids else None].append(s)
    out: list[dict] = []

    def visit(parent: str | None, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda s: (s["start_unix_ns"], s["name"])):
            out.append({**s, "depth": depth})
            visit(s["span_id"], depth + 1)

    visit(None, 0)
    return out


def spans_of_group(spans: list[dict], group_id: str) -> list[dict]:
    trace_ids = {s["trace_id"] for s in spans if s.get("attributes", {}).get(GROUP_ID_KEY) == group_id}
    return [s for s in spans if s["trace_id"] in trace_ids]


def trace_for_group(run_dir: str | Path, group_id: str, *, spans: list[dict] | None = None) -> list[dict]:
    """The spans of `group_id`'s trace(s) in tree order; TraceNotFound when it has none."""
    spans = load_spans(run_dir) if spans is None else spans
    found = spans_of_group(spans, group_id)
    if not found:
        known = group_ids(spans)
        shown = ", ".join(known[:8]) + (f", ... ({len(known)} in all)" if len(known) > 8 else "")
        raise TraceNotFound(
            f"group {group_id!r} has no spans in {traces_dir(run_dir)} "
            f"({len(spans)} spans read); known groups: {shown or 'none'}"
        )
    return tree_order(found)


def linking_spans(spans: list[dict], trace_ids: set[str]) -> list[dict]:
    """Spans of other traces whose links point into `trace_ids` (the learner's step spans)."""
    return sorted(
        (
            s
            for s in spans
            if s["trace_id"] not in trace_ids and any(link["trace_id"] in trace_ids for link in s.get("links", []))
        ),
        key=lambda s: s["start_unix_ns"],
    )
