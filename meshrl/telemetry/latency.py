"""Latency histograms of every RPC and every pipeline stage, on the process's /metrics.

    meshrl_rpc_duration_seconds{rpc_side, rpc_service, rpc_method, rpc_grpc_status}
        one observation per gRPC call, client and server side (fed by spans/grpc.py's
        interceptors, which every channel and server of meshrl.transport.rpc installs)
    meshrl_stage_duration_seconds{stage}
        one observation per group stage span (tracing.group_span / step_span: rollout.generate,
        reward.score, reference.score, learner.step, ...)

Both record into `metrics.current()`, the endpoint this process started; with metrics off
they cost one function call. They are independent of tracing: a run with tracing off still
has its latency histograms. Try it: `python -m meshrl.telemetry.latency`.
"""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

from meshrl.telemetry import metrics

RPC_HISTOGRAM = "meshrl_rpc_duration"
STAGE_HISTOGRAM = "meshrl_stage_duration"


def record_rpc(side: str, method: str, status: str, seconds: float) -> None:
    """One finished call: side client|server, method /pkg.Service/Method, status OK|..."""
    handle = metrics.current()
    if handle is None:
        return
    service, _, name = method.lstrip("/").rpartition("/")
    handle.latency(RPC_HISTOGRAM, "gRPC call latency, by side, service, method and status").record(
        seconds, {"rpc_side": side, "rpc_service": service, "rpc_method": name, "rpc_grpc_status": status}
    )


def record_stage(stage: str, seconds: float) -> None:
    handle = metrics.current()
    if handle is not None:
        handle.latency(STAGE_HISTOGRAM, "time spent in one stage of a group or step").record(seconds, {"stage": stage})


@contextlib.contextmanager
def timed_stage(stage: str) -> Iterator[None]:
    """Record the block's wall time as one `stage` observation (also when it raises)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        record_stage(stage, time.perf_counter() - start)


if __name__ == "__main__":
    with metrics.start_metrics("demo", "0", "demo-run") as demo:
        with timed_stage("demo.stage"):
            time.sleep(0.01)
        record_rpc("client", "/meshrl.demo.v1.Demo/Call", "OK", 0.002)
        print(demo.scrape())
