"""Span files are OTLP JSON, and with an endpoint configured the spans reach a real OTLP
receiver AND the file (so `meshrl trace` keeps working beside a collector).

The receiver is a real gRPC server implementing opentelemetry.proto.collector.trace.v1
TraceService on a free port, in this process; it keeps every request it gets."""

import base64
import json
import threading
from concurrent import futures

import grpc
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from meshrl.telemetry import tracing
from meshrl.telemetry.spans.otlp_json import from_otlp_json, to_otlp_json
from meshrl.telemetry.spans.read import load_spans

TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self):
        self.requests: list[ExportTraceServiceRequest] = []
        self.lock = threading.Lock()

    def Export(self, request, context):
        with self.lock:
            self.requests.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()

    def span_ids(self) -> set[str]:
        with self.lock:
            return {
                span.span_id.hex()
                for r in self.requests
                for rs in r.resource_spans
                for ss in rs.scope_spans
                for span in ss.spans
            }


@pytest.fixture
def receiver():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = Receiver()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield servicer, f"http://127.0.0.1:{port}"
    server.stop(grace=None)


def make_spans(tracer):
    with tracer.group_span(
        "rollout.generate",
        "g-7",
        headers={"traceparent": TP},
        policy_version=3,
        attributes={"n": 4, "temperature": 0.5, "ok": True, "ids": [1, 2]},
    ):
        with tracer.otel.start_as_current_span("rollout.sample"):
            pass
    tracer.force_flush()


def hex_ids_to_base64(doc: dict) -> dict:
    """What the OTLP JSON spec changes in protobuf's JSON mapping, undone by hand: ids in hex."""
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return doc


def test_the_span_file_is_otlp_json(tmp_path):
    tracer = tracing.init_tracing("rollout", "2", "run-o", run_dir=tmp_path, make_current=False)
    try:
        make_spans(tracer)
    finally:
        tracing.shutdown_tracing(tracer)
    lines = (tmp_path / "traces" / "rollout-2.jsonl").read_text().splitlines()
    doc = json.loads(lines[0])
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][-1]
    assert span["traceId"] == "0af7651916cd43dd8448eb211c80319c" and span["parentSpanId"] == "b7ad6b7169203331"
    assert isinstance(span["startTimeUnixNano"], str) and int(span["startTimeUnixNano"]) > 1.6e18
    assert span["kind"] == 1  # SPAN_KIND_INTERNAL, an integer as OTLP JSON wants
    attrs = {a["key"]: a["value"] for a in span["attributes"]}
    assert attrs["n"] == {"intValue": "4"} and attrs["temperature"] == {"doubleValue": 0.5}
    assert attrs["ok"] == {"boolValue": True} and attrs["meshrl.group_id"] == {"stringValue": "g-7"}
    assert attrs["meshrl.component"] == {"stringValue": "rollout"} and attrs["meshrl.replica"] == {"stringValue": "2"}
    request = json_format.ParseDict(hex_ids_to_base64(doc), ExportTraceServiceRequest())  # strict: unknown fields fail
    parsed = request.resource_spans[0].scope_spans[0].spans
    assert [s.name for s in parsed] == ["rollout.sample", "rollout.generate"]
    assert parsed[1].trace_id == bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
    assert parsed[0].parent_span_id == parsed[1].span_id
    resource = {a.key: a.value.string_value for a in request.resource_spans[0].resource.attributes}
    assert (resource["service.name"], resource["service.instance.id"]) == ("rollout", "2")
    assert to_otlp_json(from_otlp_json(json.loads(lines[0]))) == json.loads(lines[0])  # round trip


def test_load_spans_reads_otlp_records(tmp_path):
    tracer = tracing.init_tracing("reward", "1", "run-o", run_dir=tmp_path, make_current=False)
    try:
        make_spans(tracer)
    finally:
        tracing.shutdown_tracing(tracer)
    spans = {s["name"]: s for s in load_spans(tmp_path)}
    group = spans["rollout.generate"]
    assert (group["service"], group["replica"], group["kind"]) == ("reward", "1", "INTERNAL")
    assert group["parent_span_id"] == "b7ad6b7169203331"
    assert spans["rollout.sample"]["parent_span_id"] == group["span_id"]
    assert group["attributes"] == {
        "n": 4,
        "temperature": 0.5,
        "ok": True,
        "ids": [1, 2],
        "meshrl.group_id": "g-7",
        "meshrl.run_id": "run-o",
        "meshrl.policy_version": 3,
        "meshrl.component": "reward",
        "meshrl.replica": "1",
    }
    assert group["status"] == {"code": "UNSET", "description": None}
    assert group["end_unix_ns"] >= group["start_unix_ns"] > 1.6e18


def test_not_otlp_is_a_clear_error():
    with pytest.raises(ValueError, match="not OTLP JSON"):
        from_otlp_json({"resourceSpans": [{"bogus": 1}]})
    with pytest.raises(ValueError, match="expected an object"):
        from_otlp_json([1, 2])


def test_spans_reach_the_otlp_receiver_and_the_file(receiver, tmp_path):
    servicer, endpoint = receiver
    tracer = tracing.init_tracing(
        "reference", "0", "run-o", run_dir=tmp_path, otlp_endpoint=endpoint, make_current=False
    )
    try:
        make_spans(tracer)
    finally:
        tracing.shutdown_tracing(tracer)
    in_file = {s["span_id"] for s in load_spans(tmp_path)}
    assert len(in_file) == 2
    assert servicer.span_ids() == in_file
    resource = servicer.requests[0].resource_spans[0].resource
    assert {a.key: a.value.string_value for a in resource.attributes}["service.instance.id"] == "0"
