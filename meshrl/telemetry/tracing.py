"""Cross-service tracing: one trace per prompt group, the learner's step span links to them.

    tracer = init_tracing("rollout", "0", run_id, run_dir="runs/x")   # once per process
    with group_span("rollout.generate", task.group_id, headers=ctx.headers,
                    policy_version=version):                          # child of the hop before
        ...
        await bus.publish("generated", group, msg_id=group.group_id, headers=inject_headers())
    shutdown_tracing()                                                # flush before exit

The learner starts each group's trace when it publishes the PromptTask
(`start_root_group_span`), and `step_span(step, [d.headers for d in batch])` makes a span
of its own trace that LINKS to every group it trained on (a step is many-to-one; W3C
parentage cannot express it, links can). Every span carries `meshrl.run_id` and
`meshrl.policy_version` (explicit, else from W3C baggage sent by the hop before, else the
process's current version set with `set_policy_version`).

Export: OTLP JSON lines in `RUN_DIR/traces/<service>-<replica>.jsonl` whenever a run dir is
given (read by `meshrl trace`, importable by Jaeger or Tempo), and at the same time OTLP to a
collector when an endpoint is given (or OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT is set; an URL
ending in /v1/traces uses OTLP/HTTP, anything else OTLP/gRPC). Neither → tracing is off: helpers then only pass incoming trace headers through.
Simplification: always sampled (a group makes ≈5 spans); the global OTel provider is left
alone so several tracers can live in one process (tests simulate a mesh in one process).
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Iterator, Mapping, Sequence
from urllib.parse import urlsplit

from opentelemetry import baggage, trace
from opentelemetry import context as context_api
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Link, SpanKind

from meshrl.telemetry.latency import timed_stage
from meshrl.telemetry.spans.propagation import (
    GROUP_ID_KEY,
    POLICY_VERSION_KEY,
    RUN_ID_KEY,
    extract_context,
    has_trace,
    inject_headers,
    with_meshrl_baggage,
)

log = logging.getLogger(__name__)
MSG_ID_HEADER = "Nats-Msg-Id"  # the group id on every stage message (dedup id)
STEP_KEY = "meshrl.step"
OTLP_ENV = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


class Tracer:
    """One process's tracer: service identity, run id, current policy version, OTel tracer.

    A disabled Tracer (`Tracer.disabled()`) creates no spans and costs a dict lookup per call.
    """

    def __init__(self, service: str, replica: str, run_id: str, otel=None, provider=None):
        self.service, self.replica, self.run_id = service, replica, run_id
        self.otel, self.provider = otel or trace.NoOpTracer(), provider
        self.policy_version: int | None = None
        self.broker: dict = {}  # the NATS server group spans' messages go through (set_broker)

    @classmethod
    def disabled(cls) -> "Tracer":
        return cls("", "", "")

    @property
    def enabled(self) -> bool:
        return self.provider is not None

    def set_policy_version(self, version: int) -> None:
        """Stamp `version` on spans that get none explicitly or from baggage (rollout, learner)."""
        self.policy_version = int(version)

    def set_broker(self, nats_url: str) -> None:
        """Group spans name the NATS server their message came through or goes to
        (messaging.system, server.address, server.port); credentials in the URL are dropped."""
        self.broker = broker_attributes(nats_url)

    @contextlib.contextmanager
    def group_span(
        self,
        name: str,
        group_id: str,
        *,
        headers: Mapping[str, str] | None = None,
        attributes: Mapping | None = None,
        policy_version: int | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Iterator[trace.Span]:
        """A span of group `group_id`'s trace: child of the context in `headers`, else a new root."""
        if not self.enabled:
            with _passthrough(headers):
                yield INVALID_SPAN
            return
        parent = extract_context(headers)
        version = _first_int(policy_version, baggage.get_baggage(POLICY_VERSION_KEY, parent), self.policy_version)
        attrs = {**self.broker, **(attributes or {}), GROUP_ID_KEY: group_id, RUN_ID_KEY: self.run_id}
        if version is not None:
            attrs[POLICY_VERSION_KEY] = version
        with self._span_in(with_meshrl_baggage(parent, self.run_id, version), name, kind, attrs) as span:
            yield span

    def start_root_group_span(
        self,
        group_id: str,
        *,
        name: str = "learner.publish_prompt",
        attributes: Mapping | None = None,
        policy_version: int | None = None,
    ):
        """The first span of a group's trace (the learner, as it publishes the PromptTask).

        Use as `with tracer.start_root_group_span(gid): await bus.publish(..., headers=inject_headers())`.
        """
        return self.group_span(
            name, group_id, headers=None, attributes=attributes, policy_version=policy_version, kind=SpanKind.PRODUCER
        )

    @contextlib.contextmanager
    def step_span(
        self,
        step: int,
        linked_headers: Sequence[Mapping[str, str]],
        *,
        attributes: Mapping | None = None,
        name: str = "learner.step",
    ) -> Iterator[trace.Span]:
        """A root span for one training step, LINKED to each trained group's trace."""
        if not self.enabled:
            yield INVALID_SPAN
            return
        links = group_links(linked_headers)
        attrs = {**(attributes or {}), STEP_KEY: int(step), "meshrl.groups": len(links), RUN_ID_KEY: self.run_id}
        if self.policy_version is not None:
            attrs[POLICY_VERSION_KEY] = self.policy_version
        with self._span_in(
            with_meshrl_baggage(Context(), self.run_id, self.policy_version), name, SpanKind.INTERNAL, attrs, links
        ) as span:
            yield span

    @contextlib.contextmanager
    def _span_in(
        self, ctx: Context, name: str, kind: SpanKind, attrs: dict, links: Sequence[Link] = ()
    ) -> Iterator[trace.Span]:
        # Attach ctx first: start_as_current_span builds the new current context from the
        # *current* one, so the baggage must already be there to reach child spans.
        token = context_api.attach(ctx)
        try:
            with self.otel.start_as_current_span(name, kind=kind, attributes=attrs, links=links) as span:
                yield span
        finally:
            context_api.detach(token)

    def force_flush(self, timeout_s: float = 5.0) -> bool:
        return self.provider.force_flush(int(timeout_s * 1000)) if self.enabled else True

    def shutdown(self) -> None:
        if self.enabled:
            self.provider.shutdown()


def broker_attributes(nats_url: str) -> dict:
    """`nats://user:secret@host:4222,nats://b:4222` -> the first server's host and port only."""
    parts = urlsplit(nats_url.split(",")[0].strip())
    if not parts.hostname:
        return {"messaging.system": "nats"}
    return {"messaging.system": "nats", "server.address": parts.hostname, "server.port": parts.port or 4222}


def group_links(linked_headers: Sequence[Mapping[str, str]]) -> list[Link]:
    """One Link per headers dict that carries a trace, tagged with its group id (Nats-Msg-Id)."""
    links = []
    for headers in linked_headers:
        ctx = trace.get_current_span(extract_context(headers)).get_span_context()
        if ctx.is_valid:
            group_id = (headers or {}).get(MSG_ID_HEADER)
            links.append(Link(ctx, {GROUP_ID_KEY: group_id} if group_id else None))
    return links


@contextlib.contextmanager
def _passthrough(headers: Mapping[str, str] | None) -> Iterator[None]:
    """Tracing off here: keep the incoming trace current so inject_headers forwards it."""
    if not has_trace(headers):
        yield
        return
    token = context_api.attach(extract_context(headers))
    try:
        yield
    finally:
        context_api.detach(token)


def _first_int(*values) -> int | None:
    for value in values:
        if value is not None and value != "":
            return int(value)
    return None


# ---- process-wide state ----------------------------------------------------------------

_DISABLED = Tracer.disabled()
_current: Tracer = _DISABLED
_live: list[Tracer] = []


def init_tracing(
    service: str,
    replica: str,
    run_id: str,
    run_dir: str | Path | None = None,
    otlp_endpoint: str | None = None,
    *,
    make_current: bool = True,
) -> Tracer:
    """Set up this process's tracer (see the module docstring); returns it."""
    from meshrl.telemetry.spans.setup import build_provider

    endpoint = otlp_endpoint or next((os.environ[k] for k in OTLP_ENV if os.environ.get(k)), None)
    if not endpoint and run_dir is None:
        log.info("tracing off for %s-%s: no OTLP endpoint and no run dir", service, replica)
        return _DISABLED
    tracer = Tracer(service, str(replica), run_id)
    tracer.provider = build_provider(tracer, run_dir=run_dir, otlp_endpoint=endpoint)
    tracer.otel = tracer.provider.get_tracer("meshrl.telemetry.tracing")
    _live.append(tracer)
    if make_current:
        global _current
        _current = tracer
    return tracer


def start_tracing(cfg, service: str, replica: str, run_id: str) -> Tracer:
    """`init_tracing` from a RunConfig's `telemetry` section (off when tracing is false)."""
    if not cfg.telemetry.tracing:
        return _DISABLED
    return init_tracing(service, replica, run_id, run_dir=cfg.run.dir, otlp_endpoint=cfg.telemetry.otlp_endpoint)


def current_tracer() -> Tracer:
    return _current


def shutdown_tracing(tracer: Tracer | None = None) -> None:
    """Flush and stop `tracer` (default: every tracer this process made). Safe to call twice."""
    global _current
    for t in [tracer] if tracer is not None else list(_live):
        t.shutdown()
        if t in _live:
            _live.remove(t)
        if t is _current:
            _current = _DISABLED


def set_policy_version(version: int) -> None:
    _current.set_policy_version(version)


def set_broker(nats_url: str) -> None:
    _current.set_broker(nats_url)


@contextlib.contextmanager
def group_span(
    name: str,
    group_id: str,
    *,
    headers: Mapping[str, str] | None = None,
    attributes: Mapping | None = None,
    policy_version: int | None = None,
):
    """`current_tracer().group_span(...)`: a span of the group's trace (see Tracer.group_span);
    its duration also goes to meshrl_stage_duration_seconds{stage=name} (tracing on or off)."""
    with (
        timed_stage(name),
        _current.group_span(
            name, group_id, headers=headers, attributes=attributes, policy_version=policy_version
        ) as span,
    ):
        yield span


def start_root_group_span(
    group_id: str,
    *,
    name: str = "learner.publish_prompt",
    attributes: Mapping | None = None,
    policy_version: int | None = None,
):
    return _current.start_root_group_span(group_id, name=name, attributes=attributes, policy_version=policy_version)


@contextlib.contextmanager
def step_span(step: int, linked_headers: Sequence[Mapping[str, str]], *, attributes: Mapping | None = None):
    with timed_stage("learner.step"), _current.step_span(step, linked_headers, attributes=attributes) as span:
        yield span


__all__ = [
    "Tracer",
    "init_tracing",
    "start_tracing",
    "shutdown_tracing",
    "current_tracer",
    "set_policy_version",
    "set_broker",
    "broker_attributes",
    "group_span",
    "start_root_group_span",
    "step_span",
    "group_links",
    "inject_headers",
    "extract_context",
]
