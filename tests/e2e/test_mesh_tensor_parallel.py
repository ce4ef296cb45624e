"""A rollout replica whose vLLM engine spans two tensor-parallel workers (CPU backend, one
core group each) runs end to end: it generates, and every weights push reaches both workers'
shards (the replica verifies and loads each version; on-policy steps train on it)."""

import math

import pytest

pytestmark = pytest.mark.slow


def test_a_tp2_replica_serves_and_loads_every_version(run_mesh):
    result, metrics, ledger = run_mesh("learner.steps=3", "rollout.tensor_parallel_size=2")
    assert len(metrics) == 3 and all(math.isfinite(m["loss"]) for m in metrics)
    loaded = [e for e in ledger if e["event"] == "weights_loaded"]
    assert {e["version"] for e in loaded if e["ok"]} >= {1, 2} and all(e["ok"] for e in loaded)
    assert all(e["policy_version"] == e["step"] for e in ledger if e["event"] == "trained")
    # the engine's log-probs of the pushed weights equal the learner's: both shards were updated
    assert all(m["mismatch_kl"] < 1e-4 for m in metrics), [m["mismatch_kl"] for m in metrics]
    log = (result.run_dir / "logs" / "rollout-0.log").read_text()
    assert "tensor_parallel_size=2" in log and "world_size=2" in log  # vLLM's own start-up lines
