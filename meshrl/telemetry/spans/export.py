"""OtlpJsonFileExporter: finished spans as OTLP JSON lines in the run dir, no collector needed.

    RUN_DIR/traces/<service>-<replica>.jsonl

Each line is one export batch as an OTLP JSON ExportTraceServiceRequest (resourceSpans →
scopeSpans → spans, hex ids, `startTimeUnixNano` strings, typed attribute values: see
otlp_json.py), the format an OpenTelemetry collector's file exporter writes, so Jaeger or
Tempo can import the file as it is. `meshrl trace` and the gateway read it back through
spans/read.py. One file per process, appended to, so a restarted replica adds to its own file.
Simplification: no rotation; a long run's file grows with its spans, about twice as fast per
span when batches are small (the resource is repeated per line; docs/benchmarks.md,
"Observability overhead", has the size per span).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Sequence

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from meshrl import run_layout as layout
from meshrl.telemetry.spans.otlp_json import to_otlp_json

TRACES_DIR = layout.TRACES


def traces_file(run_dir: str | Path, service: str, replica: str) -> Path:
    return Path(run_dir) / TRACES_DIR / f"{service}-{replica}.jsonl"


def otlp_json_line(spans: Sequence[ReadableSpan]) -> str:
    """One batch of spans as one OTLP JSON line (with its newline)."""
    return json.dumps(to_otlp_json(encode_spans(spans)), separators=(",", ":")) + "\n"


class OtlpJsonFileExporter(SpanExporter):
    """Append each batch to a file as one OTLP JSON line; thread-safe (the batch processor's
    thread writes)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fh = open(self.path, "a", encoding="utf-8")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        line = otlp_json_line(spans)
        with self._lock:
            if self._fh.closed:
                return SpanExportResult.FAILURE
            self._fh.write(line)
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
