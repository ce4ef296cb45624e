"""A run whose learner stops short (every group dropped: it checkpoints and exits 0) is a failed
run: `meshrl train` prints the stop reason from alerts.jsonl and exits 1; a finished run, or
one an operator stopped, is not (meshrl.launch.outcome)."""

import json
import sys
import textwrap
import time

from meshrl.cli import train as train_cli
from meshrl.launch.local import run_local
from meshrl.launch.outcome import UNKNOWN, stop_reason
from meshrl.launch.training import RunResult
from meshrl.run_layout import RunDir
from tests.unit.launch.stand_in import stand_in_config

DROPPED = (
    "64 groups in a row were dropped and none trained (env_invalid_argument ×64); is environment.name one it serves?"
)
# the learner of a run whose every group was dropped: no step, one alert, a clean exit 0
STOPPING_LEARNER = textwrap.dedent(f"""
    import json, sys, time, pathlib
    run_dir = pathlib.Path(sys.argv[1]).parent
    with open(run_dir / "alerts.jsonl", "a") as f:
        f.write(json.dumps({{"rule": "dropped_in_a_row", "severity": "critical", "time": time.time(),
                            "message": {DROPPED!r}}}) + "\\n")
    sys.exit(0)
""")


def alert(run: RunDir, message: str, at: float, severity: str = "critical") -> None:
    with open(run.alerts, "a") as f:
        f.write(json.dumps({"severity": severity, "message": message, "time": at}) + "\n")


def test_a_run_stopped_short_by_an_alert_names_it(tmp_path):
    run = RunDir(tmp_path)
    alert(run, "an old run's alert", at=10.0)
    alert(run, "a warning", at=110.0, severity="warning")
    alert(run, DROPPED, at=120.0)
    assert stop_reason(run, steps_done=0, total=3, since=100.0) == DROPPED


def test_a_finished_run_or_an_operators_stop_is_no_failure(tmp_path):
    run = RunDir(tmp_path)
    alert(run, DROPPED, at=120.0)
    assert stop_reason(run, steps_done=3, total=3, since=100.0) == ""
    run.audit.write_text(json.dumps({"action": "stop", "who": "alice", "time": 130.0}) + "\n")
    assert stop_reason(run, steps_done=1, total=3, since=100.0) == ""


def test_a_short_run_without_an_alert_points_at_the_learner_log(tmp_path):
    assert stop_reason(RunDir(tmp_path), steps_done=0, total=3, since=time.time()) == UNKNOWN


def test_run_local_whose_learner_stops_short_is_a_failed_result(tmp_path):
    def argv_for(spec, url, run_id, config_path):
        if spec.name == "learner":
            return [sys.executable, "-c", STOPPING_LEARNER, str(config_path)]
        return [sys.executable, "-c", "import time; time.sleep(600)"]

    cfg = stand_in_config(3)
    result = run_local(cfg, tmp_path / "run", progress=False, argv_for=argv_for)
    assert result.steps == 0 and result.failure == DROPPED
    assert "FAILED after 0 of 3 steps: 64 groups in a row were dropped" in result.summary()
    assert "done:" not in result.summary()


def test_meshrl_train_exits_1_with_the_reason_on_stderr(tmp_path, monkeypatch, capsys):
    failed = RunResult("r1", tmp_path, 0, {}, total=3, failure=DROPPED)
    monkeypatch.setattr(train_cli, "load_config", lambda *a: None)
    monkeypatch.setattr(train_cli, "check_model_settings", lambda cfg: None)
    monkeypatch.setattr(train_cli, "check_inputs", lambda cfg: None)
    monkeypatch.setattr(train_cli, "config_path", lambda args: tmp_path / "c.yaml")
    monkeypatch.setattr(train_cli, "run_local", lambda *a, **k: failed)
    args = type("Args", (), {"overrides": [], "dry_run": False, "resume": None, "run_dir": tmp_path})()
    assert train_cli.run(args) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("run r1 FAILED after 0 of 3 steps: 64 groups") and "--resume" in err
    monkeypatch.setattr(train_cli, "run_local", lambda *a, **k: RunResult("r2", tmp_path, 3, {}, total=3))
    assert train_cli.run(args) == 0 and "run r2 done: 3 steps" in capsys.readouterr().out
