"""A tiny mixture-of-experts model (Qwen3-MoE, built in code) trains through the whole mesh
with GSPO: real vLLM rollout of the MoE (CPU), weights pushed in the checkpoint's per-expert
names through the JetStream object store and loaded by every replica, the router's load
balance and aux loss logged per step, and the train/rollout log-prob mismatch measured.
It is also the suite's GSPO-through-the-mesh run (test_mesh_algorithms.py has the others)."""

import json
import math

import pytest

from meshrl.inputs.models.tiny_moe import build_tiny_moe_model_dir
from meshrl.launch.local import run_local
from tests.e2e.conftest import mesh_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def tiny_moe_dir(tmp_path_factory):
    return build_tiny_moe_model_dir(tmp_path_factory.mktemp("tiny_moe"))


def test_gspo_trains_a_tiny_moe_through_the_mesh(tiny_moe_dir, e2e_data, tmp_path):
    run_dir = tmp_path / "run"
    cfg = mesh_config(
        tiny_moe_dir, e2e_data, run_dir, "learner.steps=3", "learner.weights_transport=objectstore", preset="gspo"
    )
    run_local(cfg, run_dir, progress=False, grace_s=10.0)
    metrics = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    ledger = [json.loads(x) for x in (run_dir / "groups.jsonl").read_text().splitlines()]
    assert len(metrics) == 3 and all(math.isfinite(m["loss"]) and math.isfinite(m["ratio/mean"]) for m in metrics)
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    assert len(trained) == len(set(trained)) == 3 * 4  # GSPO's sequence-level ratio trained every group once
    # the rollout loaded every pushed version of the MoE's weights (per-expert checkpoint names)
    loaded = {e["version"] for e in ledger if e["event"] == "weights_loaded" and e["ok"]}
    assert {1, 2} <= loaded and not [e for e in ledger if e["event"] == "weights_loaded" and not e["ok"]]
    assert all(e["policy_version"] == e["step"] for e in ledger if e["event"] == "trained")
    for m in metrics:  # 8 experts, top-2: balanced = 1; a random router is near it
        assert 1.0 <= m["moe/load_max"] <= 8.0 and 0.0 <= m["moe/load_min"] <= 1.0
        assert 0.5 < m["moe/aux_loss"] < 8.0
    # The engine's and the learner's log-probs of the same tokens agree on the MoE (no routing replay)
    assert all(0.0 <= m["mismatch_kl"] < 1e-3 for m in metrics), [m["mismatch_kl"] for m in metrics]
