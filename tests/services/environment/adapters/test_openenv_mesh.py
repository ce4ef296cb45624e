"""An OpenEnv environment trained through the whole mesh: `meshrl train` on the tiny model with
`environment.openenv` launches the environment service running the adapter against a real
OpenEnv server (openenv_guess_server.py, its own process in the openenv venv). Every task is
an episode of the guessing game (Reset, the model's turns as guesses, the server's rewards);
after the first step the environment replica is killed with SIGKILL: its open episodes' groups
are dropped with a reason (never trained half-done), the launcher restarts it, and the run
finishes with every group trained once or dropped, each turn in the replica's traces. The run
keeps its defaults: mutual TLS on the mesh's gRPC and a fresh bearer token for the environment.

Run: timeout 1200 .venv/bin/python -m pytest -q -s -m slow tests/services/environment/adapters/test_openenv_mesh.py
"""

import os
import signal
import subprocess
import sys

import psutil
import pytest

from meshrl.config.load import dump_config, load_config
from meshrl.inputs.data.arithmetic import arithmetic_rows
from meshrl.inputs.data.load import write_rows
from tests.e2e.conftest import mesh_config
from tests.e2e.test_mesh_scale import rows, wait_for
from tests.fixtures.adapters import adapter_python
from tests.services.environment.adapters.openenv_servers import guess_server

STEPS = 2
CLI = [sys.executable, "-m", "meshrl.cli.main"]
# the game's rewards: 1.0 - 0.25 * wrong guesses before the right one, else 0.0 (params.truncated
# scores an episode max_turns cut before it ended)
GAME_REWARDS = {0.0, 0.25, 0.5, 0.75, 1.0}


def environment_pid(train: subprocess.Popen) -> int | None:
    """The pid of the run's environment-0 replica, a descendant of `meshrl train`."""
    for child in psutil.Process(train.pid).children(recursive=True):
        with_args = " ".join(child.cmdline())
        if "meshrl.services.environment" in with_args and "environment-0" in with_args:
            return child.pid
    return None


def served_steps(run_dir) -> int:
    path = run_dir / "traces" / "environment-environment-0.jsonl"
    return path.read_text().count("EnvironmentService/Step") if path.exists() else 0


@pytest.mark.slow
def test_an_openenv_environment_trains_through_the_mesh_and_survives_a_kill(tiny_long_model_dir, tmp_path):
    data = {
        "train": str(write_rows(tmp_path / "train.jsonl", arithmetic_rows(64, seed=0))),
        "eval": str(write_rows(tmp_path / "eval.jsonl", arithmetic_rows(8, seed=1))),
    }
    run_dir, config = tmp_path / "run", tmp_path / "config.yaml"
    with guess_server(adapter_python("openenv")) as (_, url):
        cfg = mesh_config(
            tiny_long_model_dir,
            data,
            run_dir,
            f"learner.steps={STEPS}",
            "learner.prompts_per_step=2",
            "rollout.sampling.group_size=4",
            "environment.name=guess",
            f"environment.openenv={{url: '{url}', observation_field: prompt}}",
            "reward.components=[{name: env, kind: environment, weight: 1.0}]",
            "rollout.agent.max_turns=2",
            "rollout.max_model_len=1024",
            "data.max_prompt_tokens=512",
        )
        config.write_text(dump_config(cfg))
        proc = subprocess.Popen([*CLI, "train", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: len(rows(run_dir / "metrics.jsonl")) >= 1, proc, "a first step", timeout_s=600)
            before = [e for e in rows(run_dir / "groups.jsonl") if e["event"] == "dropped"]
            os.kill(wait_for(lambda: environment_pid(proc), proc, "environment-0's pid"), signal.SIGKILL)
            _, stderr = proc.communicate(timeout=900)
        finally:
            proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    assert "environment-0 was killed by signal SIGKILL" in stderr and "restart 1 of" in stderr, stderr[-3000:]
    assert before == []  # nothing dropped while the adapter and its server were up
    assert [m["step"] for m in rows(run_dir / "metrics.jsonl")] == list(range(STEPS))
    samples = rows(run_dir / "samples.jsonl")
    assert samples and all(s["environment"] == "guess" and 1 <= len(s["turns"]) <= 2 for s in samples)
    assert all(s["env_reward"] in GAME_REWARDS and s["reward"] == s["env_reward"] for s in samples)
    assert served_steps(run_dir)  # each turn a Step span of the adapter's replica
    resolved = load_config(run_dir / "config.yaml")
    assert resolved.launch.grpc_tls == "mutual" and resolved.environment.token_file.endswith("environment-token")
    ledger = rows(run_dir / "groups.jsonl")
    published = {e["group_id"] for e in ledger if e["event"] == "published"}
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    dropped = {e["group_id"]: e["reason"] for e in ledger if e["event"] == "dropped"}
    assert trained and len(trained) == len(set(trained)) and published == set(trained) | set(dropped)
    assert all(dropped.values())
