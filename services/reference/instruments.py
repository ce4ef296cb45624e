"""The reference replica's Prometheus instruments, fed by one callback per published group.

The worker takes the callback (default: nothing) instead of importing telemetry, so tests
that build a worker directly need no metrics endpoint.
"""

from __future__ import annotations

from typing import Callable

from meshrl.api.common.v1 import common_pb2

GroupCallback = Callable[[common_pb2.Group], None]


def no_op(group: common_pb2.Group) -> None:
    """What a worker calls when metrics are off."""


def reference_instruments(handle) -> GroupCallback:
    """Counters of groups and sequences (samples) given reference log-probs."""
    if handle is None:
        return no_op
    groups = handle.counter("meshrl_groups_scored_total", "groups given reference log-probs")
    sequences = handle.counter("meshrl_sequences_scored_total", "sequences scored")

    def on_group(group: common_pb2.Group) -> None:
        groups.add(1)
        sequences.add(len(group.samples))

    return on_group
