"""JsonlSpanExporter: finished spans as one JSON object per line, for runs with no collector.

    RUN_DIR/traces/<service>-<replica>.jsonl

Each line: trace_id, span_id, parent_span_id (hex, null for a root), name, kind, service,
replica, start_unix_ns, end_unix_ns, attributes, links [{trace_id, span_id, attributes}],
events [{name, time_unix_ns, attributes}], status {code, description}. One file per process,
appended to, so a restarted replica adds to its own file and `meshrl trace` reads them all.
Simplification: no rotation; a long run's file grows by ≈0.5 KB per span.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import format_span_id, format_trace_id

TRACES_DIR = "traces"


def traces_file(run_dir: str | Path, service: str, replica: str) -> Path:
    return Path(run_dir) / TRACES_DIR / f"{service}-{replica}.jsonl"


def _attrs(attributes) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in (attributes or {}).items()}


def span_record(span: ReadableSpan) -> dict:
    """The JSONL record of one finished span (see the module docstring for the fields)."""
    ctx, resource = span.context, span.resource.attributes
    return {
        "trace_id": format_trace_id(ctx.trace_id),
        "span_id": format_span_id(ctx.span_id),
        "parent_span_id": format_span_id(span.parent.span_id) if span.parent else None,
        "name": span.name,
        "kind": span.kind.name,
        "service": resource.get("service.name", ""),
        "replica": resource.get("service.instance.id", ""),
        "start_unix_ns": span.start_time,
        "end_unix_ns": span.end_time,
        "attributes": _attrs(span.attributes),
        "links": [{"trace_id": format_trace_id(link.context.trace_id),
                   "span_id": format_span_id(link.context.span_id),
                   "attributes": _attrs(link.attributes)} for link in span.links],
        "events": [{"name": e.name, "time_unix_ns": e.timestamp, "attributes": _attrs(e.attributes)}
                   for e in span.events],
        "status": {"code": span.status.status_code.name, "description": span.status.description},
    }


class JsonlSpanExporter(SpanExporter):
    """Append finished spans to a JSONL file; thread-safe (the batch processor's thread writes)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fh = open(self.path, "a", encoding="utf-8")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(span_record(s), default=str) + "\n" for s in spans)
        with self._lock:
            if self._fh.closed:
                return SpanExportResult.FAILURE
            self._fh.write(lines)
            self._fh.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            self._fh.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        with self._lock:
            if not self._fh.closed:
                self._fh.flush()
        return True
