"""The rollout replica's Prometheus instruments, fed by one callback per published group.

The worker takes an `on_group(group)` callback (default: nothing) instead of importing
telemetry, so tests that build a worker directly need no metrics endpoint.
"""

from __future__ import annotations

from typing import Callable

from meshrl.api.common.v1 import common_pb2 as pb

GroupCallback = Callable[[pb.Group], None]


def no_op(group: pb.Group) -> None:
    """What a worker calls when metrics are off."""


def rollout_instruments(handle, engine) -> GroupCallback:
    """Counters of groups and response tokens generated, and the held policy version."""
    if handle is None:
        return no_op
    groups = handle.counter("meshrl_groups_generated_total", "groups generated and published")
    tokens = handle.counter("meshrl_response_tokens_generated_total", "response tokens generated")
    handle.gauge("meshrl_policy_version", lambda: engine.version, "policy version the engine holds now")

    def on_group(group: pb.Group) -> None:
        groups.add(1)
        tokens.add(sum(len(s.response_token_ids) // 4 for s in group.samples))  # int32 LE

    return on_group
