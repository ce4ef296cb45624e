"""Traces of episodes: one trace per episode, a span per turn, its generation and its env call.

    rollout.episode  {meshrl.episode_id, meshrl.group_id, meshrl.environment}   a new trace,
      │                LINKED to the group's span (rollout.generate, in the group's trace)
      ├─ env.reset
      ├─ episode.turn {meshrl.turn}
      │    ├─ turn.generate {meshrl.tokens}
      │    └─ env.step {meshrl.tool_calls, meshrl.done}   (the gRPC client span nests here)
      ├─ episode.turn ...
      └─ env.close

An episode is its own trace (not spans inside the group's): a group of 8 episodes of 4 turns
would otherwise be one 60-span trace in which no single episode can be followed; the link
keeps the way from the group to its episodes and back. Every span carries the run id and
the policy version (meshrl.telemetry.tracing's conventions). With tracing off each helper
is a no-op context.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Link

from meshrl.telemetry.spans.propagation import GROUP_ID_KEY, POLICY_VERSION_KEY, RUN_ID_KEY
from meshrl.telemetry.tracing import current_tracer

EPISODE_ID_KEY = "meshrl.episode_id"


def _identity(tracer, version: int) -> dict:
    return {RUN_ID_KEY: tracer.run_id, POLICY_VERSION_KEY: int(version)}


@contextlib.contextmanager
def episode_span(episode_id: str, group_id: str, environment: str, version: int) -> Iterator[trace.Span]:
    """The root span of an episode's own trace, linked to the span current now (the group's)."""
    tracer = current_tracer()
    if not tracer.enabled:
        yield INVALID_SPAN
        return
    group = trace.get_current_span().get_span_context()
    attrs = {
        **_identity(tracer, version),
        EPISODE_ID_KEY: episode_id,
        GROUP_ID_KEY: group_id,
        "meshrl.environment": environment,
    }
    with tracer.otel.start_as_current_span(
        "rollout.episode", context=Context(), attributes=attrs, links=[Link(group)] if group.is_valid else []
    ) as span:
        yield span


@contextlib.contextmanager
def child_span(name: str, version: int, **attributes) -> Iterator[trace.Span]:
    """A span under the current one (an episode's turn, generation or env call)."""
    tracer = current_tracer()
    if not tracer.enabled:
        yield INVALID_SPAN
        return
    attrs = {**_identity(tracer, version), **{f"meshrl.{k}": v for k, v in attributes.items()}}
    with tracer.otel.start_as_current_span(name, attributes=attrs) as span:
        yield span
