"""Scale a running real mesh through the real commands: `meshrl scale RUN rollout=2` while
`meshrl train` runs adds a second rollout replica that joins (announced in the run KV,
holding the run's current weights) and produces groups the learner trains; `rollout=1`
then drains it (SIGTERM: it hands back what it holds) and it leaves; the run still finishes
every step and its ledger accounts for every group: trained once, or dropped with a reason.

The run is paused (`meshrl pause`) while the new replica's engine starts and resumed once it is
announced: the steps the run needs then no longer grow with vLLM's start-up (before: 90 steps,
most of them trained after the replica had left, to outlast a start-up of ~20 steps). It joins
a live run all the same (NATS, the run KV, the weights notice), then serves and drains while the
learner trains.

Printed, not asserted (a timing on a shared 2-core machine): seconds from the scale command
to the new replica's announcement and to its first trained group.

Run: timeout 900 .venv/bin/python -m pytest -q -s -m slow tests/e2e/test_mesh_scale.py
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from meshrl.config.load import dump_config
from tests.e2e.conftest import mesh_config

# ≈1 s each here. The replica starts while the run is paused, so the steps only need to
# outlast its first trained group (a step or two after the resume) and its drain (a few s).
STEPS = 30
CLI = [sys.executable, "-m", "meshrl.cli.main"]


def rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def wait_for(condition, proc: subprocess.Popen, what: str, timeout_s: float = 400, poll_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        assert proc.poll() is None, f"meshrl train exited early with {proc.returncode} ({what})"
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s} s"
        time.sleep(poll_s)
    return found


def cli(*argv) -> str:
    done = subprocess.run([*CLI, *map(str, argv)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def status(run_dir: Path) -> dict:
    return json.loads(cli("status", run_dir, "--json"))


def replica(run_dir: Path, name: str) -> dict | None:
    return next((r for r in status(run_dir)["replicas"] if r["replica"] == name), None)


def trained_by(run_dir: Path, name: str) -> list[dict]:
    return [e for e in rows(run_dir / "groups.jsonl") if e["event"] == "trained" and e["replica"] == name]


@pytest.mark.slow
def test_a_rollout_replica_joins_and_leaves_a_running_run(tiny_model_dir, e2e_data, tmp_path):
    run_dir = tmp_path / "run"
    config = tmp_path / "config.yaml"
    config.write_text(dump_config(mesh_config(tiny_model_dir, e2e_data, run_dir, f"learner.steps={STEPS}")))
    proc = subprocess.Popen([*CLI, "train", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(rows(run_dir / "metrics.jsonl")) >= 1, proc, "a first step")
        assert "paused" in cli("pause", run_dir)
        t0, t0_unix = time.monotonic(), time.time()
        assert "rollout ×1 → ×2" in cli("scale", run_dir, "rollout=2")
        joined = wait_for(lambda: replica(run_dir, "rollout-1"), proc, "rollout-1 in the run KV", poll_s=1)
        announced_s = time.monotonic() - t0
        assert "running" in cli("resume", run_dir)
        first = wait_for(lambda: trained_by(run_dir, "rollout-1"), proc, "a group from rollout-1")[0]
        print(
            f"\nscale → rollout-1 announced: {announced_s:.1f} s; → its first trained group: "
            f"{first['time'] - t0_unix:.1f} s (step {first['step']} of {STEPS})"
        )
        learner_step = status(run_dir)["learner"]["step"]
        assert "rollout ×2 → ×1" in cli("scale", run_dir, "rollout=1")
        wait_for(lambda: replica(run_dir, "rollout-1") is None, proc, "rollout-1 withdrawn", poll_s=1)
        left_at_step = status(run_dir)["learner"]["step"]
        _, stderr = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    assert left_at_step < STEPS, "the replica left only after the run's last step: nothing was checked"

    # It joined holding the run's weights and served the shared prompt queue.
    assert joined["service"] == "rollout" and joined["weights_version"] >= 1 and learner_step >= 1
    assert "scaling rollout: ×1 → ×2" in stderr and "started rollout-1" in stderr
    # It drained and left (exit 0, no restart), and the run trained every step.
    assert "rollout-1 left (exit code 0)" in stderr and not rows(run_dir / "restarts.jsonl")
    assert [r["step"] for r in rows(run_dir / "metrics.jsonl")] == list(range(STEPS))
    # Nothing lost, nothing trained twice.
    ledger = rows(run_dir / "groups.jsonl")
    published = {e["group_id"] for e in ledger if e["event"] == "published"}
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    dropped = {e["group_id"]: e["reason"] for e in ledger if e["event"] == "dropped"}
    assert len(trained) == len(set(trained)) and published == set(trained) | set(dropped)
    assert all(dropped.values())
    assert {e["replica"] for e in ledger if e["event"] == "trained"} == {"rollout-0", "rollout-1"}
    audit = rows(run_dir / "audit.jsonl")
    scaled = [(a["action"], a["changes"]["rollout"]["to"]) for a in audit if a["action"] == "scale"]
    assert scaled == [("scale", 2), ("scale", 1)] and {a["action"] for a in audit} == {"pause", "scale", "resume"}
    assert not (run_dir / "launcher.json").exists()
