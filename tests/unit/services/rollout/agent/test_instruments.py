"""The rollout's agent counters on a real Prometheus endpoint (scraped over HTTP).

Run: .venv/bin/python -m pytest tests/unit/services/rollout/agent/test_instruments.py
"""

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.rollout.agent.instruments import AgentEvents
from meshrl.telemetry.metrics import start_metrics
from tests.fixtures.prometheus import sample, scrape


def test_tool_calls_and_parse_failures_are_counted_on_the_metrics_endpoint():
    """Parse failures need a model that writes calls (the tiny one does not): the counters
    the episode feeds, on a real endpoint, from a turn with one good and two bad calls."""
    handle = start_metrics("rollout", "agent-parse", "run-p")
    try:
        events = AgentEvents(handle)
        events.turn(
            pb.Turn(
                tool_calls=[
                    pb.ToolCallRecord(name="calculator", arguments_json="{}"),
                    pb.ToolCallRecord(error="the call is not valid JSON"),
                    pb.ToolCallRecord(name="calc", error="unknown tool 'calc'"),
                ]
            )
        )
        events.turn(pb.Turn())  # a turn without calls
        text = scrape(f"http://127.0.0.1:{handle.port}/metrics")
        assert sample(text, "meshrl_agent_tool_calls_total") == 3
        assert sample(text, "meshrl_agent_tool_call_parse_failures_total") == 2
        assert events.counts["turns"] == 2 and events.counts["parse_failures"] == 2
    finally:
        handle.close()
