"""Chaos: faults at seeded moments of real `meshrl train` runs, for each part of the mesh.

kill -9 of one rollout replica of two, of one environment replica of two while it holds an
open episode (the run's tasks are tool_arith episodes), of the reward, the reference, the learner, the
embedded nats-server, and of one node of a three-node NATS cluster (JetStream replicas = 3;
the node the learner is connected to) that the run uses instead; SIGSTOP of a rollout
replica for longer than rollout.ack_wait_s (then SIGCONT): its prompt tasks go to the other
replica. The faults are tests/chaos/faults.py's catalogue. Each run must finish all its
steps, and its ledger (groups.jsonl) must prove that every published group was trained or
dropped with a reason, none twice, each within the staleness bound
(tests/chaos/ledger_proof.py). What each fault cost is printed as a table at the end
(tests/chaos/report.py).

A mesh start-up is most of a run's time, so the four faults that fit one config on the
embedded NATS and that the run waits out (faults.SHARED: reward, reference, learner,
nats-server) share one run (the `shared` fixture), struck one after another, each once the run
recovered from the one before; each fault's test judges its own time window, and
test_the_shared_run_finished_with_its_ledger_proven the whole run. The environment fault
(another model and config), the NATS-cluster one and the two rollout faults (the other
replica trains on meanwhile, so the steps they take grow with the host's speed) have runs of
their own.

Run one: timeout 1500 .venv/bin/python -m pytest -q -m slow tests/chaos/test_faults.py -k reward
(a shared fault's test runs the whole shared run)
Replay a moment: MESHRL_CHAOS_SEED=7 ... (the seed of each fault is printed with -s)
"""

import pytest

from tests.chaos.faults import CASES, FROZEN_S, SHARED_STEPS, run_case, run_shared
from tests.chaos.report import record
from tests.chaos.scenario import STEPS, ScenarioResult


@pytest.fixture(scope="module")
def shared(tiny_model_dir, e2e_data, tmp_path_factory) -> dict[str, ScenarioResult]:
    """One run for the faults of faults.SHARED: three mesh start-ups saved."""
    return run_shared(tiny_model_dir, e2e_data, tmp_path_factory.mktemp("shared"))


def assert_finished(result: ScenarioResult, steps: int = STEPS) -> None:
    """The run finished every step, and its ledger proves nothing was lost or trained twice."""
    assert result.returncode == 0, result.stderr[-3000:]
    assert [m["step"] for m in result.metrics] == list(range(steps))
    assert result.proof.problems == [], "\n".join(result.proof.problems)
    assert result.proof.published >= steps * 2 and result.proof.trained >= steps * 2


def report(result: ScenarioResult) -> None:
    """The fault's row in the table at the end (what it cost within its window)."""
    row = record(result)
    print(f"{result.fault.name} ({result.victim}): {row}; redelivered by stage {result.redelivered}")


def assert_recovered(result: ScenarioResult) -> None:
    """A fault with a run of its own: its row, and the whole run's checks."""
    report(result)
    assert_finished(result)


def assert_restarted(result: ScenarioResult, service: str, sig: str = "SIGKILL") -> None:
    """Within the fault's window: the launcher restarted `service`, and a step was trained after."""
    restarts = [(r["service"], r["signal"], r["event"]) for r in result.restarts]
    assert (service, sig, "restart") in restarts, restarts
    assert f"{service} was killed by signal {sig}" in result.stderr
    assert result.trained_after_fault(), f"nothing trained after {result.fault.name}: the run did not recover"


@pytest.mark.slow
def test_the_shared_run_finished_with_its_ledger_proven(shared):
    """Whatever the faults did in turn, the run finished every step with nothing lost."""
    assert_finished(shared["reward"], SHARED_STEPS)  # any result: they share the run's files


@pytest.mark.slow
def test_kill_one_rollout_replica_of_two(tiny_model_dir, e2e_data, tmp_path):
    result = run_case(CASES["rollout"], tiny_model_dir, e2e_data, tmp_path)
    assert_recovered(result)
    assert_restarted(result, "rollout-1")


@pytest.mark.slow
def test_sigstop_a_rollout_replica_hands_its_work_to_the_other(tiny_model_dir, e2e_data, tmp_path):
    result = run_case(CASES["sigstop"], tiny_model_dir, e2e_data, tmp_path)
    assert_recovered(result)
    while_frozen = [e for e in result.trained_after_fault() if e["time"] < result.fault_time + FROZEN_S]
    assert while_frozen, "no step finished while rollout-0 was frozen: the run waited for it"
    published_after = {
        e["group_id"] for e in result.ledger if e["event"] == "published" and e["time"] > result.fault_time
    }
    assert {e["replica"] for e in while_frozen if e["group_id"] in published_after} <= {"rollout-1"}
    assert result.restarts == []  # a frozen process is not dead: nothing to restart


@pytest.mark.slow
def test_kill_reward(shared):
    result = shared["reward"]
    report(result)
    assert_restarted(result, "reward-0")


@pytest.mark.slow
def test_kill_an_environment_replica_mid_episode(tiny_long_model_dir, e2e_data, tmp_path):
    """Its open episodes' groups are dropped with the environment's status as reason (never
    trained half-done), it is restarted and announces a new address, the run goes on."""
    result = run_case(CASES["environment"], tiny_long_model_dir, e2e_data, tmp_path)
    assert_recovered(result)
    assert_restarted(result, "environment-0")
    dropped = [e for e in result.ledger if e["event"] == "dropped" and e["time"] > result.fault_time]
    by_env = [e for e in dropped if e["reason"].startswith("env_")]
    assert by_env, f"no group dropped for the environment after the kill: {dropped}"
    assert all("episode" in e.get("detail", "") for e in by_env), by_env
    assert result.trained_after_fault(), "nothing trained after the kill: the run did not recover"


@pytest.mark.slow
def test_kill_reference(shared):
    result = shared["reference"]
    report(result)
    assert_restarted(result, "reference-0")


@pytest.mark.slow
def test_kill_learner(shared):
    result = shared["learner"]
    report(result)
    assert_restarted(result, "learner-0")
    assert [e["event"] for e in result.ledger].count("resumed") == 1  # the run's only learner kill


@pytest.mark.slow
def test_kill_nats_server(shared):
    result = shared["nats-server"]
    report(result)
    assert_restarted(result, "nats-server")


@pytest.mark.slow
def test_kill_the_nats_cluster_node_of_the_learner(tiny_model_dir, e2e_data, tmp_path):
    # Three nodes, every stream and bucket on each: the run must notice the loss only as a pause.
    result = run_case(CASES["nats-node"], tiny_model_dir, e2e_data, tmp_path)
    assert_recovered(result)
    assert result.trained_after_fault(), "the node died after the last step: nothing was shown"
    assert result.restarts == []  # no service died
