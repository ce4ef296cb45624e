"""Prometheus metrics for one service process, through OpenTelemetry.

    handle = start_metrics("rollout", replica="0", run_id=run_id, port=0)
    groups = handle.counter("meshrl_groups_generated_total", "groups published")
    groups.add(1)
    handle.gauge("meshrl_queue_depth", lambda: queue.qsize(), "tasks waiting")
    handle.set_values({"reward": 0.4, "clip_ratio/low": 0.01})   # learner: last step's numbers
    ...
    handle.close()

`curl http://127.0.0.1:{handle.port}/metrics` then shows every instrument with the labels
`service`, `replica` and `run` (OpenTelemetry resource attributes copied onto each series, so
one Prometheus job can scrape every replica of every service), plus resource gauges:

    meshrl_process_cpu_cores       cores busy, this process and its children (1.0 = one core)
    meshrl_process_memory_rss_bytes  resident memory of the same process tree
    meshrl_gpu_utilization_ratio / meshrl_gpu_memory_{allocated,reserved}_bytes  (label gpu;
                                   only when torch is imported and CUDA is available)

Simplifications: each handle has its own MeterProvider and Prometheus registry (nothing is
installed globally, so several handles can live in one test process); the endpoint listens
on 127.0.0.1 only — expose it beyond the host through the deployment (a Service port), not
by binding 0.0.0.0 here. Run a demo with `python -m meshrl.ops.telemetry.metrics`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from prometheus_client import CollectorRegistry, generate_latest, start_http_server

from meshrl.ops.telemetry.resources import ProcessSampler, gpu_samples

LABELS = ("service", "replica", "run")
GaugeValue = float | int | None | Iterable[tuple[float, dict[str, Any]]]
_PROM_NAME = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(key: str, prefix: str = "") -> str:
    """`clip_ratio/low` -> `{prefix}clip_ratio_low`: a metrics.jsonl key as a Prometheus name."""
    name = _PROM_NAME.sub("_", f"{prefix}{key}")
    return f"_{name}" if name[:1].isdigit() else name


def _observations(value: GaugeValue) -> list[Observation]:
    """A callback's result as observations: a number, None (nothing this time) or pairs."""
    if value is None:
        return []
    if isinstance(value, (int, float)):
        return [Observation(float(value))] if math.isfinite(value) else []
    return [Observation(float(v), dict(attrs)) for v, attrs in value if math.isfinite(v)]


@dataclass
class MetricsHandle:
    """A running metrics endpoint; create instruments through it, `close()` when done."""

    service: str
    replica: str
    run_id: str
    port: int
    provider: MeterProvider
    registry: CollectorRegistry
    _server: Any
    _thread: Any
    _instruments: dict[str, Any] = field(default_factory=dict)
    _values: dict[str, float] = field(default_factory=dict)

    @property
    def meter(self):
        """The OpenTelemetry meter, for instrument kinds the helpers do not cover."""
        return self.provider.get_meter("meshrl")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def _instrument(self, kind: str, name: str, make: Callable[[], Any]) -> Any:
        known = self._instruments.get(name)
        if known is not None:
            if known[0] != kind:
                raise ValueError(f"metric {name!r} already exists as a {known[0]}, not a {kind}; "
                                 f"pick another name")
            return known[1]
        instrument = make()
        self._instruments[name] = (kind, instrument)
        return instrument

    def counter(self, name: str, description: str = "", unit: str = ""):
        """A monotonic counter (`.add(n, {"label": "x"})`); the same name gives the same one."""
        return self._instrument("counter", name, lambda: self.meter.create_counter(
            name, unit=unit, description=description))

    def histogram(self, name: str, description: str = "", unit: str = "",
                  buckets: list[float] | None = None):
        """A histogram (`.record(x)`); `buckets` sets explicit bucket bounds."""
        return self._instrument("histogram", name, lambda: self.meter.create_histogram(
            name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets))

    def gauge(self, name: str, callback: Callable[[], GaugeValue], description: str = "",
              unit: str = ""):
        """An observable gauge read at scrape time: `callback()` returns a number, None
        (no sample) or `[(value, {"label": ...}), ...]`. Non-finite values are dropped."""
        return self._instrument("gauge", name, lambda: self.meter.create_observable_gauge(
            name, callbacks=[lambda _options: _observations(callback())],
            unit=unit, description=description))

    def set_values(self, values: dict[str, Any], prefix: str = "meshrl_train_") -> None:
        """Publish the latest value of each number (e.g. one learner step's metrics) as a
        gauge `{prefix}{key}`; non-numbers and NaN/None are skipped (the gauge keeps its
        last finite value)."""
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if not math.isfinite(value):
                continue
            name = prometheus_name(key, prefix)
            if name not in self._values:
                self.gauge(name, lambda name=name: self._values.get(name), f"learner metric {key}")
            self._values[name] = float(value)

    def scrape(self) -> str:
        """The text a Prometheus scrape would get, without HTTP (for logs and debugging)."""
        return generate_latest(self.registry).decode()

    def close(self) -> None:
        """Stop the HTTP endpoint and the meter provider. Safe to call twice."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self.provider.shutdown()
        self._server = None

    def __enter__(self) -> "MetricsHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _add_resource_gauges(handle: MetricsHandle) -> None:
    sampler = ProcessSampler()
    handle.gauge("meshrl_process_cpu_cores", sampler.cpu_cores,
                 "CPU cores busy since the last scrape, process and children (1.0 = one core)")
    handle.gauge("meshrl_process_memory_rss", sampler.rss_bytes,
                 "resident memory of the process and its children", unit="By")

    def gpu(key: str) -> Callable[[], GaugeValue]:
        return lambda: [(v[key], {"gpu": str(i)}) for i, v in gpu_samples() if key in v]

    handle.gauge("meshrl_gpu_utilization_ratio", gpu("utilization"), "GPU busy fraction (NVML)")
    for key in ("memory_allocated", "memory_reserved"):
        handle.gauge(f"meshrl_gpu_{key}", gpu(key), f"torch.cuda.{key}()", unit="By")


def start_metrics(service: str, replica: str, run_id: str, port: int = 0) -> MetricsHandle:
    """Serve this process's metrics on http://127.0.0.1:{port}/metrics (0 = a free port).

    Every series carries the labels service, replica and run. Raises OSError naming the port
    when it is taken.
    """
    resource = Resource.create({"service.name": f"meshrl-{service}", "service.instance.id":
                                f"{service}-{replica}", "service": service,
                                "replica": str(replica), "run": run_id})
    registry = CollectorRegistry(auto_describe=True)
    reader = PrometheusMetricReader(scope_info_enabled=False, registry=registry,
                                    resource_attribute_filter=lambda key: key in LABELS)
    provider = MeterProvider(resource=resource, metric_readers=[reader])
    try:
        server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    except OSError as err:
        provider.shutdown()
        raise OSError(f"metrics endpoint for {service}-{replica} cannot listen on "
                      f"127.0.0.1:{port}: {err.strerror or err}; pick a free port or 0") from err
    handle = MetricsHandle(service, str(replica), run_id, server.server_port, provider,
                           registry, server, thread)
    _add_resource_gauges(handle)
    return handle


if __name__ == "__main__":
    with start_metrics("demo", "0", "demo-run") as demo:
        demo.counter("meshrl_demo_events_total", "demo events").add(3)
        print(demo.scrape())
