"""Preemption and resume of the whole mesh, through the real `meshrl train` command.

1. `meshrl train CONFIG` runs in its own process; once two steps are logged it gets SIGTERM
   (what a spot/preemptible machine or `kill` sends). The launcher stops the learner first:
   it finishes (or abandons, if still gathering) its step, writes a checkpoint, exits 0;
   then the launcher stops every other service and exits 143.
2. `meshrl train --resume RUN_DIR` continues from that checkpoint to the last step.

Checked: the checkpoint exists and is the step the first half ended at; every step's
metrics row appears exactly once across the two halves; every dataset draw (the n-th
prompt of the run) is trained exactly once, so nothing in flight at the stop was lost or
trained twice; the resumed run pushed the checkpoint's weights first (version continuity)
and ends with a final checkpoint and the final model dir.
"""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from meshrl.cli.main import main
from meshrl.config.load import dump_config
from meshrl.inputs.checkpoint import list_checkpoints
from tests.e2e.conftest import mesh_config

STEPS = 6


def rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def wait_for_steps(proc: subprocess.Popen, metrics: Path, n: int, timeout_s: float = 400) -> None:
    deadline = time.monotonic() + timeout_s
    while len(rows(metrics)) < n:
        assert proc.poll() is None, f"meshrl train exited early with {proc.returncode}"
        assert time.monotonic() < deadline, f"no {n} steps logged within {timeout_s} s"
        time.sleep(0.5)


def test_sigterm_checkpoints_and_resume_finishes_without_loss_or_repeat(tiny_model_dir, e2e_data, tmp_path):
    run_dir = tmp_path / "run"
    cfg = mesh_config(tiny_model_dir, e2e_data, run_dir, f"learner.steps={STEPS}", "learner.prompts_per_step=2")
    config = tmp_path / "config.yaml"
    config.write_text(dump_config(cfg))
    proc = subprocess.Popen(
        [sys.executable, "-m", "meshrl.cli.main", "train", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_steps(proc, run_dir / "metrics.jsonl", 2)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 143, stderr[-2000:]
    learner_log = (run_dir / "logs" / "learner-0.log").read_text()
    assert "SIGTERM: finishing the current step" in learner_log
    stopped_at = len(rows(run_dir / "metrics.jsonl"))
    assert 2 <= stopped_at < STEPS
    assert [c.step for c in list_checkpoints(run_dir)] == [stopped_at]
    assert not (run_dir / "final").exists()

    assert main(["train", "--resume", str(run_dir)]) == 0

    steps = [r["step"] for r in rows(run_dir / "metrics.jsonl")]
    assert steps == list(range(STEPS))  # each step once, in order, across both halves
    ledger = rows(run_dir / "groups.jsonl")
    draw_of = {e["group_id"]: e["draw"] for e in ledger if e["event"] == "published"}
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    draws = sorted(draw_of[g] for g in trained)
    assert len(trained) == len(set(trained)) == STEPS * 2
    # A draw pending at the stop is re-issued under a new id and its old group dropped as
    # "orphaned": that drop is no skip, the draw was trained.
    dropped = {draw_of[e["group_id"]] for e in ledger if e["event"] == "dropped"} - set(draws)
    assert draws == sorted(set(draws))  # no prompt trained twice
    taken = set(draws) | dropped
    assert taken == set(range(max(taken) + 1))  # none skipped
    versions = {r["step"]: r["weights_version"] for r in rows(run_dir / "metrics.jsonl")}
    assert versions[stopped_at] == stopped_at + 1  # the resumed half continued the versions
    assert [c.step for c in list_checkpoints(run_dir)][-1] == STEPS
    assert (run_dir / "final" / "config.json").exists()
