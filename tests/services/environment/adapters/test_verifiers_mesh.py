"""verifiers environments trained through the whole mesh: `meshrl train` on the tiny model with
`environment.verifiers` launches environment replicas that play the environment in its own
venv (tests/fixtures/verifiers_envs, pip-installed there), on rows `meshrl data verifiers`
wrote from the environment's own dataset.
- single-turn (meshrl_vf_sums): every episode is one turn scored by the rubric
  (correct_answer x 1.0 + answer_format x 0.5), each function's score in samples.jsonl;
- tool-using (meshrl_vf_calc, a vf.ToolEnv with an `add` tool) on two replicas: after the first
  step replica environment-0 is killed with SIGKILL (its library worker child goes with it);
  its open episodes' groups are dropped with a reason (never trained half-done), the launcher
  restarts it, and the run finishes with every group trained once or dropped.

Run: timeout 1800 .venv/bin/python -m pytest -q -s -m slow tests/services/environment/adapters/test_verifiers_mesh.py
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from meshrl.config.load import dump_config
from tests.e2e.conftest import mesh_config
from tests.e2e.test_mesh_scale import rows, wait_for
from tests.fixtures.verifiers_envs import verifiers_python
from tests.services.environment.adapters.test_openenv_mesh import environment_pid, served_steps

CLI = [sys.executable, "-m", "meshrl.cli.main"]
SUMS_REWARDS = {0.0, 0.5, 1.0, 1.5}  # correct_answer x 1.0 + answer_format x 0.5


@pytest.fixture(scope="module")
def vf_python() -> str:
    return verifiers_python()


def verifiers_rows(tmp_path, python: str, module: str, n: int, name: str) -> str:
    out = tmp_path / f"{name}.jsonl"
    cmd = [*CLI, "data", "verifiers", "--module", module, "--args", json.dumps({"n": n}), "--python", python]
    done = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and f"wrote {n} rows" in done.stdout, done.stderr[-2000:]
    return str(out)


def config_for(tmp_path, model_dir, python: str, module: str, name: str, *overrides) -> tuple:
    train = verifiers_rows(tmp_path, python, module, 16, "train")
    # No held-out rows made (one `meshrl data verifiers` less, ~20 s on a loaded host): these
    # runs never evaluate (eval.every is 0), so data.eval only needs to name a file.
    data = {"train": train, "eval": train}
    run_dir, config = tmp_path / "run", tmp_path / "config.yaml"
    cfg = mesh_config(
        model_dir,
        data,
        run_dir,
        "learner.prompts_per_step=2",
        "rollout.sampling.group_size=4",
        "eval.samples_per_step=8",
        f"environment.name={name}",
        f"environment.verifiers={{module: {module}, args: {{n: 16}}, python: '{python}'}}",
        "reward.components=[{name: env, kind: environment, weight: 1.0}]",
        "rollout.max_model_len=1024",
        "data.max_prompt_tokens=512",
        *overrides,
    )
    config.write_text(dump_config(cfg))
    return run_dir, config


def ledger_of(run_dir) -> tuple[set, list, dict]:
    ledger = rows(run_dir / "groups.jsonl")
    published = {e["group_id"] for e in ledger if e["event"] == "published"}
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    dropped = {e["group_id"]: e["reason"] for e in ledger if e["event"] == "dropped"}
    return published, trained, dropped


@pytest.mark.slow
def test_a_single_turn_verifiers_environment_trains_with_its_rubric_details(tiny_long_model_dir, tmp_path, vf_python):
    run_dir, config = config_for(
        tmp_path,
        tiny_long_model_dir,
        vf_python,
        "meshrl_vf_sums",
        "sums",
        "learner.steps=1",
        "rollout.agent.max_turns=1",
    )
    done = subprocess.run([*CLI, "train", str(config)], capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    samples = rows(run_dir / "samples.jsonl")
    assert samples and all(s["environment"] == "sums" and len(s["turns"]) == 1 for s in samples)
    assert all(s["env_reward"] in SUMS_REWARDS and s["reward"] == s["env_reward"] for s in samples)
    for s in samples:  # each rubric function's score beside the turn; the reward is their weighted sum
        details = s["turns"][0]["reward_details"]
        assert set(details) == {"correct_answer", "answer_format", "num_turns"} and details["num_turns"] == 1.0
        assert s["env_reward"] == details["correct_answer"] + 0.5 * details["answer_format"]
    published, trained, dropped = ledger_of(run_dir)
    assert trained and published == set(trained) and dropped == {}  # nothing dropped


@pytest.mark.slow
def test_a_tool_using_verifiers_environment_trains_on_replicas_and_survives_a_kill(
    tiny_long_model_dir, tmp_path, vf_python
):
    run_dir, config = config_for(
        tmp_path, tiny_long_model_dir, vf_python, "meshrl_vf_calc", "calc",
        "learner.steps=2", "environment.replicas=2", "rollout.agent.max_turns=2",
    )  # fmt: skip
    proc = subprocess.Popen([*CLI, "train", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(rows(run_dir / "metrics.jsonl")) >= 1, proc, "a first step", timeout_s=900)
        before = [e for e in rows(run_dir / "groups.jsonl") if e["event"] == "dropped"]
        os.kill(wait_for(lambda: environment_pid(proc), proc, "environment-0's pid"), signal.SIGKILL)
        _, stderr = proc.communicate(timeout=1200)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    assert "environment-0 was killed by signal SIGKILL" in stderr and "restart 1 of" in stderr, stderr[-3000:]
    assert before == []  # nothing dropped while the replicas were up
    assert [m["step"] for m in rows(run_dir / "metrics.jsonl")] == [0, 1]
    samples = rows(run_dir / "samples.jsonl")
    assert samples and all(s["environment"] == "calc" and 1 <= len(s["turns"]) <= 2 for s in samples)
    offered = [s for s in samples if s["turns"][-1]["done"]]  # ended by the environment: rubric-scored
    for s in offered:
        details = s["turns"][-1]["reward_details"]
        assert {"correct_answer", "used_tool", "num_turns", "total_tool_calls", "add_calls"} == set(details)
        assert s["env_reward"] == details["correct_answer"] + 0.5 * details["used_tool"]
    assert served_steps(run_dir)  # each turn a Step span of the adapter's replica
    published, trained, dropped = ledger_of(run_dir)
    assert trained and len(trained) == len(set(trained)) and published == set(trained) | set(dropped)
    assert all(dropped.values())
