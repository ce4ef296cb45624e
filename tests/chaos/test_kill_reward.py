"""Kill -9 the reward service of a real mesh mid-run: the launcher restarts it and the run
still finishes every step, through the real `meshrl train` command.

Checked: `meshrl train` exits 0 with all STEPS in metrics.jsonl; the restart is on the
console, in RUN_DIR/restarts.jsonl (reward-0, SIGKILL) and in alerts.jsonl
(`service_restart`); the reward log shows the second start; the shared-memory segments the
rollout's vLLM engine mapped (`psm_*`) are gone from /dev/shm after the run.

Run: timeout 900 .venv/bin/python -m pytest -q -m slow tests/chaos/test_kill_reward.py
"""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from meshrl.config.load import dump_config
from meshrl.ops.launch.shm import mapped_segments
from tests.e2e.conftest import mesh_config

STEPS = 4


def rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def service_processes(proc: subprocess.Popen, module: str) -> list[psutil.Process]:
    """Processes under `proc` whose command line runs `module` (and what they started)."""
    found = []
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            if module in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def wait_for(condition, proc: subprocess.Popen, what: str, timeout_s: float = 400) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert proc.poll() is None, f"meshrl train exited early with {proc.returncode} ({what})"
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s} s"
        time.sleep(0.5)


def rollout_segments(proc: subprocess.Popen) -> set[str]:
    """psm_* segments mapped by the rollout service and its engine core."""
    leaders = service_processes(proc, "meshrl.services.rollout")
    pids = {p.pid for p in leaders} | {c.pid for p in leaders for c in p.children(recursive=True)}
    return set().union(*(mapped_segments(pid) for pid in pids))


@pytest.mark.slow
def test_a_sigkilled_reward_service_is_restarted_and_the_run_finishes(tiny_model_dir, e2e_data, tmp_path):
    run_dir = tmp_path / "run"
    cfg = mesh_config(tiny_model_dir, e2e_data, run_dir, f"learner.steps={STEPS}",
                      "learner.prompts_per_step=2", "launch.backoff_initial_s=1")
    config = tmp_path / "config.yaml"
    config.write_text(dump_config(cfg))
    proc = subprocess.Popen([sys.executable, "-m", "meshrl.ops.cli.main", "train", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(rows(run_dir / "metrics.jsonl")) >= 1, proc, "a first step")
        segments = rollout_segments(proc)
        [reward] = [p for p in service_processes(proc, "meshrl.services.reward")
                    if p.ppid() == psutil.Process(proc.pid).pid]
        reward.send_signal(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    assert [r["step"] for r in rows(run_dir / "metrics.jsonl")] == list(range(STEPS))
    assert "reward-0 was killed by signal SIGKILL" in stderr
    [restart] = rows(run_dir / "restarts.jsonl")
    assert (restart["service"], restart["signal"], restart["event"]) == ("reward-0", "SIGKILL", "restart")
    assert "service_restart" in [a["rule"] for a in rows(run_dir / "alerts.jsonl")]
    assert "==== meshrl launcher: restart 1 of reward-0" in (run_dir / "logs" / "reward-0.log").read_text()
    assert segments, "the rollout's vLLM engine mapped no psm_* segment: nothing was checked"
    assert not [s for s in segments if Path("/dev/shm", s).exists()]
