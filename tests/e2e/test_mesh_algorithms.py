"""The same mesh and loop run DAPO, GSPO, PPO (critic) and DPO (reference) by config alone."""
import math

import pytest

pytestmark = pytest.mark.slow


def finite(rows, key):
    return [r[key] for r in rows if r.get(key) is not None and math.isfinite(r[key])]


@pytest.mark.parametrize("preset, signature_metric, extra", [
    ("dapo", "clip_ratio/high", ["algorithm.overlong.buffer_len=4"]),  # clip-higher, overlong
    ("gspo", "ratio/mean", []),        # sequence-level ratio
    ("ppo", "critic/values", []),      # the critic ran (GAE needs values)
])
def test_online_algorithms_by_config_alone(run_mesh, preset, signature_metric, extra):
    result, metrics, ledger = run_mesh("learner.steps=2", *extra, preset=preset)
    assert len(metrics) == 2
    assert len(finite(metrics, "loss")) == 2 and len(finite(metrics, signature_metric)) == 2
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    assert len(trained) == len(set(trained)) == 2 * 4


def test_ppo_uses_the_reference_for_a_kl_reward_penalty(run_mesh):
    # The PPO preset puts KL into the reward, so the reference service must have run.
    result, metrics, _ = run_mesh("learner.steps=2", preset="ppo")
    assert len(finite(metrics, "kl")) == 2


def test_dpo_runs_offline_with_the_reference_service(run_mesh):
    result, metrics, _ = run_mesh("learner.steps=4", "learner.prompts_per_step=16",
                                  "algorithm.beta=0.5", "trainer.optim.lr=3e-3",
                                  preset="dpo", train_key="pairs")
    assert len(metrics) == 4
    assert abs(metrics[0]["rewards/margins"]) < 1e-3  # policy == reference before the update
    assert metrics[-1]["rewards/margins"] > metrics[0]["rewards/margins"]
