"""The main loop end to end: real NATS, real vLLM rollout ×2, reward, learner processes,
with the held-out evaluation (through the rollout and reward gRPC services), samples.jsonl, and
the run in MLflow (local store) and W&B (offline), read back with their own readers."""

import json

import numpy as np
import pytest

from meshrl.run_layout import RunDir
from tests.fixtures.trackers import wandb_inspect

pytestmark = pytest.mark.slow


def assert_private(run_dir):
    """The run dir is 0700 and what the services wrote (logs, checkpoints, metrics) is 0600:
    it holds the run's credentials and weights."""
    assert run_dir.stat().st_mode & 0o777 == 0o700
    written = [
        run_dir / "metrics.jsonl",
        run_dir / "logs" / "learner-0.log",
        *(run_dir / "checkpoints").glob("step_*/*"),
    ]
    assert len(written) > 3 and {p.name: p.stat().st_mode & 0o077 for p in written if p.is_file()} == {
        p.name: 0 for p in written if p.is_file()
    }


def test_grpo_raises_reward_and_accounts_for_every_group(run_mesh):
    steps = 12
    result, metrics, ledger = run_mesh(
        f"learner.steps={steps}",
        "rollout.replicas=2",
        "trainer.optim.lr=3e-3",
        "trainer.mini_batches=2",
        "eval.every=6",
        "eval.at_start=true",
        "eval.correct_component=vowel",
        "eval.samples_per_step=2",
        "telemetry.trackers=[mlflow,wandb]",
    )
    assert result.steps == steps and len(metrics) == steps
    assert_private(result.run_dir)
    assert RunDir(result.run_dir).heartbeat.is_file()  # the learner process beat (status reads it)
    rewards = [m["reward"] for m in metrics]
    # The learnable reward must visibly rise under GRPO (measured: 0.22, 0.31 over the first
    # two steps; 0.78, 0.75, 0.91, 0.78 over the last four).
    assert np.mean(rewards[-4:]) > np.mean(rewards[:2]) + 0.25, rewards

    trained = [e for e in ledger if e["event"] == "trained"]
    published = {e["group_id"] for e in ledger if e["event"] == "published"}
    dropped = {e["group_id"] for e in ledger if e["event"] == "dropped"}
    ids = [e["group_id"] for e in trained]
    assert len(ids) == len(set(ids)) == steps * 4  # nothing trained twice
    assert set(ids) <= published and not set(ids) & dropped
    # Nothing lost and nothing left behind: every published group was trained or dropped (the
    # feeder publishes no more than the remaining steps will train on).
    assert published == set(ids) | dropped

    # Every trained group carries a version that its replica really loaded (0 = base model),
    # and the learner pushed one version per step, which both replicas loaded and verified.
    loaded = {(e["replica"], e["version"]) for e in ledger if e["event"] == "weights_loaded" and e["ok"]}
    for e in trained:
        assert e["policy_version"] == 0 or (e["replica"], e["policy_version"]) in loaded, e
    assert {v for _, v in loaded} >= set(range(1, steps))
    assert {r for r, _ in loaded} == {"rollout-0", "rollout-1"}
    # On-policy: step n trains on version n.
    assert all(e["policy_version"] == e["step"] for e in trained)
    # Both replicas served from the shared prompt queue.
    assert {e["replica"] for e in trained} == {"rollout-0", "rollout-1"}

    # Held-out evaluation of v0 (before step 0), v6 and v12 over all 16 eval prompts.
    assert metrics[0]["eval_start/n"] == 16 and 0 <= metrics[0]["eval_start/accuracy"] <= 1
    evaluated = [i for i, m in enumerate(metrics) if "eval/accuracy" in m]
    assert evaluated == [5, 11] and all(metrics[i]["eval/n"] == 16 for i in evaluated)
    samples = [json.loads(x) for x in (result.run_dir / "samples.jsonl").read_text().splitlines()]
    train = [s for s in samples if s["split"] == "train"]
    assert len(train) == 2 * steps and {s["step"] for s in train} == set(range(1, steps + 1))
    assert all(s["group_id"] in ids and s["response"] for s in train)
    assert {s["step"] for s in samples if s["split"] == "eval"} == {0, 6, 12}

    assert_trackers_hold_the_run(result.run_dir, metrics, samples)


def assert_trackers_hold_the_run(run_dir, metrics, samples):
    """MLflow's and W&B's copies of the run equal metrics.jsonl and samples.jsonl."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{run_dir / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("e2e-grpo").experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags["meshrl.final_model"] == str((run_dir / "final").resolve())
    assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "reward")] == [
        (m["step"], m["reward"]) for m in metrics
    ]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "eval/accuracy")] == [5, 11]
    table = json.loads(open(client.download_artifacts(run.info.run_id, "samples.json", str(run_dir / "dl"))).read())
    assert len(table["data"]) == len(samples)
    summary = wandb_inspect(run_dir, "--summary")
    assert summary["state"] == "finished" and summary["step"] == len(metrics) - 1
    assert summary["summary"]["final_model_path"] == str((run_dir / "final").resolve())
    assert summary["summary"]["reward"] == metrics[-1]["reward"]
