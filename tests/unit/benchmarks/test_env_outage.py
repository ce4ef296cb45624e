"""benchmarks/env_outage.py's figures from a ledger written by hand: a kill at t=10 with two
groups in flight, two drops for the outage, their draws published again, one new draw, and the
first group trained after the kill at t=25."""

from benchmarks.env_outage import outage_figures

LEDGER = [
    {"event": "published", "time": 1, "group_id": "a", "draw": 0},
    {"event": "published", "time": 2, "group_id": "b", "draw": 1},
    {"event": "trained", "time": 5, "group_id": "a", "step": 0},
    {"event": "published", "time": 6, "group_id": "c", "draw": 2},
    {"event": "dropped", "time": 11, "group_id": "b", "reason": "env_unavailable"},
    {"event": "dropped", "time": 12, "group_id": "c", "reason": "env_unavailable"},
    {"event": "published", "time": 13, "group_id": "b2", "draw": 1},
    {"event": "published", "time": 20, "group_id": "c2", "draw": 2},
    {"event": "published", "time": 21, "group_id": "d", "draw": 3},
    {"event": "trained", "time": 25, "group_id": "b2", "step": 1},
    {"event": "published", "time": 26, "group_id": "e", "draw": 4},
]


def test_the_outage_figures_by_hand():
    assert outage_figures(LEDGER, fault_time=10) == {
        "outage_s": 15,
        "in_flight_at_kill": 2,  # b and c
        "published_during": 3,  # b2, c2, d
        "prompts_consumed": 1,  # d: draws 1 and 2 were given back
        "dropped_for_outage": 2,
    }
