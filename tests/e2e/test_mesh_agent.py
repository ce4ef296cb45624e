"""Agents end to end (issue 20): `meshrl train`'s launcher runs the whole mesh — learner, the
rollout (real vLLM, tiny model), reward, and the built-in `calculator` environment as its own
replica on its own port with a fresh bearer token — and every group is N multi-turn episodes.

The tiny model (tiny_long_model_dir: room for the calculator's tools block) never writes a
tool call, and the calculator never ends an episode, so every episode runs `max_turns`
turns with the (empty) observation's template delta between them: loss masks with holes,
trained through the learner. The learnable vowel reward scores
the final turn. A few steps prove the plumbing; learning a tool is the SmolLM2 benchmark's job
(benchmarks/agent_tool.py).
"""

import json

import pytest

from meshrl.launch.local import run_local
from tests.e2e.conftest import mesh_config

pytestmark = pytest.mark.slow


def run(model_dir, data, run_dir, *overrides):
    cfg = mesh_config(model_dir, data, run_dir, *overrides)
    result = run_local(cfg, run_dir, progress=False, grace_s=10.0)
    lines = lambda name: [json.loads(x) for x in (run_dir / name).read_text().splitlines()]  # noqa: E731
    return result, lines("metrics.jsonl"), lines("groups.jsonl")


def test_multi_turn_episodes_train_through_the_mesh_and_are_evaluated(tiny_long_model_dir, e2e_data, tmp_path):
    """(tests/e2e/test_mesh_environment.py runs tool_arith, whose episodes here are one turn,
    and scales its replicas; this one covers observations between turns and evaluation.)"""
    steps = 2
    result, metrics, ledger = run(
        tiny_long_model_dir,
        e2e_data,
        tmp_path / "run",
        f"learner.steps={steps}",
        "rollout.max_model_len=1024",
        "environment.name=calc",
        "environment.builtin=calculator",
        "rollout.agent.max_turns=2",
        "rollout.agent.max_episode_tokens=64",
        "rollout.agent.max_observation_tokens=16",
        "eval.every=2",
        "eval.correct_component=vowel",
        "eval.samples_per_step=2",
        "eval.max_prompts=4",
    )
    assert result.steps == steps and len(metrics) == steps

    trained = [e for e in ledger if e["event"] == "trained"]
    published = {e["group_id"] for e in ledger if e["event"] == "published"}
    dropped = [e for e in ledger if e["event"] == "dropped"]
    assert len(trained) == steps * 4 and not dropped, dropped
    assert {e["group_id"] for e in trained} == published  # nothing lost, nothing dropped

    samples = [json.loads(x) for x in (result.run_dir / "samples.jsonl").read_text().splitlines()]
    episodes = [s for s in samples if s["split"] == "train"]
    assert episodes and all(s["environment"] == "calc" for s in episodes)
    for s in episodes:
        first, last = s["turns"]  # max_turns=2: the calculator never says done
        assert not first["done"] and not last["done"] and s["response"] == last["text"]
        # the observation between the turns is the template's delta, ending in the next turn's header
        assert first["observation"].endswith("\n<|im_start|>assistant\n") and last["observation"] == ""
        # what the learner trained on: a loss mask with a hole where the observation is
        (start, end, obs_end), (start2, end2, obs_end2) = first["tokens"], last["tokens"]
        assert start == 0 < end < obs_end == start2 < end2 == obs_end2 == s["response_tokens"]
        assert s["num_tokens"] == (end - start) + (end2 - start2) < s["response_tokens"]
    assert all(0.0 <= m["reward"] <= 1.0 for m in metrics)
    assert "eval/accuracy" in metrics[-1] and metrics[-1]["eval/n"] == 4  # held-out episodes, scored
