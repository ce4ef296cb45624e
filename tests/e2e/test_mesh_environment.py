"""A real run with an environment, through the real commands: `meshrl train` on the tiny model
starts the built-in tool_arith environment (one replica, its own NATS user, its bearer token)
before the rollout, every task is played as an episode (Reset, the model's turn, Step with
the environment's reward, Close), `meshrl scale RUN env=2` adds a replica that announces
itself and serves episodes, `meshrl status` shows both READY, and the run finishes every step
with every group trained once or dropped with a reason.

Run: timeout 1200 .venv/bin/python -m pytest -q -s -m slow tests/e2e/test_mesh_environment.py
"""

import subprocess
import sys

import pytest

from meshrl.config.load import dump_config
from tests.e2e.conftest import mesh_config
from tests.e2e.test_mesh_scale import cli, replica, rows, status, wait_for

STEPS = 6
CLI = [sys.executable, "-m", "meshrl.cli.main"]
ENVIRONMENT = (
    "environment.name=tool_arith",
    "environment.builtin=tool_arith",
    "reward.components=[{name: env, kind: environment, weight: 1.0}]",
    "rollout.max_model_len=2048",
    "data.max_prompt_tokens=1536",
)


def served_steps(run_dir, replica_id: str) -> int:
    """Step calls the replica answered: its server spans in RUN_DIR/traces."""
    path = run_dir / "traces" / f"environment-{replica_id}.jsonl"
    return path.read_text().count("EnvironmentService/Step") if path.exists() else 0


@pytest.mark.slow
def test_a_run_plays_episodes_on_launched_environment_replicas(tiny_long_model_dir, e2e_data, tmp_path):
    run_dir = tmp_path / "run"
    config = tmp_path / "config.yaml"
    cfg = mesh_config(
        tiny_long_model_dir,
        e2e_data,
        run_dir,
        f"learner.steps={STEPS}",
        "learner.prompts_per_step=2",
        "rollout.sampling.group_size=4",
        *ENVIRONMENT,
    )
    config.write_text(dump_config(cfg))
    proc = subprocess.Popen([*CLI, "train", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(rows(run_dir / "metrics.jsonl")) >= 1, proc, "a first step", timeout_s=600)
        assert "environment ×1 → ×2" in cli("scale", run_dir, "env=2")
        joined = wait_for(lambda: replica(run_dir, "environment-1"), proc, "environment-1 in the run KV", poll_s=2)
        wait_for(lambda: served_steps(run_dir, "environment-1"), proc, "an episode on environment-1", poll_s=2)
        shown = {r["replica"]: r for r in status(run_dir)["replicas"] if r["service"] == "environment"}
        _, stderr = proc.communicate(timeout=900)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    assert joined["grpc"].startswith("127.0.0.1:") and set(shown) == {"environment-0", "environment-1"}
    assert all(r["ready"] is True for r in shown.values())
    assert "started environment-1" in stderr
    # Every task was an episode of tool_arith, rewarded by the environment.
    samples = rows(run_dir / "samples.jsonl")
    assert samples and all(s["environment"] == "tool_arith" and s["turns"] for s in samples)
    # the environment's reward reached the learner: each trained episode's reward is it (weight 1)
    assert all(s["env_reward"] in (0.0, 1.0) and s["reward"] == s["env_reward"] for s in samples)
    assert all(s["components"]["env"] == {"value": s["env_reward"], "status": "OK"} for s in samples)
    assert all(s["turns"][-1]["done"] or s["turns"][-1]["finish_reason"] for s in samples)
    assert [m["step"] for m in rows(run_dir / "metrics.jsonl")] == list(range(STEPS))
    assert served_steps(run_dir, "environment-0") and served_steps(run_dir, "environment-1")
    # Nothing lost, nothing trained twice; the token file is gone with the run.
    ledger = rows(run_dir / "groups.jsonl")
    published = {e["group_id"] for e in ledger if e["event"] == "published"}
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    dropped = {e["group_id"]: e["reason"] for e in ledger if e["event"] == "dropped"}
    assert len(trained) == len(set(trained)) and published == set(trained) | set(dropped) and all(dropped.values())
    assert not (run_dir / "secrets" / "environment-token").exists()
    assert (run_dir / "logs" / "environment-1.log").exists()
