"""W3C trace context in NATS headers and gRPC metadata, by hand (nats-py has no instrumentation).

    headers = inject_headers({"x": "y"})        # + traceparent (+ baggage) of the current span
    ctx = extract_context(delivery.headers)     # a Context to start a child span in

Two W3C headers travel: `traceparent` (trace id, parent span id, sampled flag) and `baggage`
(meshrl.run_id, meshrl.policy_version of the group, so a service that never saw the group,
such as an external reward server, still stamps them on its spans). Lookup is
case-insensitive: gRPC lowercases metadata keys, NATS keeps them as sent.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from opentelemetry import baggage, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

PROPAGATOR = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])
TRACE_KEYS = ("traceparent", "tracestate", "baggage")
RUN_ID_KEY = "meshrl.run_id"
POLICY_VERSION_KEY = "meshrl.policy_version"
GROUP_ID_KEY = "meshrl.group_id"


class _CaseInsensitiveGetter(Getter[Mapping[str, str]]):
    def get(self, carrier: Mapping[str, str], key: str) -> list[str] | None:
        value = carrier.get(key)
        if value is None:
            value = next((v for k, v in carrier.items() if k.lower() == key), None)
        return None if value is None else [value]

    def keys(self, carrier: Mapping[str, str]) -> list[str]:
        return list(carrier.keys())


GETTER = _CaseInsensitiveGetter()


def inject_headers(headers: Mapping[str, str] | None = None, *, context: Context | None = None) -> dict[str, str]:
    """A copy of `headers` plus the trace headers of `context` (default: the current one).

    Nothing is added when there is no valid span (tracing off and no incoming trace).
    """
    out = dict(headers or {})
    if context is None and not _current_has_trace():
        return out  # the disabled path: no span, no baggage, nothing to send
    PROPAGATOR.inject(out, context=context)
    return out


def _current_has_trace() -> bool:
    return trace.get_current_span().get_span_context().is_valid or bool(baggage.get_all())


def extract_context(headers: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> Context:
    """The Context carried by NATS headers or gRPC metadata; an empty Context when none."""
    if not headers:
        return Context()
    carrier = headers if isinstance(headers, Mapping) else {k: v for k, v in headers if isinstance(v, str)}
    return PROPAGATOR.extract(carrier, context=Context(), getter=GETTER)


def has_trace(headers: Mapping[str, str] | None) -> bool:
    """Whether `headers` carry a traceparent (cheap: no parsing)."""
    return bool(headers) and any(k.lower() == "traceparent" for k in headers)


def with_meshrl_baggage(context: Context, run_id: str | None, policy_version: int | None) -> Context:
    """`context` with run id and policy version in W3C baggage (so they cross every hop)."""
    if run_id:
        context = baggage.set_baggage(RUN_ID_KEY, run_id, context)
    if policy_version is not None:
        context = baggage.set_baggage(POLICY_VERSION_KEY, str(int(policy_version)), context)
    return context
