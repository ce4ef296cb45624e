"""`meshrl train examples/ppo_reward_model_smollm2.yaml` for real, on the tiny model with a
tiny sequence-classification reward model built in code: the launcher starts the
reward-model service beside the others, the reward service mixes its scores with the math
rule, and PPO trains on them for 3 steps. One run (the CI's e2e budget)."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.fixtures.tiny_reward_model import build_tiny_reward_model

pytestmark = pytest.mark.slow
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ppo_reward_model_smollm2.yaml"
STEPS = 3


def tiny_overrides(model_dir, data, rm_dir, run_dir) -> list[str]:
    """The example's settings for the tiny model (as tests/e2e/conftest.py's mesh_config)."""
    return [
        f"model.path={model_dir}",
        f"data.train={data['train']}",
        "data.max_prompt_tokens=128",
        f"reward_model.path={rm_dir}",
        "reward_model.device=cpu",
        f"run.dir={run_dir}",
        "rollout.sampling.max_tokens=8",
        "rollout.kv_cache_gb=1.0",
        "rollout.max_model_len=256",
        f"learner.steps={STEPS}",
        "learner.prompts_per_step=4",
        "trainer.optim.lr=1e-3",
    ]


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_ppo_example_trains_on_reward_model_scores_mixed_with_a_rule(tiny_model_dir, e2e_data, tmp_path):
    rm_dir = build_tiny_reward_model(tmp_path / "rm")
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "meshrl.cli.main",
            "train",
            str(EXAMPLE),
            *tiny_overrides(tiny_model_dir, e2e_data, rm_dir, run_dir),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"done: {STEPS} steps" in done.stdout + done.stderr
    resolved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert resolved["reward_model"]["grpc_port"] > 0  # the launcher picked it; the reward service called it
    assert "RewardService on port" in (run_dir / "logs" / "reward_model-0.log").read_text()

    metrics = rows(run_dir / "metrics.jsonl")
    assert len(metrics) == STEPS
    for m in metrics:  # both components scored every sample; none of the model's scores failed
        assert math.isfinite(m["reward/rm"]) and math.isfinite(m["reward/correct"]), m
        assert m["reward/rm_failed"] == 0 and m["reward/correct_failed"] == 0
    samples = [s for s in rows(run_dir / "samples.jsonl") if s["split"] == "train"]
    assert samples
    rm_values = [s["components"]["rm"]["value"] for s in samples]
    assert all(s["components"]["rm"]["status"] == "OK" for s in samples)
    assert all(abs(v) <= 5.0 for v in rm_values)  # reward_model.clip: 5
    assert len({round(v, 6) for v in rm_values}) > 1  # normalised model scores, not a constant
