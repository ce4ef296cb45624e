"""OTLP JSON: the text form of an ExportTraceServiceRequest, as OpenTelemetry specifies it.

    line = json.dumps(to_otlp_json(encode_spans(spans)))     # what spans/export.py writes
    request = from_otlp_json(json.loads(line))                # an ExportTraceServiceRequest
    records = span_records(request)                           # the dicts meshrl trace reads

OTLP JSON is protobuf's JSON mapping (camelCase names, int64 as strings such as
`"startTimeUnixNano": "1700000000000000000"`, attributes as `{"key", "value": {"intValue": ..}}`)
with two exceptions the spec makes: trace and span ids are hex strings, not base64, and enums
are integers. protobuf's json_format does the rest; this module only converts the ids. It is
what an OpenTelemetry collector's file exporter writes, one request per line, and what Jaeger
and Tempo import. Try: `python -m meshrl.telemetry.spans.otlp_json RUN_DIR/traces/x.jsonl`.
"""

from __future__ import annotations

import base64
import sys
from copy import deepcopy

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _convert_ids(spans: list[dict], convert) -> None:
    for span in spans:
        for item in (span, *span.get("links", ())):
            for key in ID_FIELDS:
                if item.get(key):
                    item[key] = convert(item[key])


def _spans_of(doc: dict):
    for resource_spans in doc.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            yield scope_spans.get("spans", [])


def to_otlp_json(request: ExportTraceServiceRequest) -> dict:
    """The OTLP JSON object of `request` (hex ids, integer enums)."""
    doc = json_format.MessageToDict(request, use_integers_for_enums=True)
    for spans in _spans_of(doc):
        _convert_ids(spans, lambda b64: base64.b64decode(b64).hex())
    return doc


def from_otlp_json(doc: dict) -> ExportTraceServiceRequest:
    """Parse one OTLP JSON object; ValueError naming the problem when it is not one."""
    if not isinstance(doc, dict):
        raise ValueError(f"not OTLP JSON: expected an object with resourceSpans, got {type(doc).__name__}")
    copy = deepcopy(doc)  # the ids are converted in place
    for spans in _spans_of(copy):
        _convert_ids(spans, lambda hex_id: base64.b64encode(bytes.fromhex(hex_id)).decode())
    try:
        return json_format.ParseDict(copy, ExportTraceServiceRequest())
    except json_format.ParseError as err:
        raise ValueError(f"not OTLP JSON (an ExportTraceServiceRequest): {err}") from err


def any_value(value: AnyValue):
    """An OTLP AnyValue as the Python value it holds (lists and maps recursively)."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return None if kind is None else getattr(value, kind)


def attributes(key_values) -> dict:
    return {kv.key: any_value(kv.value) for kv in key_values}


def _enum_name(enum, number: int, prefix: str) -> str:
    return enum.Name(number).removeprefix(prefix)


def span_record(span: Span, resource: dict) -> dict:
    """One OTLP span as the flat dict load_spans returns (see spans/read.py)."""
    return {
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex() or None,
        "name": span.name,
        "kind": _enum_name(Span.SpanKind, span.kind, "SPAN_KIND_"),
        "service": resource.get("service.name", ""),
        "replica": resource.get("service.instance.id", ""),
        "start_unix_ns": span.start_time_unix_nano,
        "end_unix_ns": span.end_time_unix_nano,
        "attributes": attributes(span.attributes),
        "links": [
            {"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(), "attributes": attributes(link.attributes)}
            for link in span.links
        ],
        "events": [
            {"name": e.name, "time_unix_ns": e.time_unix_nano, "attributes": attributes(e.attributes)}
            for e in span.events
        ],
        "status": {
            "code": _enum_name(Status.StatusCode, span.status.code, "STATUS_CODE_"),
            "description": span.status.message or None,
        },
    }


def span_records(request: ExportTraceServiceRequest) -> list[dict]:
    """Every span of `request` as a flat record, with its resource's service and replica."""
    records = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            records += [span_record(span, resource) for span in scope_spans.spans]
    return records


if __name__ == "__main__":
    import json

    with open(sys.argv[1], encoding="utf-8") as fh:
        for line in fh:
            for record in span_records(from_otlp_json(json.loads(line))):
                print(record["trace_id"], record["span_id"], record["service"], record["name"])
