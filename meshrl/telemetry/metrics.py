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
one Prometheus job can scrape every replica of every service; the component is a label, never
part of a metric name), plus the process's own cost:

    process_cpu_seconds_total, process_resident_memory_bytes, ...   prometheus_client's
                                   standard process collector (this process only)
    meshrl_child_processes_cpu_seconds_total / meshrl_child_processes_resident_memory_bytes
                                   the same for its children (a rollout's vLLM engine core)
    meshrl_gpu_utilization_ratio / meshrl_gpu_memory_{allocated,reserved}_bytes  (label gpu;
                                   only when torch is imported and CUDA is available)
    meshrl_rpc_duration_seconds / meshrl_stage_duration_seconds    latency histograms fed by
                                   the gRPC interceptors and tracing.group_span (`current()`)

Every name passes `promtool check metrics` (base units, `_total` only on counters).
Simplifications: each handle has its own MeterProvider and Prometheus registry (nothing is
installed globally, so several handles can live in one test process; the last one started is
`current()`); the endpoint listens on MESHRL_BIND_HOST (127.0.0.1 unless set; 0.0.0.0 in
the compose and Kubernetes deployments, so Prometheus can scrape the pod) and its `url`
names MESHRL_ADVERTISE_HOST (meshrl.addresses). Run a demo with
`python -m meshrl.telemetry.metrics`.
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
from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest, start_http_server

from meshrl.addresses import advertise_host, bind_host, host_port
from meshrl.telemetry.resources import ProcessSampler, gpu_samples

LABELS = ("service", "replica", "run")
GaugeValue = float | int | None | Iterable[tuple[float, dict[str, Any]]]
_PROM_NAME = re.compile(r"[^a-zA-Z0-9_]")
# Bucket bounds in seconds for RPC and stage latencies (OTel's defaults are milliseconds).
LATENCY_BUCKETS_S = [
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
]
# promtool rejects abbreviated units: a key ending in one is renamed to the base unit and its
# value scaled to it (`latency_ms` 250 -> `latency_seconds` 0.25).
UNIT_SUFFIXES = {
    "_s": ("_seconds", 1.0),
    "_sec": ("_seconds", 1.0),
    "_secs": ("_seconds", 1.0),
    "_ms": ("_seconds", 1e-3),
    "_us": ("_seconds", 1e-6),
    "_ns": ("_seconds", 1e-9),
    "_b": ("_bytes", 1.0),
    "_kb": ("_bytes", 1e3),
    "_mb": ("_bytes", 1e6),
    "_gb": ("_bytes", 1e9),
}
_current: "MetricsHandle | None" = None


def prometheus_name(key: str, prefix: str = "") -> str:
    """`clip_ratio/low` -> `{prefix}clip_ratio_low`: a metrics.jsonl key as a Prometheus name."""
    name = _PROM_NAME.sub("_", f"{prefix}{key}")
    return f"_{name}" if name[:1].isdigit() else name


# Learner keys whose name needs a unit it does not carry (promtool wants one in the name).
UNIT_NAMES = {"perf/throughput": "perf/throughput_tokens_per_second"}
# Key families whose last part is a name (a phase, stage, reason): one gauge, that part a label.
LABELLED = {
    "time/": ("step_phase_seconds", "phase"),
    "queue/": ("queue_depth", "stage"),
    "groups/dropped_": ("groups_dropped", "reason"),
}
# `reward/<x>` keys that are statistics of the total reward, not a reward component.
REWARD_STATS = ("min", "max", "std", "mean")


def labelled_series(key: str, prefix: str) -> tuple[str, dict[str, str]] | None:
    """`time/forward` -> `{prefix}step_phase_seconds{phase="forward"}`, `queue/generate` ->
    `{prefix}queue_depth{stage="generate"}`, `reward/format` -> `{prefix}reward_component
    {component="format"}`, `reward/format_failed` -> `{prefix}reward_component_failed_scores
    {component="format"}`: one metric per family, the name a label; None for other keys."""
    for family, (name, label) in LABELLED.items():
        if key.startswith(family) and key != family:
            return f"{prefix}{name}", {label: key.removeprefix(family)}
    head, _, component = key.partition("/")
    if head != "reward" or not component or component in REWARD_STATS:
        return None
    if component.endswith("_failed"):
        return f"{prefix}reward_component_failed_scores", {"component": component.removesuffix("_failed")}
    return f"{prefix}reward_component", {"component": component}


def train_series(key: str, prefix: str = "meshrl_train_") -> tuple[str, dict[str, str], float]:
    """A metrics.jsonl key as (gauge name, labels, scale) that promtool accepts.

    `time` (a unix time) -> `{prefix}timestamp_seconds`; a key of a LABELLED family or a
    reward component -> one gauge per family with a label (labelled_series: the step-time
    split, queue depths, dropped groups, reward components); `perf/throughput` ->
    `..._perf_throughput_tokens_per_second` (UNIT_NAMES); `groups/trained_total` ->
    `..._groups_trained` (`_total` is for counters only); an abbreviated unit suffix becomes
    its base unit (see UNIT_SUFFIXES).
    """
    if key == "time":
        return f"{prefix}timestamp_seconds", {}, 1.0
    if (labelled := labelled_series(key, prefix)) is not None:
        return *labelled, 1.0
    name, scale = prometheus_name(UNIT_NAMES.get(key, key), prefix).removesuffix("_total"), 1.0
    for suffix, (unit, factor) in UNIT_SUFFIXES.items():
        if name.lower().endswith(suffix):
            name, scale = name[: -len(suffix)] + unit, factor
            break
    return name, {}, scale


def current() -> "MetricsHandle | None":
    """The handle most recently started in this process (None: metrics are off); the gRPC
    interceptors and group spans record their latencies there."""
    return _current


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
    _values: dict[str, dict[tuple, float]] = field(default_factory=dict)

    @property
    def meter(self):
        """The OpenTelemetry meter, for instrument kinds the helpers do not cover."""
        return self.provider.get_meter("meshrl")

    @property
    def url(self) -> str:
        return f"http://{host_port(advertise_host(), self.port)}/metrics"

    def _instrument(self, kind: str, name: str, make: Callable[[], Any]) -> Any:
        known = self._instruments.get(name)
        if known is not None:
            if known[0] != kind:
                raise ValueError(f"metric {name!r} already exists as a {known[0]}, not a {kind}; pick another name")
            return known[1]
        instrument = make()
        self._instruments[name] = (kind, instrument)
        return instrument

    def counter(self, name: str, description: str = "", unit: str = ""):
        """A monotonic counter (`.add(n, {"label": "x"})`); the same name gives the same one."""
        return self._instrument(
            "counter", name, lambda: self.meter.create_counter(name, unit=unit, description=description)
        )

    def histogram(self, name: str, description: str = "", unit: str = "", buckets: list[float] | None = None):
        """A histogram (`.record(x)`); `buckets` sets explicit bucket bounds."""
        return self._instrument(
            "histogram",
            name,
            lambda: self.meter.create_histogram(
                name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets
            ),
        )

    def gauge(self, name: str, callback: Callable[[], GaugeValue], description: str = "", unit: str = ""):
        """An observable gauge read at scrape time: `callback()` returns a number, None
        (no sample) or `[(value, {"label": ...}), ...]`. Non-finite values are dropped."""
        return self._instrument(
            "gauge",
            name,
            lambda: self.meter.create_observable_gauge(
                name, callbacks=[lambda _options: _observations(callback())], unit=unit, description=description
            ),
        )

    def set_values(self, values: dict[str, Any], prefix: str = "meshrl_train_") -> None:
        """Publish the latest value of each number (e.g. one learner step's metrics) as a
        gauge named by `train_series(key, prefix)`. A NaN/inf keeps the gauge at its last
        finite value and adds 1 to `{prefix}nonfinite_values_total{metric=key}` (0 for a
        finite one, so the series exists before its first NaN and `increase()` sees it);
        non-numbers and None are skipped."""
        nonfinite = self.counter(f"{prefix}nonfinite_values_total", "steps whose value of `metric` was NaN or infinite")
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            nonfinite.add(0 if math.isfinite(value) else 1, {"metric": key})
            if not math.isfinite(value):
                continue
            name, labels, scale = train_series(key, prefix)
            if name not in self._values:
                self._values[name] = {}
                self.gauge(
                    name,
                    lambda name=name: [(v, dict(k)) for k, v in self._values[name].items()],
                    f"learner metric {key}" if not labels else f"learner metrics by {', '.join(labels)}",
                )
            self._values[name][tuple(sorted(labels.items()))] = float(value) * scale

    def latency(self, name: str, description: str):
        """A seconds histogram with LATENCY_BUCKETS_S (`name` without the `_seconds`)."""
        return self.histogram(name, description, unit="s", buckets=LATENCY_BUCKETS_S)

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
        global _current
        if _current is self:
            _current = None

    def __enter__(self) -> "MetricsHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _add_resource_gauges(handle: MetricsHandle) -> None:
    ProcessCollector(registry=handle.registry)  # process_cpu_seconds_total & co., this process
    sampler = ProcessSampler()
    handle._instrument(
        "counter",
        "meshrl_child_processes_cpu",
        lambda: handle.meter.create_observable_counter(
            "meshrl_child_processes_cpu",
            callbacks=[lambda _o: _observations(sampler.children_cpu_seconds())],
            unit="s",
            description="CPU time of this process's children (user + system), seconds",
        ),
    )
    handle.gauge(
        "meshrl_child_processes_resident_memory",
        sampler.children_rss_bytes,
        "resident memory of this process's live children",
        unit="By",
    )

    def gpu(key: str) -> Callable[[], GaugeValue]:
        return lambda: [(v[key], {"gpu": str(i)}) for i, v in gpu_samples() if key in v]

    handle.gauge("meshrl_gpu_utilization_ratio", gpu("utilization"), "GPU busy fraction (NVML)")
    for key in ("memory_allocated", "memory_reserved"):
        handle.gauge(f"meshrl_gpu_{key}", gpu(key), f"torch.cuda.{key}()", unit="By")


def start_metrics(service: str, replica: str, run_id: str, port: int = 0) -> MetricsHandle:
    """Serve this process's metrics on http://BIND_HOST:{port}/metrics (0 = a free port).

    Every series carries the labels service, replica and run. Raises OSError naming the port
    when it is taken.
    """
    provider, registry = _meter_provider(service, replica, run_id)
    server, thread = _serve(port, registry, provider, f"{service}-{replica}")
    handle = MetricsHandle(service, str(replica), run_id, server.server_port, provider, registry, server, thread)
    _add_resource_gauges(handle)
    global _current
    _current = handle
    return handle


def _meter_provider(service: str, replica: str, run_id: str) -> tuple[MeterProvider, CollectorRegistry]:
    """An OpenTelemetry meter provider read into a Prometheus registry of its own; only the
    resource attributes in LABELS become labels of every series."""
    resource = Resource.create(
        {
            "service.name": f"meshrl-{service}",
            "service.instance.id": f"{service}-{replica}",
            "service": service,
            "replica": str(replica),
            "run": run_id,
        }
    )
    registry = CollectorRegistry(auto_describe=True)
    reader = PrometheusMetricReader(
        scope_info_enabled=False, registry=registry, resource_attribute_filter=lambda key: key in LABELS
    )
    return MeterProvider(resource=resource, metric_readers=[reader]), registry


def _serve(port: int, registry: CollectorRegistry, provider: MeterProvider, who: str):
    """(server, thread) of the /metrics endpoint; a taken port shuts the provider down and is named."""
    try:
        return start_http_server(port, addr=bind_host(), registry=registry)
    except OSError as err:
        provider.shutdown()
        raise OSError(
            f"metrics endpoint for {who} cannot listen on "
            f"{host_port(bind_host(), port)}: {err.strerror or err}; pick a free port or 0"
        ) from err


if __name__ == "__main__":
    with start_metrics("demo", "0", "demo-run") as demo:
        demo.counter("meshrl_demo_events_total", "demo events").add(3)
        print(demo.scrape())
