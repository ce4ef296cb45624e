"""The same mesh and loop run DAPO, PPO (critic), DPO (reference) and ReMax by config alone (GSPO:
test_mesh_moe.py, on the tiny MoE, its weights through the object store)."""

import json
import math

import pytest

from tests.e2e.conftest import mesh_run

pytestmark = pytest.mark.slow


def finite(rows, key):
    return [r[key] for r in rows if r.get(key) is not None and math.isfinite(r[key])]


def test_dapo_by_config_alone(run_mesh):
    # clip-higher, overlong; weights from the learner's memory into the engine over a gloo pair
    # group (the collective transport; NCCL on GPUs)
    overrides = ("learner.steps=2", "algorithm.overlong.buffer_len=4", "learner.weights_transport=collective")
    assert_two_steps_trained(*run_mesh(*overrides, preset="dapo"), "clip_ratio/high")


@pytest.fixture(scope="module")
def ppo_run(tiny_model_dir, e2e_data, tmp_path_factory):
    """One 2-step PPO run (critic, KL penalty from the reference) that three tests read: a mesh
    start-up is most of a run's time. → (result, metrics, ledger, run_dir)."""
    run_dir = tmp_path_factory.mktemp("ppo") / "run"
    return (*mesh_run(tiny_model_dir, e2e_data, run_dir, "learner.steps=2", preset="ppo"), run_dir)


def test_ppo_by_config_alone(ppo_run):
    result, metrics, ledger, _ = ppo_run
    assert_two_steps_trained(result, metrics, ledger, "critic/values")  # the critic ran (GAE needs values)


def assert_two_steps_trained(result, metrics, ledger, signature_metric):
    assert len(metrics) == 2
    assert len(finite(metrics, "loss")) == 2 and len(finite(metrics, signature_metric)) == 2
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    assert len(trained) == len(set(trained)) == 2 * 4
    # The rollout verified (sha256, or the collective's manifest) and loaded the version pushed after step 0.
    assert any(e["event"] == "weights_loaded" and e["ok"] and e["version"] == 1 for e in ledger)
    assert all(e["policy_version"] == e["step"] for e in ledger if e["event"] == "trained")


def test_ppo_uses_the_reference_for_a_kl_reward_penalty(ppo_run):
    # The PPO preset puts KL into the reward, so the reference service must have run.
    _, metrics, _, _ = ppo_run
    assert len(finite(metrics, "kl")) == 2


def test_dpo_runs_offline_with_the_reference_service(run_mesh):
    result, metrics, _ = run_mesh(
        "learner.steps=4",
        "learner.prompts_per_step=16",
        "algorithm.beta=0.5",
        "trainer.optim.lr=3e-3",
        preset="dpo",
        train_key="pairs",
    )
    assert len(metrics) == 4
    assert abs(metrics[0]["rewards/margins"]) < 1e-3  # policy == reference before the update
    assert metrics[-1]["rewards/margins"] > metrics[0]["rewards/margins"]


def test_a_trained_group_is_one_trace_across_all_four_services(ppo_run):
    """learner (publish) → rollout → reward → reference → learner (gather), parent by parent,
    and the step span that trained it links to that trace."""
    from meshrl.cli.trace import render_waterfall
    from meshrl.telemetry.spans.read import load_spans, trace_for_group

    result, metrics, ledger, run_dir = ppo_run
    group_id = next(e["group_id"] for e in ledger if e["event"] == "trained")
    spans = trace_for_group(run_dir, group_id)
    by_name = {s["name"]: s for s in spans}
    chain = ["learner.publish_prompt", "rollout.generate", "reward.score", "reference.logprobs", "learner.gather"]
    assert set(chain) <= set(by_name), sorted(by_name)
    assert len({s["trace_id"] for s in spans}) == 1
    for parent, child in zip(chain, chain[1:]):
        assert by_name[child]["parent_span_id"] == by_name[parent]["span_id"], (parent, child)
    assert {by_name[n]["service"] for n in chain} == {"learner", "rollout", "reward", "reference"}
    for name in chain:
        assert by_name[name]["attributes"]["meshrl.run_id"] == result.run_id
        assert "meshrl.policy_version" in by_name[name]["attributes"]
        # component, replica and the NATS server the message went through, on the span itself
        attrs = by_name[name]["attributes"]
        assert (attrs["meshrl.component"], attrs["meshrl.replica"]) == (
            by_name[name]["service"],
            by_name[name]["replica"],
        )
        assert attrs["messaging.system"] == "nats" and attrs["server.address"] in ("127.0.0.1", "localhost")
    # the files are OTLP JSON (one ExportTraceServiceRequest per line), importable by Jaeger/Tempo
    first = json.loads(next((run_dir / "traces").glob("*.jsonl")).read_text().splitlines()[0])
    assert first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    step = [s for s in load_spans(run_dir) if s["name"] == "learner.step"]
    assert any(link["trace_id"] == spans[0]["trace_id"] for s in step for link in s["links"])
    assert "rollout.generate" in render_waterfall(spans)


def test_remax_trains_on_greedy_baselines_through_the_mesh(run_mesh):
    """The rollout decodes a greedy response per prompt beside the sampled one, the reward
    service scores it, the learner subtracts its reward (one step: the path, not learning;
    the optimal-token baseline's Σπ² stays inside the learner and is tested there)."""
    result, metrics, ledger = run_mesh("learner.steps=1", "rollout.sampling.group_size=1", preset="remax")
    assert len(finite(metrics, "loss")) == 1 and len(finite(metrics, "reward_greedy")) == 1
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    assert len(trained) == len(set(trained)) == 4
