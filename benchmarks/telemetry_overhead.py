"""What observability costs per call: a latency histogram observation, an OTLP JSON batch.

    .venv/bin/python -m benchmarks.telemetry_overhead

Prints, on this machine: the time of one `record_rpc` (what every gRPC call pays on each
side when metrics are on) and of one `timed_stage` block, with and without a metrics
endpoint; the time to encode and write a 50-span batch as one OTLP JSON line, per span; and
the size of a full /metrics scrape of a learner endpoint after one real-shaped step.
Simplified: single thread, no HTTP in the timed parts, the best of 5 repeats.
"""

from __future__ import annotations

import tempfile
import time
import timeit

from opentelemetry.sdk.trace import SpanProcessor

from meshrl.telemetry import tracing
from meshrl.telemetry.latency import record_rpc, timed_stage
from meshrl.telemetry.metrics import start_metrics
from meshrl.telemetry.spans.export import otlp_json_line

N = 20_000
TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def per_call_us(stmt, number: int = N) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=5)) / number * 1e6


def stage_block() -> None:
    with timed_stage("rollout.generate"):
        pass


def histogram_figures() -> None:
    rpc = lambda: record_rpc("client", "/meshrl.reward.v1.RewardService/Score", "OK", 0.01)  # noqa: E731
    print(f"record_rpc, metrics off:   {per_call_us(rpc):6.2f} µs/call")
    print(f"timed_stage, metrics off:  {per_call_us(stage_block):6.2f} µs/block")
    with start_metrics("bench", "0", "bench-run") as handle:
        print(f"record_rpc, metrics on:    {per_call_us(rpc):6.2f} µs/call")
        print(f"timed_stage, metrics on:   {per_call_us(stage_block):6.2f} µs/block")
        handle.set_values(
            {
                k: 0.5
                for k in (
                    "reward",
                    "kl",
                    "entropy",
                    "loss",
                    "grad_norm",
                    "time/step",
                    "time/forward",
                    "time/backward",
                    "groups/trained_total",
                )
            }
        )
        print(f"/metrics scrape after one step: {len(handle.scrape().encode()) / 1024:.1f} KiB")


def otlp_figures() -> None:
    spans = []

    class Keep(SpanProcessor):  # keeps the finished spans, to time the encoding alone
        def on_end(self, span):
            spans.append(span)

    with tempfile.TemporaryDirectory() as run_dir:
        tracer = tracing.init_tracing("bench", "0", "bench-run", run_dir=run_dir, make_current=False)
        tracer.provider.add_span_processor(Keep())
        for i in range(50):
            with tracer.group_span("rollout.generate", f"g-{i:04d}", headers={"traceparent": TP}, policy_version=1):
                pass
        tracing.shutdown_tracing(tracer)
    start = time.perf_counter()
    for _ in range(100):
        line = otlp_json_line(spans)
    per_span = (time.perf_counter() - start) / 100 / len(spans) * 1e6
    print(
        f"OTLP JSON encode, 50-span batch: {per_span:.1f} µs/span, {len(line) / len(spans):.0f} bytes/span; "
        f"a 1-span batch: {len(otlp_json_line(spans[:1]))} bytes"
    )


if __name__ == "__main__":
    histogram_figures()
    otlp_figures()
