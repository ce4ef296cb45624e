"""What a rollout replica's episodes did, counted (`counts`) and, with a metrics endpoint, exported.

    meshrl_agent_episodes_total{ended}               finished episodes: done | max_turns | token_budget | context
    meshrl_agent_turns_per_episode                   histogram of model turns per finished episode
    meshrl_agent_tool_calls_total                    tool calls the model wrote
    meshrl_agent_tool_call_parse_failures_total      ... that could not be sent (unreadable, unknown
                                                     tool, arguments against the schema, over the cap)
    meshrl_agent_env_call_seconds{method, status}    histogram of each Reset/Step/Close attempt
    meshrl_agent_episodes_dropped_total{reason}      episodes of dropped groups, by the drop's code
                                                     (env_deadline_exceeded, env_not_found, ...)
    meshrl_agent_observations_truncated_total        observations cut to max_observation_tokens
    meshrl_agent_special_tokens_escaped_total        special tokens escaped in observations
    meshrl_agent_answers_repaired_total              answers whose bad UTF-8 was replaced

The environment hop is also in `meshrl_rpc_duration_seconds{rpc_service="meshrl.env.v1.
EnvironmentService"}` (every gRPC client call is); this histogram adds the status label set
that matters here and counts every retry attempt. Without a handle only `counts` is kept.
"""

from __future__ import annotations

from collections import Counter

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.telemetry.metrics import LATENCY_BUCKETS_S

TURN_BUCKETS = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32]


class AgentEvents:
    def __init__(self, handle=None):
        self.counts: Counter = Counter()
        self.on = handle is not None
        if not self.on:
            return
        h = handle
        self.episodes = h.counter("meshrl_agent_episodes_total", "finished episodes, by what ended them")
        self.turns = h.histogram(
            "meshrl_agent_turns_per_episode", "model turns per finished episode", buckets=TURN_BUCKETS
        )
        self.calls = h.counter("meshrl_agent_tool_calls_total", "tool calls the model wrote")
        self.failures = h.counter(
            "meshrl_agent_tool_call_parse_failures_total",
            "tool calls that could not be sent (the model read an error instead)",
        )
        self.env_seconds = h.histogram(
            "meshrl_agent_env_call_seconds", "one EnvironmentService call attempt", unit="s", buckets=LATENCY_BUCKETS_S
        )
        self.dropped_episodes = h.counter(
            "meshrl_agent_episodes_dropped_total", "episodes of groups dropped, by the drop's code"
        )
        self.truncated = h.counter(
            "meshrl_agent_observations_truncated_total", "observations cut to rollout.agent.max_observation_tokens"
        )
        self.escaped = h.counter("meshrl_agent_special_tokens_escaped_total", "special tokens escaped in observations")
        self.repairs = h.counter(
            "meshrl_agent_answers_repaired_total", "environment answers whose invalid UTF-8 was replaced"
        )

    def turn(self, record: pb.Turn) -> None:
        failed = sum(1 for call in record.tool_calls if call.error)
        self.counts.update(turns=1, tool_calls=len(record.tool_calls), parse_failures=failed)
        if self.on:
            self.calls.add(len(record.tool_calls))
            self.failures.add(failed)

    def observation(self, bounded) -> None:
        self.counts.update(observations_truncated=int(bounded.truncated), escaped=bounded.escaped)
        if self.on:
            self.truncated.add(int(bounded.truncated))
            self.escaped.add(bounded.escaped)

    def env_call(self, method: str, seconds: float, status: str) -> None:
        self.counts[f"env_{method}_{status}"] += 1
        if self.on:
            self.env_seconds.record(seconds, {"method": method, "status": status})

    def repaired(self) -> None:
        self.counts["answers_repaired"] += 1
        if self.on:
            self.repairs.add(1)

    def finished(self, group: pb.Group, endings: list[str]) -> None:
        self.counts.update(f"ended_{e}" for e in endings)
        self.counts.update(groups=1, episodes=len(endings))
        if self.on:
            for sample, ended in zip(group.samples, endings):
                self.episodes.add(1, {"ended": ended})
                self.turns.record(len(sample.turns))

    def dropped(self, code: str, episodes: int) -> None:
        self.counts.update(groups_dropped=1, **{f"dropped_{code}": episodes})
        if self.on:
            self.dropped_episodes.add(episodes, {"reason": code})
