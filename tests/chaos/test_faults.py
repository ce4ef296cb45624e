"""Chaos: one fault at a seeded moment of a real `meshrl train` run, for each part of the mesh.

kill -9 of one rollout replica of two, of the reward, the reference, the learner, the
embedded nats-server, and of one node of a three-node NATS cluster (JetStream replicas = 3;
the node the learner is connected to) that the run uses instead; SIGSTOP of a rollout replica for longer than rollout.ack_wait_s (then
SIGCONT): its prompt tasks go to the other replica. Each run must finish all its steps, and
its ledger (groups.jsonl) must prove that every published group was trained or dropped with
a reason, none twice, each within the staleness bound (tests/chaos/ledger_proof.py). What
each fault cost is printed as a table at the end (tests/chaos/report.py).

Run one: timeout 900 .venv/bin/python -m pytest -q -m slow tests/chaos/test_faults.py -k reward
Replay a moment: MESHRL_CHAOS_SEED=7 ... (the seed of each fault is printed with -s)
"""
import signal

import pytest

from tests.chaos.report import record
from meshrl.transport.bus.cluster import NatsCluster
from tests.chaos.scenario import NATS_NODE, STEPS, Fault, ScenarioResult, run_scenario

TWO_ROLLOUTS = "rollout.replicas=2"
ACK_WAIT_S = 8  # the frozen replica's tasks go elsewhere after this (rollout.ack_wait_s)


def assert_recovered(result: ScenarioResult) -> None:
    """The run finished every step, and its ledger proves nothing was lost or trained twice."""
    row = record(result)
    print(f"{result.fault.name}: {row}; redelivered by stage {result.redelivered}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert [m["step"] for m in result.metrics] == list(range(STEPS))
    assert result.proof.problems == [], "\n".join(result.proof.problems)
    assert result.proof.published >= STEPS * 2 and result.proof.trained >= STEPS * 2


def assert_restarted(result: ScenarioResult, service: str, sig: str = "SIGKILL") -> None:
    restarts = [(r["service"], r["signal"], r["event"]) for r in result.restarts]
    assert (service, sig, "restart") in restarts, restarts
    assert f"{service} was killed by signal {sig}" in result.stderr


@pytest.mark.slow
def test_kill_one_rollout_replica_of_two(tiny_model_dir, e2e_data, tmp_path):
    result = run_scenario(Fault("kill -9 rollout-1 (of 2)", "rollout-1", seed=1), tiny_model_dir, e2e_data,
                          tmp_path, TWO_ROLLOUTS)
    assert_recovered(result)
    assert_restarted(result, "rollout-1")


@pytest.mark.slow
def test_sigstop_a_rollout_replica_hands_its_work_to_the_other(tiny_model_dir, e2e_data, tmp_path):
    # Frozen just after its step's prompts go out, while it likely holds one: a step that
    # finishes before SIGCONT needed no frozen replica (its tasks came back after the ack wait).
    frozen_s = 3 * ACK_WAIT_S
    fault = Fault(f"SIGSTOP rollout-0 {frozen_s} s", "rollout-0", sig=signal.SIGSTOP,
                  resume_after_s=frozen_s, seed=2, max_delay_s=0.5)
    result = run_scenario(fault, tiny_model_dir, e2e_data, tmp_path, TWO_ROLLOUTS, f"rollout.ack_wait_s={ACK_WAIT_S}")
    assert_recovered(result)
    while_frozen = [e for e in result.trained_after_fault() if e["time"] < result.fault_time + frozen_s]
    assert while_frozen, "no step finished while rollout-0 was frozen: the run waited for it"
    published_after = {e["group_id"] for e in result.ledger if e["event"] == "published" and e["time"] > result.fault_time}
    assert {e["replica"] for e in while_frozen if e["group_id"] in published_after} <= {"rollout-1"}
    assert result.restarts == []  # a frozen process is not dead: nothing to restart


@pytest.mark.slow
def test_kill_reward(tiny_model_dir, e2e_data, tmp_path):
    result = run_scenario(Fault("kill -9 reward", "reward-0", seed=3), tiny_model_dir, e2e_data, tmp_path)
    assert_recovered(result)
    assert_restarted(result, "reward-0")


@pytest.mark.slow
def test_kill_reference(tiny_model_dir, e2e_data, tmp_path):
    result = run_scenario(Fault("kill -9 reference", "reference-0", seed=4), tiny_model_dir, e2e_data, tmp_path)
    assert_recovered(result)
    assert_restarted(result, "reference-0")


@pytest.mark.slow
def test_kill_learner(tiny_model_dir, e2e_data, tmp_path):
    # A checkpoint every 2 steps: the resume trains again what came after the newest one.
    result = run_scenario(Fault("kill -9 learner", "learner-0", seed=5), tiny_model_dir, e2e_data, tmp_path,
                          "learner.checkpoint_every=2")
    assert_recovered(result)
    assert_restarted(result, "learner-0")
    assert [e["event"] for e in result.ledger].count("resumed") == 1


@pytest.mark.slow
def test_kill_nats_server(tiny_model_dir, e2e_data, tmp_path):
    result = run_scenario(Fault("kill -9 nats-server", "nats-server", seed=6), tiny_model_dir, e2e_data, tmp_path)
    assert_recovered(result)
    assert_restarted(result, "nats-server")


@pytest.mark.slow
def test_kill_the_nats_cluster_node_of_the_learner(tiny_model_dir, e2e_data, tmp_path):
    # Started by the test from the same nats-server binary; the launcher only gets its URLs.
    with NatsCluster(tmp_path / "nats", size=3) as cluster:
        result = run_scenario(Fault("kill -9 NATS node (1 of 3)", NATS_NODE, seed=7), tiny_model_dir, e2e_data,
                              tmp_path, cluster=cluster)
        print(f"killed {result.victim}; alive: {cluster.alive()}")
        assert len(cluster.alive()) == 2
    assert_recovered(result)
    assert result.restarts == []  # no service died: the run noticed the loss only as a pause
