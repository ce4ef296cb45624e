"""Experiment trackers through their own clients: MLflow (a local sqlite store, and a real
`mlflow server` on loopback that dies mid-run) and W&B offline, each read back with the
library's own reader (MlflowClient; `wandb leet inspect`). Bad input: a password in the
tracking URI, a server that is not there at start-up, a tracker whose package is missing."""

import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from meshrl.cli.main import main
from meshrl.config import ConfigError, load_config
from meshrl.services.learner.metric_logger import forget_steps_from
from meshrl.services.learner.trackers import TrackerUnavailable, mlflow_unsent, start_trackers
from meshrl.services.learner.trackers.background import Job
from tests.fixtures.ports import refused_port
from tests.fixtures.trackers import MlflowServer, wandb_inspect

mlflow = pytest.importorskip("mlflow")


def config(run_dir: Path, *overrides: str):
    return load_config(
        base={
            "run": {"name": "track", "dir": str(run_dir)},
            "model": {"path": "tiny"},
            "data": {"train": "train.jsonl"},
            "algorithm": {"preset": "grpo"},
        },
        overrides=list(overrides),
    )


def write_samples(run_dir: Path, step: int, n: int) -> None:
    with (run_dir / "samples.jsonl").open("a") as f:
        for i in range(n):
            f.write(
                json.dumps(
                    {
                        "step": step,
                        "split": "train",
                        "prompt": f"{i}+1",
                        "response": str(i + 1),
                        "ground_truth": str(i + 1),
                        "reward": 1.0,
                        "components": {"math": {"value": 1.0}},
                        "finish_reason": "stop",
                        "num_tokens": 2,
                        "policy_version": step,
                    }
                )
                + "\n"
            )


def history(client, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def test_mlflow_local_store_holds_config_metrics_samples_and_final_model(tmp_path):
    cfg = config(tmp_path, "telemetry.trackers=[mlflow]", "trainer.optim.lr=0.003")
    (tracker,) = start_trackers(cfg, "run-a")
    write_samples(tmp_path, 1, 2)
    tracker.log(0, {"reward": 0.25, "clip_ratio/low": 0.0, "eval/accuracy": 0.5, "note": "text", "bad": float("nan")})
    write_samples(tmp_path, 2, 1)
    tracker.log(1, {"reward": 0.75, "clip_ratio/low": 0.125})
    tracker.log_final_model(tmp_path / "final")
    tracker.close()

    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = client.get_run(tracker.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["meshrl.run_id"] == "run-a"
    assert run.data.tags["meshrl.final_model"] == str((tmp_path / "final").resolve())
    assert run.data.params["trainer.optim.lr"] == "0.003" and run.data.params["algorithm.name"] == "grpo"
    assert history(client, tracker.run_id, "reward") == [(0, 0.25), (1, 0.75)]
    assert history(client, tracker.run_id, "eval/accuracy") == [(0, 0.5)]
    assert set(run.data.metrics) == {"reward", "clip_ratio/low", "eval/accuracy"}  # no text, no NaN
    local = Path(client.download_artifacts(tracker.run_id, "samples.json", str(tmp_path / "dl")))
    rows = json.loads(local.read_text())
    assert rows["columns"][:3] == ["step", "split", "prompt"] and [r[0] for r in rows["data"]] == [1, 1, 2]
    config_yaml = Path(client.download_artifacts(tracker.run_id, "config.yaml", str(tmp_path / "dl")))
    assert "name: grpo" in config_yaml.read_text()


def test_a_resumed_learner_continues_the_same_mlflow_run(tmp_path):
    cfg = config(tmp_path, "telemetry.trackers=[mlflow]")
    (first,) = start_trackers(cfg, "run-r")
    first.log(0, {"reward": 0.5})
    first.close()
    (second,) = start_trackers(cfg, "run-r")
    second.log(1, {"reward": 0.7})
    second.close()
    assert second.run_id == first.run_id
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert history(client, first.run_id, "reward") == [(0, 0.5), (1, 0.7)]


def test_a_password_in_the_tracking_uri_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="MLFLOW_TRACKING_PASSWORD"):
        config(tmp_path, "telemetry.mlflow.tracking_uri=http://me:s3cret@127.0.0.1:5000")


def test_an_unknown_tracker_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="telemetry.trackers"):
        config(tmp_path, "telemetry.trackers=[comet]")


def test_a_tracking_server_that_is_not_there_fails_at_start_up(tmp_path):
    with refused_port() as port:
        tracking_server_not_there(tmp_path, f"http://127.0.0.1:{port}")


def tracking_server_not_there(tmp_path, uri: str) -> None:
    cfg = config(
        tmp_path,
        "telemetry.trackers=[tensorboard,mlflow]",
        f"telemetry.mlflow.tracking_uri={uri}",
        "telemetry.mlflow.timeout_s=2",
    )
    t0 = time.monotonic()
    with pytest.raises(TrackerUnavailable, match=f"tracking store {uri} did not work.*remove mlflow"):
        start_trackers(cfg, "run-x")
    assert time.monotonic() - t0 < 60  # one try, not MLflow's minutes of retries
    assert isinstance(TrackerUnavailable("x"), OSError)  # the service runner's start-up failure: exit 2


def test_a_missing_tracker_package_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb now raises ImportError
    monkeypatch.delitem(sys.modules, "meshrl.services.learner.trackers.wandb_tracker", raising=False)  # re-import it
    with pytest.raises(ConfigError, match=r"wandb package is not installed: pip install 'meshrl\[trackers\]'"):
        start_trackers(config(tmp_path, "telemetry.trackers=[wandb]"), "run-x")


def test_the_next_start_of_the_run_sends_what_the_last_learner_could_not(tmp_path):
    """Rows a stopped learner left unsent (the server was down) go first at the next start,
    less their end: the MLflow run goes on, RUNNING, and ends FINISHED with every step."""
    cfg = config(tmp_path, "telemetry.trackers=[mlflow]")
    (first,) = start_trackers(cfg, "run-n")
    first.log(0, {"reward": 0.1})
    first.close()
    left = [Job("metrics", {"step": 1, "time_ms": 1, "values": {"reward": 0.2}}), Job("end", {"status": "KILLED"})]
    mlflow_unsent.unsent_path(tmp_path).write_text("".join(json.dumps(asdict(j)) + "\n" for j in left))
    (second,) = start_trackers(cfg, "run-n")
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    wait_for(lambda: not second.sender.jobs)
    assert client.get_run(first.run_id).info.status == "RUNNING"
    second.log(2, {"reward": 0.3})
    second.log_final_model(tmp_path / "final")
    second.close()
    assert history(client, first.run_id, "reward") == [(0, 0.1), (1, 0.2), (2, 0.3)]
    assert client.get_run(first.run_id).info.status == "FINISHED"
    assert not mlflow_unsent.unsent_path(tmp_path).exists()


def test_flush_without_an_mlflow_run_says_so_and_a_wrong_dir_is_one_line(tmp_path, capsys):
    assert main(["trackers", "flush", str(tmp_path)]) == 0
    assert "no MLflow run" in capsys.readouterr().out
    assert main(["trackers", "flush", str(tmp_path / "nope")]) == 2
    assert "is no run dir" in capsys.readouterr().err


def test_flush_sends_the_steps_only_metrics_jsonl_has_after_a_learner_killed_outright(tmp_path, capsys):
    """SIGKILL leaves no unsent file: the steps the tracker never sent come from metrics.jsonl
    (the learner's own rows: step, time, numbers, text); a step MLflow has is not sent again."""
    cfg = config(tmp_path, "telemetry.trackers=[mlflow]")
    (tracker,) = start_trackers(cfg, "run-k")
    tracker.log(0, {"reward": 0.1, "clip_ratio/low": 0.0})
    wait_for(lambda: not tracker.sender.jobs)  # then the learner dies: nothing more reaches MLflow
    rows = [
        {"step": s, "time": 1000.0 + s, "reward": r, "clip_ratio/low": 0.0, "note": "x"}
        for s, r in [(0, 0.1), (1, 0.2), (2, 0.3)]
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["trackers", "flush", str(tmp_path), "--end", "killed"]) == 0
    assert (
        f"sent 0 waiting rows and 2 steps only metrics.jsonl had to MLflow run {tracker.run_id}"
        in capsys.readouterr().out
    )
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert history(client, tracker.run_id, "reward") == [(0, 0.1), (1, 0.2), (2, 0.3)]
    assert history(client, tracker.run_id, "clip_ratio/low") == [(0, 0.0), (1, 0.0), (2, 0.0)]
    assert client.get_run(tracker.run_id).info.status == "KILLED"  # not left RUNNING
    assert main(["status", str(tmp_path)]) == 0
    assert f"MLflow run {tracker.run_id}: ended KILLED\n" in capsys.readouterr().out + "\n"  # nothing left to do


def test_a_resumed_learner_sends_the_steps_a_killed_learner_never_sent(tmp_path, capsys):
    """SIGKILL after step 2: MLflow has step 0, metrics.jsonl steps 0-3, the run stays RUNNING.
    `meshrl status` names the one command; the resume (from step 3's checkpoint, so step 3 is
    trained again and its row forgotten) sends steps 1 and 2 before its own first step."""
    cfg = config(tmp_path, "telemetry.trackers=[mlflow]")
    (killed,) = start_trackers(cfg, "run-q")
    killed.log(0, {"reward": 0.1})
    wait_for(lambda: not killed.sender.jobs)  # then the learner dies: no close, no end
    rows = [{"step": s, "time": 1000.0 + s, "reward": r} for s, r in [(0, 0.1), (1, 0.2), (2, 0.3), (3, 0.35)]]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["status", str(tmp_path)]) == 0
    line = f"MLflow run {killed.run_id}: left RUNNING by a learner stopped before it could end it: "
    assert line + f"`meshrl trackers flush {tmp_path} --end killed` sends" in capsys.readouterr().out

    assert forget_steps_from(tmp_path / "metrics.jsonl", 3) == 1  # what the learner's resume does
    (resumed,) = start_trackers(cfg, "run-q")
    resumed.log(3, {"reward": 0.4})
    resumed.log_final_model(tmp_path / "final")
    resumed.close()
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert resumed.run_id == killed.run_id
    assert history(client, killed.run_id, "reward") == [(0, 0.1), (1, 0.2), (2, 0.3), (3, 0.4)]
    assert client.get_run(killed.run_id).info.status == "FINISHED"
    assert main(["status", str(tmp_path)]) == 0
    assert f"MLflow run {killed.run_id}: ended FINISHED\n" in capsys.readouterr().out + "\n"


@pytest.mark.slow
def test_mlflow_server_down_mid_run_keeps_the_run_going_and_catches_up(tmp_path):
    """Down mid-run: logging returns at once, rows wait and are sent when the server is back;
    rows it never gets (down again at close) stay in RUN_DIR/trackers/mlflow-unsent.jsonl."""
    (tmp_path / "server").mkdir()
    server = MlflowServer(tmp_path / "server").start()
    try:
        cfg = config(
            tmp_path / "run",
            "telemetry.trackers=[mlflow]",
            f"telemetry.mlflow.tracking_uri={server.uri}",
            "telemetry.mlflow.timeout_s=3",
            "telemetry.mlflow.retry_every_s=0.5",
            "telemetry.mlflow.max_pending=3",
        )
        (tracker,) = start_trackers(cfg, "run-s")
        tracker.log(0, {"reward": 0.1})
        tracker.log(1, {"reward": 0.2})
        wait_for(lambda: not tracker.sender.jobs)
        server.stop()
        t0 = time.monotonic()
        tracker.log(2, {"reward": 0.3})  # the server is gone: logging returns at once
        tracker.log(3, {"reward": 0.4})
        assert time.monotonic() - t0 < 1.0
        wait_for(lambda: tracker.sender.down_since is not None)
        server.start()  # same port, same store
        tracker.log(4, {"reward": 0.5})
        wait_for(lambda: not tracker.sender.jobs)
        server.stop()
        for step in (5, 6, 7):  # the queue holds 3: steps 5 and 6 leave it for the unsent file
            tracker.log(step, {"reward": step / 10})
        tracker.log_final_model(tmp_path / "final")
        tracker.close()
        client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'server' / 'store.db'}")  # the server's store
        assert history(client, tracker.run_id, "reward") == [(0, 0.1), (1, 0.2), (2, 0.3), (3, 0.4), (4, 0.5)]
        assert client.get_run(tracker.run_id).info.status == "RUNNING"  # its end is not sent yet
        unsent = mlflow_unsent.load_unsent(tmp_path / "run")
        assert [j.kind for j in unsent] == ["metrics", "metrics", "metrics", "tag", "end"]

        flush = [sys.executable, "-m", "meshrl.cli.main", "trackers", "flush", str(tmp_path / "run")]
        down = subprocess.run(flush, capture_output=True, text=True, timeout=300)
        assert down.returncode == 2 and "did not take row 1 of 5" in down.stderr and "5 rows stay" in down.stderr
        server.start()
        up = subprocess.run(flush, capture_output=True, text=True, timeout=300)
        assert up.returncode == 0 and "sent 5 waiting rows and 0 steps" in up.stdout, up.stderr
    finally:
        server.stop()
    steps = [(0, 0.1), (1, 0.2), (2, 0.3), (3, 0.4), (4, 0.5), (5, 0.5), (6, 0.6), (7, 0.7)]
    assert history(client, tracker.run_id, "reward") == steps
    run = client.get_run(tracker.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["meshrl.final_model"] == str((tmp_path / "final").resolve())
    assert not mlflow_unsent.unsent_path(tmp_path / "run").exists()


def wait_for(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def test_wandb_offline_run_reads_back_with_wandbs_reader(tmp_path):
    pytest.importorskip("wandb")
    cfg = config(tmp_path, "telemetry.trackers=[wandb]", "trainer.optim.lr=0.003")
    (tracker,) = start_trackers(cfg, "run-w")
    write_samples(tmp_path, 1, 2)
    tracker.log(0, {"reward": 0.25, "eval/accuracy": 0.5, "note": "text"})
    tracker.log(1, {"reward": 0.75})
    tracker.log_final_model(tmp_path / "final")
    tracker.close()

    summary = wandb_inspect(tmp_path, "--summary")
    assert summary["state"] == "finished" and summary["run_id"] == "run-w" and summary["project"] == "meshrl"
    assert summary["config"]["trainer"]["optim"]["lr"] == 0.003
    assert summary["summary"]["final_model_path"] == str((tmp_path / "final").resolve())
    assert summary["summary"]["samples"]["nrows"] == 2 and summary["summary"]["samples"]["_type"] == "table-file"
    steps = [r["history"] for r in wandb_inspect(tmp_path) if r["type"] == "history"]
    assert [(h["step"]["num"], h["item"]["reward"]) for h in steps] == [(0, 0.25), (1, 0.75)]
    assert steps[0]["item"]["eval/accuracy"] == 0.5 and "note" not in steps[0]["item"]
    assert (tmp_path / "wandb" / "cache").is_dir()  # wandb's caches stay in the run dir
