"""`meshrl scale`'s launcher side on real child processes: a request in RUN_DIR/scale.json
starts replicas with the next ids; a lower count SIGTERMs the highest ones, which the keeper
then leaves dead; a retired id comes back once its old process is gone; a replica that
ignores SIGTERM is SIGKILLed after the grace period."""

import json
import sys
import time

import pytest

from meshrl.launch.scaler import Scaler
from meshrl.launch.supervisor import Supervisor
from meshrl.run.scale import write_request
from tests.unit.launch.test_keeper import keeper_for

PY = sys.executable
# Prints "up", and "drained" when SIGTERM arrives (what a draining service does), then exits 0.
POLITE = (
    "import signal, sys, time\n"
    "def bye(*_):\n    print('drained', flush=True); sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, bye); print('up', flush=True)\n"
    "while True: time.sleep(0.05)"
)
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)"
)


def tick_until(keeper, scaler, condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        scaler.tick()
        keeper.tick()
        time.sleep(0.02)


def alive_keys(sup, prefix):
    return sorted(k for k, c in sup.children.items() if k.startswith(prefix) and c.alive())


def starts(tmp_path, key):
    """How many times the replica said "up" (the launcher's restart marker quotes its code)."""
    return log_text(tmp_path, key).splitlines().count("up")


def log_text(tmp_path, key):
    path = tmp_path / "logs" / f"{key}.log"
    return path.read_text() if path.exists() else ""


@pytest.fixture
def mesh(tmp_path):
    with Supervisor(tmp_path / "logs") as sup:
        sup.start("rollout", [PY, "-c", POLITE], replica=0)
        sup.start("reward", [PY, "-c", POLITE], replica=0)
        started = []

        def command_for(service, replica):
            started.append(f"{service}-{replica}")
            return [PY, "-c", POLITE], {"WHO": f"{service}-{replica}"}

        scaler = Scaler(
            sup,
            tmp_path,
            {"rollout": 1, "reward": 1},
            command_for=command_for,
            grace_s=1.0,
            on_left=lambda key: started.append(f"left {key}"),
        )
        yield sup, keeper_for(sup, tmp_path), scaler, started


def test_scale_up_starts_the_next_ids_and_scale_down_drains_the_highest(mesh, tmp_path):
    sup, keeper, scaler, started = mesh
    write_request(tmp_path, {"rollout": 3})
    tick_until(keeper, scaler, lambda: all("up" in log_text(tmp_path, f"rollout-{i}") for i in range(3)))
    assert started == ["rollout-1", "rollout-2"] and alive_keys(sup, "reward") == ["reward-0"]
    assert sup.children["rollout-2"].env == {"WHO": "rollout-2"}

    write_request(tmp_path, {"rollout": 1})
    tick_until(keeper, scaler, lambda: alive_keys(sup, "rollout") == ["rollout-0"])
    for _ in range(20):  # the keeper would have restarted them by now (back-off ≤ 0.2 s)
        scaler.tick(), keeper.tick(), time.sleep(0.02)
    assert alive_keys(sup, "rollout") == ["rollout-0"]
    assert [sup.children[f"rollout-{i}"].popen.returncode for i in (1, 2)] == [0, 0]
    assert "drained" in log_text(tmp_path, "rollout-2") and "drained" not in log_text(tmp_path, "rollout-0")
    assert not (tmp_path / "restarts.jsonl").exists() or not (tmp_path / "restarts.jsonl").read_text()
    assert scaler.kept("rollout") == [0]
    assert sorted(started[2:]) == ["left rollout-1", "left rollout-2"]  # each reported once


def test_a_retired_id_comes_back_in_the_same_log(mesh, tmp_path):
    sup, keeper, scaler, started = mesh
    write_request(tmp_path, {"reward": 2})
    tick_until(keeper, scaler, lambda: "up" in log_text(tmp_path, "reward-1"))
    write_request(tmp_path, {"reward": 1})
    time.sleep(0.01)  # a new mtime for the next request
    tick_until(keeper, scaler, lambda: not sup.children["reward-1"].alive())
    write_request(tmp_path, {"reward": 2})
    tick_until(keeper, scaler, lambda: starts(tmp_path, "reward-1") == 2)
    assert "restart 1 of reward-1" in log_text(tmp_path, "reward-1")
    assert scaler.kept("reward") == [0, 1] and sup.children["reward-1"].alive()


def test_a_replica_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    with Supervisor(tmp_path / "logs") as sup:
        stubborn = sup.start("rollout", [PY, "-c", STUBBORN], replica=1)
        sup.start("rollout", [PY, "-c", POLITE], replica=0)
        scaler = Scaler(sup, tmp_path, {"rollout": 2}, grace_s=0.5, command_for=lambda s, r: ([PY, "-c", POLITE], {}))
        keeper = keeper_for(sup, tmp_path)
        tick_until(keeper, scaler, lambda: "up" in log_text(tmp_path, "rollout-1"))
        write_request(tmp_path, {"rollout": 1})
        t0 = time.monotonic()
        tick_until(keeper, scaler, lambda: not stubborn.alive())
        assert stubborn.popen.returncode == -9 and time.monotonic() - t0 >= 0.5


def test_a_stale_request_of_an_earlier_launcher_is_ignored(tmp_path):
    (tmp_path / "scale.json").write_text(json.dumps({"rollout": 5}))
    with Supervisor(tmp_path / "logs") as sup:
        sup.start("rollout", [PY, "-c", POLITE], replica=0)
        scaler = Scaler(sup, tmp_path, {"rollout": 1}, command_for=lambda s, r: ([PY, "-c", POLITE], {}))
        scaler.tick()
        assert list(sup.children) == ["rollout-0"] and not (tmp_path / "scale.json").exists()


def test_a_crashed_replica_scaled_away_before_its_restart_stays_down(mesh, tmp_path):
    sup, keeper, scaler, started = mesh
    write_request(tmp_path, {"rollout": 2})
    tick_until(keeper, scaler, lambda: "up" in log_text(tmp_path, "rollout-1"))
    sup.children["rollout-1"].popen.kill()
    sup.children["rollout-1"].popen.wait()
    keeper.tick()
    assert "rollout-1" in keeper.pending  # its restart is scheduled...
    write_request(tmp_path, {"rollout": 1})
    scaler.tick()  # ...and the scale-down comes first
    for _ in range(30):
        scaler.tick(), keeper.tick(), time.sleep(0.02)
    assert alive_keys(sup, "rollout") == ["rollout-0"] and "rollout-1" not in keeper.pending
    assert starts(tmp_path, "rollout-1") == 1
