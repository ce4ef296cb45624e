"""The supervisor: logs per child, a dead child is reported with its log tail, and nothing
it started (children or grandchildren) survives its exit, a SIGTERM, or a stubborn child."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from meshrl.launch.supervisor import ChildDied, StopRequested, Supervisor, stop_on_signals

PY = sys.executable

# A child that starts a grandchild, records both pids in PIDFILE, then sleeps.
PARENT_OF_SLEEPER = textwrap.dedent("""
    import os, subprocess, sys, time
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(sys.argv[1], "a") as f:
        f.write(f"{os.getpid()} {grandchild.pid}\\n")
    time.sleep(600)
""")


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_for_lines(path, n, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return [int(p) for line in path.read_text().splitlines() for p in line.split()]
        time.sleep(0.05)
    raise AssertionError(f"{path} did not get {n} lines in {timeout}s")


def test_each_child_logs_to_its_own_file(tmp_path):
    with Supervisor(tmp_path / "logs") as sup:
        for i in range(2):  # one after the other: a quick exit of one while awaiting the other would be a death
            sup.start("echo", [PY, "-c", f"print('hello from {i}')"], replica=i)
            assert sup.wait_for(f"echo-{i}", poll_s=0.01) == 0
    assert (tmp_path / "logs" / "echo-0.log").read_text() == "hello from 0\n"
    assert (tmp_path / "logs" / "echo-1.log").read_text() == "hello from 1\n"


def test_child_gets_its_environment(tmp_path):
    with Supervisor(tmp_path) as sup:
        sup.start("env", [PY, "-c", "import os; print(os.environ['OMP_NUM_THREADS'])"], env={"OMP_NUM_THREADS": "3"})
        assert sup.wait_for("env-0", poll_s=0.01) == 0
    assert (tmp_path / "env-0.log").read_text() == "3\n"


def test_stop_all_kills_children_and_grandchildren(tmp_path):
    pidfile = tmp_path / "pids"
    sup = Supervisor(tmp_path / "logs", grace_s=5)
    for i in range(3):
        sup.start("svc", [PY, "-c", PARENT_OF_SLEEPER, str(pidfile)], replica=i)
    pids = wait_for_lines(pidfile, 3)
    assert len(pids) == 6 and all(alive(p) for p in pids)
    sup.stop_all()
    assert [p for p in pids if alive(p)] == []


def test_child_ignoring_sigterm_is_killed_after_grace(tmp_path):
    ready = tmp_path / "ready"
    code = (
        "import signal, time, pathlib, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "pathlib.Path(sys.argv[1]).write_text('x'); time.sleep(600)"
    )
    sup = Supervisor(tmp_path / "logs", grace_s=0.5)
    child = sup.start("stubborn", [PY, "-c", code, str(ready)])
    while not ready.exists():
        time.sleep(0.02)
    started = time.monotonic()
    sup.stop_all()
    assert time.monotonic() - started < 5
    assert child.popen.returncode == -signal.SIGKILL


def test_dead_child_is_reported_with_its_log_tail(tmp_path):
    code = "import sys; print('line 1'); print('model file not found: /x'); sys.exit(3)"
    with Supervisor(tmp_path / "logs") as sup:
        sup.start("reward", [PY, "-c", code])
        learner = sup.start("learner", [PY, "-c", "import time; time.sleep(600)"])
        with pytest.raises(ChildDied) as info:
            sup.wait_for(learner.key, poll_s=0.02)
        assert learner.alive()  # the supervisor only reports; stopping is the caller's job
    err = info.value
    assert (err.key, err.returncode) == ("reward-0", 3)
    assert "reward-0 exited with code 3" in str(err)
    assert "model file not found: /x" in str(err) and "line 1" in str(err)
    assert not learner.alive()


def test_wait_for_returns_the_exit_code_and_ticks(tmp_path):
    ticks = []
    with Supervisor(tmp_path) as sup:
        sup.start("learner", [PY, "-c", "import time, sys; time.sleep(0.3); sys.exit(5)"])
        assert sup.wait_for("learner-0", poll_s=0.02, on_tick=lambda: ticks.append(1)) == 5
    assert len(ticks) >= 3


def test_sigterm_to_the_supervisor_stops_every_child(tmp_path):
    """A real supervisor process gets SIGTERM: it unwinds and no child or grandchild is left."""
    pidfile = tmp_path / "pids"
    script = textwrap.dedent(f"""
        import sys
        from meshrl.launch.supervisor import Supervisor, stop_on_signals, StopRequested
        with Supervisor({str(tmp_path / "logs")!r}, grace_s=5) as sup, stop_on_signals():
            for i in range(2):
                sup.start("svc", [sys.executable, "-c", {PARENT_OF_SLEEPER!r}, {str(pidfile)!r}], replica=i)
            try:
                sup.wait_for("svc-0", poll_s=0.05)
            except StopRequested:
                print("stopping", flush=True)
    """)
    proc = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, text=True)
    pids = wait_for_lines(pidfile, 2)
    assert all(alive(p) for p in pids)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "stopping" in out
    assert [p for p in pids if alive(p)] == []


def test_children_die_with_a_sigkilled_supervisor(tmp_path):
    """PR_SET_PDEATHSIG: even `kill -9` of the supervisor takes its direct children along."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux only")
    pidfile = tmp_path / "pids"
    script = textwrap.dedent(f"""
        import sys, time, pathlib
        from meshrl.launch.supervisor import Supervisor
        sup = Supervisor({str(tmp_path / "logs")!r})
        c = sup.start("svc", [sys.executable, "-c", "import time; time.sleep(600)"])
        pathlib.Path({str(pidfile)!r}).write_text(str(c.popen.pid))
        time.sleep(600)
    """)
    proc = subprocess.Popen([PY, "-c", script])
    child_pid = wait_for_lines(pidfile, 1)[0]
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child_pid)


def test_stop_on_signals_turns_sigterm_into_an_exception():
    with pytest.raises(StopRequested, match="SIGTERM"):
        with stop_on_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_library_catching_exception_cannot_swallow_the_stop():
    """SIGTERM while code that catches `Exception` runs (OpenTelemetry's resource detectors
    do, and the launcher runs them while it opens its /metrics endpoint): the stop goes on."""
    with pytest.raises(StopRequested):
        with stop_on_signals():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            except Exception:  # what such a library does
                pass
