"""`meshrl status http://HOST:PORT/runs/NAME` prints what the gateway's JSON says of a finished
run as the local `meshrl status RUN_DIR` does: groups trained, final reward, held-out accuracy
before and after, where final/ is (uint64 fields come as strings, as the gateway's HTTP sends them).

    .venv/bin/python -m pytest -q tests/unit/run/test_remote_describe.py
"""

from meshrl.run.remote import describe

RUN = {"name": "grpo", "live": False, "run_id": "", "last_step": "1"}
LEARNER = {"state": "ENDED", "step": "2", "total_steps": "2", "policy_version": "2", "groups_trained": "16"}


def test_a_finished_run_through_the_gateway_reads_as_the_local_status():
    outcome = {
        "ended": "finished: every step trained, final model saved",
        "final_reward": 0.390625,
        "accuracy_before": 0.25,
        "accuracy_after": 0.5,
        "accuracy_after_step": "1",
        "eval_prompts": "8",
        "final_model": "/runs/grpo/final",
    }
    assert describe({"run": RUN, "learner": LEARNER, "outcome": outcome}).splitlines() == [
        "run grpo  (no launcher here; last step index 1)",
        "learner  ENDED  step 2/2  policy v2  groups trained 16",
        "outcome: finished: every step trained, final model saved",
        "final reward 0.391  held-out accuracy: 0.250 at start -> 0.500 after step 1 (8 prompts)",
        "final model: /runs/grpo/final",
    ]


def test_a_run_without_evaluation_or_final_model_says_so():
    outcome = {"ended": "stopped by olga via gateway", "final_reward": 0.125, "eval_prompts": "0", "final_model": ""}
    assert describe({"run": RUN, "learner": LEARNER, "outcome": outcome}).splitlines()[3:] == [
        "final reward 0.125  held-out accuracy: not evaluated",
        "final model: none (final/ is written when the last step is trained)",
    ]


def test_a_live_run_has_no_outcome_lines():
    live = {"run": {**RUN, "live": True, "run_id": "r-1"}, "learner": LEARNER}
    assert len(describe(live).splitlines()) == 2
