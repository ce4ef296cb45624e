"""Every example config under examples/ loads with the one schema (a key renamed in the schema
fails here, not in a user's first run), and the agent example keeps the settings that make a
step fit the main job's budget (docs/benchmarks.md, "Agents")."""

from pathlib import Path

import pytest

from meshrl.config import load_config

EXAMPLES_DIR = Path(__file__).resolve().parents[3] / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.yaml"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 7, EXAMPLES  # grpo, ppo, dpo, dapo, gspo, reward model, agent


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_loads(path):
    cfg = load_config(path)
    assert cfg.run.name


def test_the_agent_example_shares_each_groups_prompt_and_keeps_whole_calls():
    cfg = load_config(EXAMPLES_DIR / "agent_tool_smollm2.yaml")
    assert cfg.trainer.forward == "shared_prefix" and cfg.trainer.mini_batches == 1
    # a Hermes call of the calculator is ~33 tokens: 32 cut its </tool_call> (every call a parse failure)
    assert cfg.rollout.sampling.max_tokens >= 40
    assert cfg.reward.components[0].kind == "environment"
