"""The keeper on real child processes: a SIGKILLed service comes back (same log, new pid)
while the others run on; a crash loop ends the run with which service, why and how to
continue; exit code 2 is final at once; the awaited learner ends the run by exiting 0 and is
restarted with --resume when it crashes. Restarts land in restarts.jsonl and alerts.jsonl."""

import json
import os
import signal
import sys
import time

import psutil
import pytest

from meshrl.config.load import load_config
from meshrl.launch.restarts import Keeper, RestartPolicy, RestartReporter, ServiceGaveUp
from meshrl.launch.supervisor import Supervisor

PY = sys.executable
SLEEPER = "import os, sys, time; print('up', os.getpid(), flush=True); time.sleep(600)"
FAST = RestartPolicy(budget=2, window_s=60.0, initial_s=0.05, max_delay_s=0.2, reset_after_s=30.0)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def keeper_for(sup, run_dir, policy=FAST, **kwargs):
    cfg = load_config(base={"model": {"path": "/m"}, "data": {"train": "/d"}})
    return Keeper(sup, policy, RestartReporter(cfg, run_dir, "run-k"), run_dir=run_dir, **kwargs)


def tick_until(keeper, condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        keeper.tick()
        time.sleep(0.02)


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_killed_service_is_restarted_and_the_others_run_on(tmp_path, capsys):
    with Supervisor(tmp_path / "logs") as sup:
        reward = sup.start("reward", [PY, "-c", SLEEPER])
        rollouts = [sup.start("rollout", [PY, "-c", SLEEPER], replica=i) for i in range(2)]
        keeper = keeper_for(sup, tmp_path)
        tick_until(keeper, lambda: "up " in (tmp_path / "logs" / "rollout-0.log").read_text())
        os.kill(rollouts[0].popen.pid, signal.SIGKILL)
        log_path = tmp_path / "logs" / "rollout-0.log"
        tick_until(keeper, lambda: sup.children["rollout-0"].restarts == 1 and log_path.read_text().count("up ") == 2)
        assert sup.children["rollout-0"].alive()
        assert sup.children["rollout-0"].popen.pid != rollouts[0].popen.pid
        assert reward.alive() and rollouts[1].alive()  # never touched
        assert sup.children["reward-0"] is reward and sup.children["rollout-1"] is rollouts[1]
    log = (tmp_path / "logs" / "rollout-0.log").read_text()
    assert log.count("up ") == 2 and "==== meshrl launcher: restart 1 of rollout-0" in log
    [row] = rows(tmp_path / "restarts.jsonl")
    assert (row["service"], row["event"], row["signal"], row["exit_code"], row["attempt"]) == (
        "rollout-0",
        "restart",
        "SIGKILL",
        None,
        1,
    )
    assert "up " in row["tail"]
    [alert] = rows(tmp_path / "alerts.jsonl")
    assert (alert["rule"], alert["severity"], alert["key"]) == (
        "service_restart",
        "warning",
        "service_restart:rollout-0",
    )
    assert "rollout-0 was killed by signal SIGKILL" in capsys.readouterr().err


def test_a_crash_loop_stops_the_run_naming_service_reason_and_resume(tmp_path):
    crash = "import sys; print('reward model file missing: /x'); sys.exit(1)"
    (tmp_path / "checkpoints" / "step_1").mkdir(parents=True)  # a run with a checkpoint: resume is the way on
    with Supervisor(tmp_path / "logs") as sup:
        sup.start("reward", [PY, "-c", crash])
        learner = sup.start("learner", [PY, "-c", SLEEPER])
        keeper = keeper_for(sup, tmp_path)
        with pytest.raises(ServiceGaveUp) as info:
            keeper.wait_for("learner-0", poll_s=0.02)
        assert learner.alive() and learner.restarts == 0  # stopping is the caller's job
    message = str(info.value)
    assert message.startswith(
        "reward-0 exited with code 1 and was not restarted: it needed more than launch.restart_budget=2 restarts"
    )
    assert "reward model file missing: /x" in message
    assert f"meshrl train --resume {tmp_path}" in message
    events = [(r["event"], r.get("attempt")) for r in rows(tmp_path / "restarts.jsonl")]
    assert events == [("restart", 1), ("restart", 2), ("gave_up", None)]
    assert [a["rule"] for a in rows(tmp_path / "alerts.jsonl")] == [
        "service_restart",
        "service_restart",
        "service_crashloop",
    ]


def test_exit_code_2_is_a_user_error_and_never_restarted(tmp_path):
    with Supervisor(tmp_path / "logs") as sup:
        sup.start("rollout", [PY, "-c", "import sys; print('bad config: rollout.kv_cache_gb'); sys.exit(2)"])
        sup.start("learner", [PY, "-c", SLEEPER])
        with pytest.raises(ServiceGaveUp, match="exit code 2 means bad config"):
            keeper_for(sup, tmp_path).wait_for("learner-0", poll_s=0.02)
    assert [r["event"] for r in rows(tmp_path / "restarts.jsonl")] == ["gave_up"]


def test_a_crashed_learner_resumes_and_a_clean_exit_ends_the_run(tmp_path):
    # First start crashes; the restart (with --resume, as the launcher asks) exits 0.
    code = "import sys; sys.exit(0 if '--resume' in sys.argv else 1)"
    with Supervisor(tmp_path / "logs") as sup:
        sup.start("learner", [PY, "-c", code])
        keeper = keeper_for(sup, tmp_path, argv_for_restart=lambda key, argv: [*argv, "--resume", "RUN"])
        assert keeper.wait_for("learner-0", poll_s=0.02) == 0
        assert sup.children["learner-0"].restarts == 1
        assert sup.children["learner-0"].argv[-2:] == ["--resume", "RUN"]
    assert [r["event"] for r in rows(tmp_path / "restarts.jsonl")] == ["restart"]


def test_a_restart_stops_what_the_dead_child_left_running(tmp_path):
    """A grandchild that outlived its killed parent (an engine core) is stopped before the
    replica starts again, so two engines never run for one replica."""
    pidfile = tmp_path / "grandchild"
    code = (
        f"import subprocess, sys, time, pathlib; p = subprocess.Popen([sys.executable, '-c', "
        f"'import time; time.sleep(600)']); pathlib.Path({str(pidfile)!r}).write_text(str(p.pid)); "
        f"time.sleep(600)"
    )
    with Supervisor(tmp_path / "logs") as sup:
        child = sup.start("rollout", [PY, "-c", code])
        keeper = keeper_for(sup, tmp_path)
        while not pidfile.exists():
            time.sleep(0.02)
        orphan = int(pidfile.read_text())
        pidfile.unlink()
        os.kill(child.popen.pid, signal.SIGKILL)
        tick_until(keeper, lambda: sup.children["rollout-0"].restarts == 1)
        assert not alive(orphan)
