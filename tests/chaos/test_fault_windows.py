"""Several faults in one run (tests/chaos/scenario.py's run_faults), on hand-made files: each
fault's result counts only its own time window, and the next fault waits until the run
recovered from the one before (the target back, then trained again).

Run: .venv/bin/python -m pytest -q tests/chaos/test_fault_windows.py
"""

import json
import signal

from tests.chaos.ledger_proof import LedgerReport
from tests.chaos.scenario import Fault, ScenarioResult, Strike, recovered, rows

# Steps 0-3 trained at t = 1..4; the learner killed at t = 4.5 resumes from step 2 at t = 6
# and trains steps 2 and 3 again; a group dropped in each half.
LEDGER = [
    *({"event": "trained", "group_id": f"g{s}", "step": s, "time": 1.0 + s, "replica": "rollout-0"} for s in range(4)),
    {"event": "dropped", "group_id": "x", "reason": "stale", "time": 2.5},
    {"event": "dropped", "group_id": "y", "reason": "", "time": 5.0},
    {"event": "resumed", "step": 2, "time": 6.0},
    *({"event": "trained", "group_id": f"h{s}", "step": s, "time": 5.0 + s, "replica": "rollout-1"} for s in (2, 3)),
]


def result(since: float, until: float, fault_time: float) -> ScenarioResult:
    restarts = [{"service": "learner-0", "time": 4.6}]
    in_window = [r for r in restarts if since <= r["time"] < until]
    fault = Fault("kill -9 learner", "learner-0")
    return ScenarioResult(fault, 0, "", None, fault_time, [], LEDGER, in_window, LedgerReport(), {}, "", since, until)


def test_each_fault_counts_only_its_own_window():
    reward, learner = result(0.0, 4.5, fault_time=2.2), result(4.5, float("inf"), fault_time=4.5)
    assert [e["step"] for e in reward.trained_after_fault()] == [2, 3]  # not the re-trainings after 4.5
    assert reward.dropped() == {"stale": 1} and learner.dropped() == {"(no reason)": 1}
    assert reward.steps_lost() == [] and learner.steps_lost() == [2, 3]
    assert reward.restarts == [] and len(learner.restarts) == 1
    assert learner.recovery_s() == 2.5  # the first step trained after 4.5: step 2 again, at 7


def test_a_one_fault_run_keeps_every_count_of_the_run():
    whole = result(0.0, float("inf"), fault_time=2.2)
    assert whole.dropped() == {"stale": 1, "(no reason)": 1} and whole.steps_lost() == [2, 3]


def write(path, events):
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_the_next_fault_waits_for_the_restarted_target_and_two_steps_after_it(tmp_path):
    strike = Strike(Fault("kill -9 reward", "reward-0"), 10.0, "reward-0", {})
    write(tmp_path / "groups.jsonl", [{"event": "trained", "step": s, "time": 11.0 + s} for s in range(3)])
    assert not recovered(strike, tmp_path)  # not restarted yet
    write(tmp_path / "restarts.jsonl", [{"service": "reward-0", "event": "restart", "time": 11.5}])
    assert recovered(strike, tmp_path)  # steps 1 and 2 trained after the restart
    write(tmp_path / "restarts.jsonl", [{"service": "reward-0", "event": "restart", "time": 12.5}])
    assert not recovered(strike, tmp_path)  # only step 2 after it


def test_a_rollout_replica_is_back_once_a_group_of_its_own_was_trained(tmp_path):
    frozen = Fault("SIGSTOP rollout-0", "rollout-0", sig=signal.SIGSTOP, resume_after_s=5.0)
    strike = Strike(frozen, 10.0, "rollout-0", {})
    trained = [{"event": "trained", "step": s, "time": 16.0 + s, "replica": "rollout-1"} for s in range(3)]
    write(tmp_path / "groups.jsonl", trained)
    assert not recovered(strike, tmp_path)  # the other replica's groups do not count
    write(tmp_path / "groups.jsonl", [*trained, {"event": "trained", "step": 3, "time": 19.0, "replica": "rollout-0"}])
    assert recovered(strike, tmp_path)


def test_a_line_still_being_written_is_left_for_the_next_read(tmp_path):
    (tmp_path / "m.jsonl").write_text('{"step": 0}\n{"step": 1, "lo')
    assert rows(tmp_path / "m.jsonl") == [{"step": 0}]
