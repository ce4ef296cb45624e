"""A finished or stopped run answers `meshrl status RUN_DIR` and `meshrl trace RUN_DIR` from its
run dir alone: the files are written by the real writers (the resolved config, the learner's
JsonlLogger and Ledger, the OTLP JSON span exporter, the audit log), the commands run as the
`meshrl` command does (meshrl.cli.main.main), no launcher, no NATS."""

import json
import os
import time
import types

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from meshrl.cli.main import main
from meshrl.launch.failed_start import set_aside
from meshrl.run.audit import record_action
from meshrl.run.summary import middle_cut, run_summary
from meshrl.services.learner.ledger import Ledger
from meshrl.services.learner.metric_logger import JsonlLogger
from meshrl.telemetry.spans.export import OtlpJsonFileExporter, traces_file
from tests.fixtures.run_config import write_config

MS = 1_000_000


def group(gid: str, version: int, rewards: list[float]):
    samples = [types.SimpleNamespace(reward=r) for r in rewards]
    return types.SimpleNamespace(group_id=gid, policy_version=version, rollout_replica="rollout-0", samples=samples)


def write_metrics(run_dir, steps: int) -> None:
    logger = JsonlLogger(run_dir / "metrics.jsonl")
    for step in range(steps):
        row = {"reward": 0.25 * (step + 1), "kl": 0.01, "weights_version": float(step + 1)}
        if step == 0:
            row.update({"eval_start/accuracy": 0.25, "eval_start/n": 8.0})
        if step == steps - 1:
            row.update({"eval/accuracy": 0.625, "eval/n": 8.0})
        logger.log(step, row)
    logger.close()


def write_ledger(run_dir) -> None:
    ledger = Ledger(run_dir / "groups.jsonl")
    for gid in ("g-1", "g-2", "g-3", "g-4"):
        ledger.published(gid, 0)
    ledger.trained(group("g-1", 0, [1.0, 0.0]), step=0)
    ledger.trained(group("g-2", 1, [1.0, 1.0]), step=1)
    ledger.dropped("g-3", "stale", 1)
    ledger.close()


def write_spans(run_dir) -> None:
    """g-1: publish at 0 ms, generate 10-60 ms; g-2: publish at 100 ms, gather at 130-150 ms."""
    exporter = OtlpJsonFileExporter(traces_file(run_dir, "learner", "0"))
    provider = TracerProvider(resource=Resource.create({"service.name": "learner", "service.instance.id": "0"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer, t0 = provider.get_tracer("test"), 1_000_000 * MS
    for gid, spans in (("g-1", [(0, 10), (10, 60)]), ("g-2", [(100, 110), (130, 150)])):
        root = tracer.start_span("learner.publish_prompt", start_time=t0 + spans[0][0] * MS)
        root.set_attribute("meshrl.group_id", gid)
        child = tracer.start_span(
            "rollout.generate", context=trace.set_span_in_context(root), start_time=t0 + spans[1][0] * MS
        )
        child.end(end_time=t0 + spans[1][1] * MS)
        root.end(end_time=t0 + spans[0][1] * MS)
    provider.shutdown()


def written_an_hour_ago(run_dir) -> None:
    """A run dir nobody writes any more (a run written to in the last minutes is live elsewhere)."""
    then = time.time() - 3600
    for path in run_dir.rglob("*"):
        os.utime(path, (then, then))


def finished_run(tmp_path, steps: int = 3, total: int = 3):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_config(run_dir, learner={"steps": total})
    write_metrics(run_dir, steps)
    write_ledger(run_dir)
    write_spans(run_dir)
    (run_dir / "checkpoints" / "step_2").mkdir(parents=True)
    (run_dir / "checkpoints" / "step_10").mkdir()
    written_an_hour_ago(run_dir)
    return run_dir


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_finished_run_shows_its_summary(tmp_path, capsys):
    run_dir = finished_run(tmp_path)
    (run_dir / "final").mkdir()
    rc, out, err = cli(capsys, "status", run_dir)
    assert rc == 0, err
    assert out.splitlines() == [
        f"run {run_dir}: finished: every step trained, final model saved",
        "steps trained 3/3  policy v3  final reward 0.750",
        "held-out accuracy: 0.250 at start -> 0.625 after step 2 (8 prompts)",
        f"final model: {run_dir / 'final'}",
        f"checkpoints: 2, newest {run_dir / 'checkpoints' / 'step_10'}",
        "groups: 4 published, 2 trained, 1 dropped (stale 1)",
        "restarts: none",
    ]


def test_status_json_is_the_summary(tmp_path, capsys):
    run_dir = finished_run(tmp_path, steps=2, total=5)
    record_action(run_dir, "stop", via="cli")
    rc, out, _ = cli(capsys, "status", run_dir, "--json")
    summary = json.loads(out)
    assert rc == 0 and summary == {**run_summary(run_dir), "restarts": {}}
    assert (summary["steps_trained"], summary["total_steps"], summary["policy_version"]) == (2, 5, 2)
    assert summary["held_out"] == {
        "before": {"eval/accuracy": 0.25, "eval/n": 8.0},
        "after": {"eval/accuracy": 0.625, "eval/n": 8.0},
        "after_step": 1,
    }
    assert summary["final_model"] is None and summary["groups"]["dropped_by_reason"] == {"stale": 1}
    assert summary["ended"].startswith("stopped by ") and " via cli at " in summary["ended"]
    assert summary["ended"].endswith(f"after 2 steps; continue with `meshrl train --resume {run_dir}`")


def test_a_run_that_failed_before_its_first_step_says_so_and_how_to_start_again(tmp_path, capsys):
    """A local run (its launcher's lock file stays): it surely ended, so the resume is certain."""
    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    write_config(run_dir, learner={"steps": 4})
    (run_dir / "launcher.lock").touch()
    (run_dir / "logs" / "learner-0.log").write_text(
        "2026-01-01 00:00:00,000 meshrl.learner INFO starting\n"
        "2026-01-01 00:00:01,000 meshrl.learner ERROR the model at /m cannot be loaded\n"
    )
    written_an_hour_ago(run_dir)
    rc, out, _ = cli(capsys, "status", run_dir)
    first = out.splitlines()[0]
    assert rc == 0 and "ended before its first step without finishing" in first
    assert "ERROR the model at /m cannot be loaded" in first
    assert first.endswith(f"there is no checkpoint: `meshrl train --resume {run_dir}` starts it again at step 0")
    assert "steps trained 0/4  policy v-  final reward -" in out


def test_a_run_whose_learner_writes_without_a_local_launcher_is_running_elsewhere(tmp_path, capsys):
    """compose or Kubernetes: no launcher.json, but the learner wrote metrics a moment ago."""
    run_dir = finished_run(tmp_path, steps=2, total=5)
    write_metrics(run_dir, 3)  # a step just now
    rc, out, _ = cli(capsys, "status", run_dir)
    first = out.splitlines()[0]
    assert rc == 0 and first.startswith(f"run {run_dir}: running, not by a launcher on this machine")
    assert "podman-compose -f deploy/compose/compose.yaml ps" in first and "--resume" not in first
    assert "steps trained 3/5" in out
    (run_dir / "launcher.lock").touch()  # the same, had a launcher here run it: a local run that just ended
    assert "ended after 3 steps without finishing" in cli(capsys, "status", run_dir)[1]
    (run_dir / "launcher.lock").unlink()
    written_an_hour_ago(run_dir)  # the same dir once its learner has stopped writing: maybe dead, maybe not
    assert "not finished, no launcher on this machine ran it" in cli(capsys, "status", run_dir)[1]


def test_a_compose_run_in_a_long_first_step_reads_running_by_its_heartbeat(tmp_path, capsys):
    """metrics.jsonl is an hour old (or none yet: a first step of 357 s) and the learner logs to
    stdout, but it touched RUN_DIR/learner.heartbeat just now: running, and no resume offered."""
    run_dir = finished_run(tmp_path, steps=1, total=2)
    (run_dir / "learner.heartbeat").touch()
    rc, out, _ = cli(capsys, "status", run_dir)
    first = out.splitlines()[0]
    assert rc == 0 and first.startswith(f"run {run_dir}: running, not by a launcher on this machine")
    assert "its learner wrote " in first and "--resume" not in first


def test_a_quiet_unfinished_run_no_launcher_here_ran_says_to_check_its_services_before_resuming(tmp_path, capsys):
    """Nothing written for an hour, no final/, no launcher lock: its learner may still run where
    this machine cannot see, so the resume is said only after checking compose or Kubernetes."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_config(run_dir, learner={"steps": 2})
    (run_dir / "learner.heartbeat").touch()
    written_an_hour_ago(run_dir)
    rc, out, _ = cli(capsys, "status", run_dir)
    first = out.splitlines()[0]
    assert rc == 0 and "ended" not in first
    assert first == (
        f"run {run_dir}: not finished, no launcher on this machine ran it, and its learner has not written to "
        "the run dir for 3600 s (0 steps trained); check that nothing still runs it (`podman-compose -f "
        "deploy/compose/compose.yaml ps` or `kubectl get pods`) before resuming; there is no checkpoint: "
        f"`meshrl train --resume {run_dir}` starts it again at step 0"
    )


def test_the_learners_last_word_is_shown_whole_with_the_fix_at_its_end(tmp_path, capsys):
    """A 400-character error (a gRPC status with the fix after it) is not cut at 300 characters."""
    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    write_config(run_dir, learner={"steps": 4})
    (run_dir / "launcher.lock").touch()
    reason = "x" * 330 + " status INVALID_ARGUMENT: set rollout.max_model_len to at least 4096"
    (run_dir / "logs" / "learner-0.log").write_text(f"2026-01-01 00:00:01,000 meshrl.learner ERROR {reason}\n")
    written_an_hour_ago(run_dir)
    first = cli(capsys, "status", run_dir)[1].splitlines()[0]
    assert f"the learner's last word: 2026-01-01 00:00:01,000 meshrl.learner ERROR {reason}; there is" in first


def test_a_very_long_last_word_is_cut_in_its_middle_at_spaces_keeping_its_end():
    text = " ".join(f"w{i:03d}" for i in range(1000)) + " INVALID_ARGUMENT: set rollout.max_model_len"
    assert middle_cut(text, limit=60) == "w000 w001 w002 w003 w004 w005 … set rollout.max_model_len"
    assert middle_cut("short and whole", limit=40) == "short and whole"


def test_a_compose_run_that_finished_reads_finished_without_its_config(tmp_path, capsys):
    """compose keeps the run's config with the containers: no config.yaml, but final/ is there."""
    run_dir = finished_run(tmp_path, steps=2, total=2)
    (run_dir / "config.yaml").unlink()
    write_metrics(run_dir, 2)  # its last step a moment ago
    (run_dir / "final").mkdir()
    rc, out, _ = cli(capsys, "status", run_dir)
    assert rc == 0 and out.splitlines()[0] == f"run {run_dir}: finished: every step trained, final model saved"


def test_a_dir_that_holds_no_run_is_still_refused(tmp_path, capsys):
    rc, _, err = cli(capsys, "status", tmp_path)
    assert rc == 2 and "no launcher is running for" in err


def test_trace_without_a_group_lists_groups_with_step_reward_and_duration(tmp_path, capsys):
    run_dir = finished_run(tmp_path)
    rc, out, _ = cli(capsys, "trace", run_dir)
    assert rc == 0
    assert out.splitlines() == [
        "GROUP  STEP  REWARD  DURATION  STATE",
        "g-1       0   0.500    60.0ms  trained",
        "g-2       1   1.000    50.0ms  trained",
        "g-3       -       -         -  dropped: stale",
        "g-4       -       -         -  not settled",
    ]


def test_a_dir_whose_start_failed_says_to_start_it_again(tmp_path, capsys):
    """The launcher set the failed start's files aside (meshrl.launch.failed_start): status names
    where they are and the command that takes the dir again."""
    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    write_config(run_dir)
    aside = set_aside(run_dir, "t-20260101-000000")
    rc, _, err = cli(capsys, "status", run_dir)
    assert rc == 2 and f"its last start failed before training anything (its config and logs: {aside})" in err
    assert f"start it again with `meshrl train` and run.dir={run_dir}" in err
