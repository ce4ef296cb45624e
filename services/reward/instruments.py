"""The reward replica's Prometheus instruments, fed by one callback per published group.

`meshrl_reward_component_scores_total{component, status}` counts every component result by
status (ok / error / timeout), so a dashboard shows both the failure count and the failure
rate of each component. The worker takes the callback (default: nothing) instead of
importing telemetry.
"""

from __future__ import annotations

from typing import Callable

from meshrl.api.common.v1 import common_pb2

GroupCallback = Callable[[common_pb2.Group], None]


def no_op(group: common_pb2.Group) -> None:
    """What a worker calls when metrics are off."""


def status_label(status: int) -> str:
    """SCORE_STATUS_TIMEOUT -> "timeout"."""
    return common_pb2.ScoreStatus.Name(status).removeprefix("SCORE_STATUS_").lower()


def reward_instruments(handle) -> GroupCallback:
    """Groups scored, and component results by component and status."""
    if handle is None:
        return no_op
    groups = handle.counter("meshrl_groups_scored_total", "groups scored and published")
    results = handle.counter(
        "meshrl_reward_component_scores_total", "component results per sample, by component and status"
    )

    def on_group(group: common_pb2.Group) -> None:
        groups.add(1)
        for sample in group.samples:
            for comp in sample.reward_components:
                results.add(1, {"component": comp.name, "status": status_label(comp.status)})

    return on_group
