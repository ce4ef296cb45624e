"""Prometheus instruments for calls to external reward services, one set per reward replica.

    meshrl_reward_external_call_seconds{component, target}        histogram, one Score call
    meshrl_reward_external_errors_total{component, target, code}  failed calls (after retries)
    meshrl_reward_external_timeouts_total{component, target}      calls past their deadline
    meshrl_reward_external_retries_total{component, target, code} attempts that were retried
    meshrl_reward_external_breaker_state{component, target}       0 closed, 1 half-open, 2 open

`target` is the service's address (not `service`: every series already has
service="reward", the meshrl service that makes the call). `code` is the gRPC status name,
or BREAKER_OPEN for a call the circuit breaker refused without making it. Without a metrics
handle every method is a no-op.
"""

from __future__ import annotations

from typing import Callable

LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0]


class CallMetrics:
    def __init__(self, handle=None, *, component: str = "", target: str = ""):
        self.labels = {"component": component, "target": target}
        self.on = handle is not None
        if not self.on:
            return
        self.latency = handle.histogram(
            "meshrl_reward_external_call_seconds",
            "wall time of one Score call to an external reward service",
            unit="s",
            buckets=LATENCY_BUCKETS,
        )
        self.errors = handle.counter(
            "meshrl_reward_external_errors_total", "Score calls that failed after their retries, by gRPC code"
        )
        self.timeouts = handle.counter("meshrl_reward_external_timeouts_total", "Score calls that hit their deadline")
        self.retries = handle.counter(
            "meshrl_reward_external_retries_total", "Score attempts retried, by the code that caused the retry"
        )
        self.handle = handle

    def watch_breaker(self, state: Callable[[], int]) -> None:
        """Export the breaker's state. One gauge per handle (OpenTelemetry keeps the first
        instrument of a name), reading every watched breaker; the list lives on the handle."""
        if not self.on:
            return
        watched = self.handle.__dict__.setdefault("_reward_breakers", [])
        if not watched:
            self.handle.gauge(
                "meshrl_reward_external_breaker_state",
                lambda: [(float(read()), labels) for labels, read in watched],
                "circuit breaker per external reward service: 0 closed, 1 half-open, 2 open",
            )
        watched.append((self.labels, state))

    def call(self, seconds: float) -> None:
        if self.on:
            self.latency.record(seconds, self.labels)

    def error(self, code: str) -> None:
        if self.on:
            self.errors.add(1, {**self.labels, "code": code})
            if code == "DEADLINE_EXCEEDED":
                self.timeouts.add(1, self.labels)

    def retry(self, code: str) -> None:
        if self.on:
            self.retries.add(1, {**self.labels, "code": code})
