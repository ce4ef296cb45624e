"""Build a TracerProvider for one meshrl process: resource, run-id/version stamping, exporters.

Resource: service.name, service.instance.id (the replica), service.namespace=meshrl,
meshrl.run_id. `StampProcessor` puts meshrl.component and meshrl.replica on every span, and
meshrl.run_id and meshrl.policy_version on every span that lacks them (from W3C baggage of
the parent context, else the process's tracer), so gRPC client/server spans carry them too.
Exporters, each behind its own batch processor (a collector that is down never delays the
file): OTLP JSON lines in RUN_DIR/traces/ whenever there is a run dir, so `meshrl trace`
works with a collector configured too, and OTLP (gRPC, or HTTP for a URL ending in
/v1/traces) when an endpoint is given.
"""

from __future__ import annotations

from pathlib import Path

from opentelemetry import baggage
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from meshrl.telemetry.spans.export import OtlpJsonFileExporter, traces_file
from meshrl.telemetry.spans.propagation import POLICY_VERSION_KEY, RUN_ID_KEY

EXPORT_DELAY_MS = 1000
COMPONENT_KEY = "meshrl.component"
REPLICA_KEY = "meshrl.replica"  # a debug session sees spans within a second


class StampProcessor(SpanProcessor):
    """Adds meshrl.run_id / meshrl.policy_version to spans started without them."""

    def __init__(self, tracer):
        self.tracer = tracer  # meshrl.telemetry.tracing.Tracer (its policy_version changes)

    def on_start(self, span, parent_context=None) -> None:
        attrs = span.attributes or {}
        # On the span too, not only the resource: a file or UI that flattens resources away
        # (and the gateway's waterfall) still tells which component and replica made it.
        span.set_attribute(COMPONENT_KEY, self.tracer.service)
        span.set_attribute(REPLICA_KEY, self.tracer.replica)
        if RUN_ID_KEY not in attrs:
            span.set_attribute(RUN_ID_KEY, baggage.get_baggage(RUN_ID_KEY, parent_context) or self.tracer.run_id)
        if POLICY_VERSION_KEY not in attrs:
            version = baggage.get_baggage(POLICY_VERSION_KEY, parent_context)
            version = self.tracer.policy_version if version is None else version
            if version is not None:
                span.set_attribute(POLICY_VERSION_KEY, int(version))


def otlp_exporter(endpoint: str) -> SpanExporter:
    """OTLP/HTTP for `.../v1/traces`, OTLP/gRPC otherwise (e.g. `http://collector:4317`)."""
    if endpoint.rstrip("/").endswith("/v1/traces"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        return HttpExporter(endpoint=endpoint)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

    return GrpcExporter(endpoint=endpoint, insecure=not endpoint.startswith("https://"))


def make_exporters(tracer, run_dir: str | Path | None, otlp_endpoint: str | None) -> list[SpanExporter]:
    """The file exporter (with a run dir) and the OTLP one (with an endpoint); at least one."""
    if not otlp_endpoint and run_dir is None:
        raise ValueError("tracing needs an OTLP endpoint or a run dir for RUN_DIR/traces/*.jsonl")
    exporters: list[SpanExporter] = []
    if run_dir is not None:
        exporters.append(OtlpJsonFileExporter(traces_file(run_dir, tracer.service, tracer.replica)))
    if otlp_endpoint:
        exporters.append(otlp_exporter(otlp_endpoint))
    return exporters


def build_provider(tracer, *, run_dir: str | Path | None, otlp_endpoint: str | None) -> TracerProvider:
    resource = Resource.create(
        {
            "service.name": tracer.service,
            "service.instance.id": tracer.replica,
            "service.namespace": "meshrl",
            RUN_ID_KEY: tracer.run_id,
        }
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(StampProcessor(tracer))
    for exporter in make_exporters(tracer, run_dir, otlp_endpoint):
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=EXPORT_DELAY_MS))
    return provider
