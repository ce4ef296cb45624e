"""`meshrl scale` and `meshrl status` against a run dir: what they refuse (exit 2, one clear
line), what a good scale request leaves (scale.json for the launcher, a row in audit.jsonl and
the same row on the run's events subject),
and what status reads from a real NATS run KV (the learner down is shown, not fatal)."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from meshrl.addresses import free_port
from meshrl.cli.main import main
from meshrl.run.presence import LauncherInfo, write_presence
from meshrl.transport.bus import Bus
from meshrl.transport.bus.registry import announce_service


def run_cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def live_run(tmp_path):
    """A run dir whose launcher is 'running' (this test process's pid)."""
    info = LauncherInfo(
        os.getpid(), "run-s", "nats://127.0.0.1:1", f"127.0.0.1:{free_port()}", {"rollout": 1, "reward": 1}
    )
    write_presence(tmp_path, info)
    return tmp_path, info


@pytest.mark.parametrize(
    "counts, says",
    [
        (["learner=2"], "the learner does not scale"),
        (["critic=2"], "unknown service 'critic'; scalable: rollout, reward, reference, reward_model, environment"),
        (["rollout=0"], "rollout=0: allowed 1..64"),
        (["rollout=two"], "the count must be a whole number"),
        (["rollout"], "expected SERVICE=COUNT"),
        (["reference=2"], "has no reference service (it runs: rollout ×1, reward ×1)"),
    ],
)
def test_scale_refuses_what_cannot_be_scaled(capsys, live_run, counts, says):
    run_dir, _ = live_run
    rc, _, err = run_cli(capsys, "scale", run_dir, *counts)
    assert rc == 2 and says in err and "Traceback" not in err
    assert not (run_dir / "scale.json").exists() and not (run_dir / "audit.jsonl").exists()


def test_scale_and_status_refuse_a_run_dir_without_a_running_launcher(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "scale", tmp_path, "rollout=2")
    assert rc == 2 and "no launcher is running for" in err
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    write_presence(tmp_path, LauncherInfo(int(dead.stdout), "run-x", "nats://127.0.0.1:1", "127.0.0.1:1"))
    rc, _, err = run_cli(capsys, "status", tmp_path)
    assert rc == 2 and f"(pid {int(dead.stdout)}) is not running any more" in err
    assert f"meshrl train --resume {tmp_path}" in err and not (tmp_path / "scale.json").exists()


async def scale_and_listen(run_dir, url, run_id, *argvs) -> list[tuple[dict, dict]]:
    """Run `meshrl scale` once per argv while subscribed to the run's events subject on a
    real NATS; the (headers, JSON row) of each event published meanwhile."""
    from meshrl.transport.bus.subjects import events_subject

    async with await Bus.connect(url, run_id, name="test") as bus:
        await bus.ensure_streams()
        sub = await bus.nc.subscribe(events_subject(run_id))
        await bus.nc.flush()
        for argv in argvs:
            assert await asyncio.to_thread(main, ["scale", str(run_dir), *argv]) == 0
        msgs = [await sub.next_msg(timeout=10) for _ in argvs]
    return [(m.headers, json.loads(m.data)) for m in msgs]


def test_scale_writes_the_request_and_audits_who_when_what(capsys, tmp_path, monkeypatch, nats_url, run_id):
    run_dir = tmp_path
    write_presence(
        run_dir, LauncherInfo(os.getpid(), run_id, nats_url, f"127.0.0.1:{free_port()}", {"rollout": 1, "reward": 1})
    )
    monkeypatch.setenv("USER", "alice")
    events = asyncio.run(scale_and_listen(run_dir, nats_url, run_id, ["rollout=3", "reward=2"], ["rollout=2"]))
    out = capsys.readouterr().out
    assert "rollout ×1 → ×3, reward ×1 → ×2" in out and f"pid {os.getpid()}" in out
    assert json.loads((run_dir / "scale.json").read_text()) == {"rollout": 2, "reward": 2}
    rows = [json.loads(x) for x in (run_dir / "audit.jsonl").read_text().splitlines()]
    assert [(r["who"], r["action"], r["run_id"]) for r in rows] == [("alice", "scale", run_id)] * 2
    assert [row for _, row in events] == rows  # the run's events subject carries the same rows
    assert {h["Meshrl-Event"] for h, _ in events} == {"audit"}
    assert rows[0]["changes"] == {"rollout": {"from": 1, "to": 3}, "reward": {"from": 1, "to": 2}}
    assert rows[1]["changes"] == {"rollout": {"from": 1, "to": 2}}
    assert rows[0]["when"].endswith("Z") and rows[0]["time"] <= rows[1]["time"]


async def announce(url, run_id):
    async with await Bus.connect(url, run_id, name="test") as bus:
        await bus.ensure_streams()
        await announce_service(bus.state, "reward", "reward-0", "127.0.0.1:7001")
        await announce_service(bus.state, "rollout", "rollout-0", f"127.0.0.1:{free_port()}")


def test_status_lists_the_announced_replicas_and_says_the_learner_is_unreachable(capsys, tmp_path, nats_url, run_id):
    asyncio.run(announce(nats_url, run_id))
    info = LauncherInfo(os.getpid(), run_id, nats_url, f"127.0.0.1:{free_port()}", {"rollout": 1, "reward": 1})
    write_presence(tmp_path, info)
    rc, out, _ = run_cli(capsys, "status", tmp_path, "--json", "--timeout", "1")
    status = json.loads(out)
    assert rc == 0 and status["run_id"] == run_id and "unreachable" in status["learner"]["error"]
    assert [(r["service"], r["replica"]) for r in status["replicas"]] == [
        ("rollout", "rollout-0"),
        ("reward", "reward-0"),
    ]
    assert "unreachable" in status["replicas"][0]["error"] and status["replicas"][1]["grpc"] == "127.0.0.1:7001"
    rc, out, _ = run_cli(capsys, "status", tmp_path, "--timeout", "1")
    assert rc == 0 and "SERVICE" in out and "reward-0" in out and "kept by the launcher: rollout ×1, reward ×1" in out


def test_status_shows_restarts_written_by_the_launchers_reporter(capsys, tmp_path, nats_url, run_id):
    from meshrl.config.load import load_config
    from meshrl.launch.restarts import RestartReporter, ServiceExit

    asyncio.run(announce(nats_url, run_id))
    write_presence(tmp_path, LauncherInfo(os.getpid(), run_id, nats_url, f"127.0.0.1:{free_port()}", {"reward": 1}))
    rc, out, _ = run_cli(capsys, "status", tmp_path, "--timeout", "1")
    assert rc == 0 and "restarts: none" in out
    cfg = load_config(base={"model": {"path": "/m"}, "data": {"train": "/d"}, "alerts": {"enabled": False}})
    reporter = RestartReporter(cfg, tmp_path, run_id)
    for key, attempt in (("reward-0", 1), ("rollout-1", 1), ("rollout-1", 2)):
        reporter.restarting(ServiceExit(key, -9, 3.0, tmp_path / f"{key}.log", ""), attempt, 5, 1.0)
    rc, out, _ = run_cli(capsys, "status", tmp_path, "--timeout", "1")
    assert rc == 0 and "restarts: reward-0 ×1, rollout-1 ×2" in out
    rc, out, _ = run_cli(capsys, "status", tmp_path, "--json", "--timeout", "1")
    assert json.loads(out)["restarts"] == {"reward-0": 1, "rollout-1": 2}
