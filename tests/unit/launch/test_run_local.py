"""run_local end to end with stand-in services (tiny `python -c` processes) on a real
embedded NATS: the run dir, the progress from metrics.jsonl, a killed service is restarted
while the run goes on, a crash-looping service or learner stops the run with its log tail
once its restart budget is spent, a crashed learner restarts with --resume, the run's
shared-memory segments are freed, SIGTERM stops everything, unreachable NATS is a clear
error."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from meshrl.cli.main import main
from meshrl.config.load import load_config
from meshrl.errors import LaunchError, RunFailed
from meshrl.launch.local import run_local
from meshrl.launch.run_dir import check_run_dir

PY = sys.executable
SLEEPER = "import os, sys, time; open(sys.argv[1], 'a').write(f'{os.getpid()}\\n'); time.sleep(600)"
LEARNER = textwrap.dedent("""
    import json, sys, time, pathlib
    run_dir = pathlib.Path(sys.argv[1]).parent
    with open(run_dir / "metrics.jsonl", "a") as f:
        for step in range(3):  # 0-based, as the learner logs them
            f.write(json.dumps({"step": step, "reward": 0.25 * (step + 1), "kl": 0.01,
                                "perf/throughput": 100.0, "time/step": 0.1}) + "\\n")
            f.flush()
            time.sleep(0.2)
    sys.exit(int(sys.argv[2]))
""")


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def stand_ins(pidfile: Path, learner_rc: int = 0, broken: str | None = None):
    """argv_for: services sleep (recording their pid); the learner writes 3 steps and exits
    (or, beside a broken service, sleeps: the run must end because of that service)."""

    def argv_for(spec, url, run_id, config_path):
        if spec.name == "learner" and broken is not None:
            return [PY, "-c", "import time; time.sleep(600)"]
        if spec.name == "learner":
            return [PY, "-c", LEARNER, str(config_path), str(learner_rc)]
        if spec.name == broken:
            return [PY, "-c", "import sys, time; time.sleep(0.3); print('CUDA out of cheese'); sys.exit(1)"]
        return [PY, "-c", SLEEPER, str(pidfile)]

    return argv_for


FAST_RESTARTS = {"restart_budget": 2, "backoff_initial_s": 0.1, "backoff_max_s": 0.2}


def make_cfg(**learner):
    return load_config(
        base={
            "run": {"name": "t"},
            "model": {"path": "/m"},
            "data": {"train": "/d"},
            "algorithm": {"preset": "grpo"},
            "learner": {"steps": 3, **learner},
            "launch": FAST_RESTARTS,
        }
    )


def test_run_local_runs_to_the_end_and_stops_everything(tmp_path):
    pidfile = tmp_path / "pids"
    result = run_local(make_cfg(), tmp_path / "run", progress=False, argv_for=stand_ins(pidfile))
    assert result.steps == 3 and result.last_metrics["reward"] == 0.75
    run_dir = tmp_path / "run"
    assert load_config(run_dir / "config.yaml").run.dir == str(run_dir.resolve())
    logs = sorted(p.name for p in (run_dir / "logs").iterdir())
    assert logs == ["learner-0.log", "reference-0.log", "reward-0.log", "rollout-0.log"]
    assert (run_dir / "nats").is_dir()  # JetStream data of the embedded server
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 3 and not any(alive(p) for p in pids)


def test_a_crash_looping_service_stops_the_run_with_its_log_tail(tmp_path):
    pidfile = tmp_path / "pids"
    with pytest.raises(RunFailed) as info:
        run_local(make_cfg(), tmp_path / "run", progress=False, argv_for=stand_ins(pidfile, broken="reward"))
    assert "reward-0 exited with code 1 and was not restarted" in str(info.value)
    assert "launch.restart_budget=2" in str(info.value)
    assert "CUDA out of cheese" in str(info.value)
    # nothing was trained: no resume offered, the same dir takes a fresh start
    assert "--resume" not in str(info.value)
    assert "start it again with `meshrl train` and the same run.dir (nothing was trained" in str(info.value)
    check_run_dir(tmp_path / "run", resume=False)  # the same dir takes a fresh start
    restarts = (tmp_path / "run" / "restarts.jsonl").read_text().splitlines()
    assert [json.loads(r)["event"] for r in restarts] == ["restart", "restart", "gave_up"]
    assert not any(alive(int(p)) for p in pidfile.read_text().split())


def test_a_learner_that_keeps_failing_is_a_failed_run_after_resumed_restarts(tmp_path):
    with pytest.raises(RunFailed, match="learner-0 exited with code 3 and was not restarted"):
        run_local(make_cfg(), tmp_path / "run", progress=False, argv_for=stand_ins(tmp_path / "pids", learner_rc=3))
    log = (tmp_path / "run" / "logs" / "learner-0.log").read_text()
    assert log.count("==== meshrl launcher: restart") == 2
    assert f"--resume {(tmp_path / 'run').resolve()} ====" in log


# The reward stand-in: maps a psm_* segment (as vLLM's engine core does, unregistered from the
# resource tracker as a SIGKILL would leave it), records "pid name", then sleeps.
SEGMENT_MAKER = textwrap.dedent("""
    import os, sys, time
    from multiprocessing import resource_tracker, shared_memory
    shm = shared_memory.SharedMemory(create=True, size=1 << 20)
    resource_tracker.unregister(shm._name, "shared_memory")
    open(sys.argv[1], "a").write(f"{os.getpid()} {shm.name}\\n")
    time.sleep(600)
""")


def test_a_killed_service_is_restarted_and_the_run_finishes(tmp_path):
    """SIGKILL the reward stand-in mid-run: it comes back, the learner finishes its steps,
    and neither the killed one's segment nor the restarted one's is left in /dev/shm."""
    records, pidfile = tmp_path / "reward", tmp_path / "pids"
    base = stand_ins(pidfile)
    # The learner stand-in takes its last steps only once the reward came back (or 60 s).
    learner_code = LEARNER.replace(
        "for step in range(3):",
        textwrap.dedent(f"""\
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not pathlib.Path({str(records)!r}).exists()
                or len(pathlib.Path({str(records)!r}).read_text().splitlines()) < 2):
            time.sleep(0.1)
        for step in range(3):""").replace("\n", "\n    "),
    )

    def argv_for(spec, url, run_id, config_path):
        if spec.name == "reward":
            return [PY, "-c", SEGMENT_MAKER, str(records)]
        if spec.name == "learner":
            return [PY, "-c", learner_code, str(config_path), "0"]
        return base(spec, url, run_id, config_path)

    def kill_first_reward():
        """SIGKILL the first reward once the launcher noted its segment (its shm record says so)."""
        record, deadline = tmp_path / "run" / "shm_segments.json", time.monotonic() + 60
        while time.monotonic() < deadline:
            made = records.read_text().split() if records.exists() else []  # "pid name" once written
            if len(made) == 2 and record.exists() and made[1] in record.read_text():
                break
            time.sleep(0.05)
        os.kill(int(made[0]), signal.SIGKILL)

    killer = threading.Thread(target=kill_first_reward)
    killer.start()
    result = run_local(make_cfg(), tmp_path / "run", progress=False, argv_for=argv_for)
    killer.join()
    assert result.steps == 3
    made = [line.split() for line in records.read_text().splitlines()]
    assert len(made) == 2  # the first reward and its restart
    assert not any(Path("/dev/shm", name).exists() for _, name in made)
    [row] = [json.loads(r) for r in (tmp_path / "run" / "restarts.jsonl").read_text().splitlines()]
    assert (row["service"], row["signal"]) == ("reward-0", "SIGKILL")


# A stand-in that maps what vLLM and loky leave behind when killed: a psm_* segment (taken off
# the resource tracker) and a sem.loky-* semaphore file, records "pid name name", then sleeps.
SEGMENTS_AND_SEMAPHORE = textwrap.dedent("""
    import mmap, os, sys, time
    from multiprocessing import resource_tracker, shared_memory
    shm = shared_memory.SharedMemory(create=True, size=1 << 20)
    resource_tracker.unregister(shm._name, "shared_memory")
    sem = f"sem.loky-{os.getpid()}-test"
    fd = os.open(f"/dev/shm/{sem}", os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    os.ftruncate(fd, 32)
    held = mmap.mmap(fd, 32)
    open(sys.argv[1], "a").write(f"{os.getpid()} {shm.name} {sem}\\n")
    time.sleep(600)
""")


def test_a_start_that_fails_leaves_no_shared_memory_and_the_dir_starts_again(tmp_path):
    """The rollout exits 2 (a bad setting) once the reward mapped its segment and semaphore:
    the run fails, /dev/shm holds neither, and `meshrl train`'s check and a new run take the
    same dir (the failed start's config is kept under logs/)."""
    records, run_dir = tmp_path / "reward", tmp_path / "run"
    base = stand_ins(tmp_path / "pids")
    bad_rollout = (
        "import os, sys, time\n"
        f"while not os.path.exists({str(records)!r}): time.sleep(0.05)\n"
        "print('model cannot be loaded'); sys.exit(2)"
    )

    def argv_for(spec, url, run_id, config_path):
        if spec.name == "reward":
            return [PY, "-c", SEGMENTS_AND_SEMAPHORE, str(records)]
        if spec.name == "rollout":
            return [PY, "-c", bad_rollout]
        if spec.name == "learner":
            return [PY, "-c", "import time; time.sleep(600)"]
        return base(spec, url, run_id, config_path)

    with pytest.raises(RunFailed, match="rollout-0 exited with code 2") as info:
        run_local(make_cfg(), run_dir, progress=False, argv_for=argv_for)
    [(_, segment, semaphore)] = [line.split() for line in records.read_text().splitlines()]
    assert not Path("/dev/shm", segment).exists() and not Path("/dev/shm", semaphore).exists()
    assert "--resume" not in str(info.value)
    check_run_dir(run_dir, resume=False)  # no LaunchError
    [aside] = (run_dir / "logs").glob("failed-start-*")
    assert (aside / "config.yaml").is_file()
    result = run_local(make_cfg(), run_dir, progress=False, argv_for=stand_ins(tmp_path / "pids2"))
    assert result.steps == 3 and (run_dir / "config.yaml").is_file()


def test_unreachable_nats_is_a_launch_error(tmp_path):
    cfg = make_cfg()
    cfg.nats.url, cfg.nats.connect_timeout_s = "nats://127.0.0.1:1", 2.0
    with pytest.raises(LaunchError, match="cannot reach NATS at nats://127.0.0.1:1"):
        run_local(cfg, tmp_path / "run", progress=False, argv_for=stand_ins(tmp_path / "pids"))
    assert not (tmp_path / "pids").exists()  # nothing was started


def test_meshrl_train_with_unreachable_nats_exits_2(tmp_path, capsys, tiny_model_dir):
    data = tmp_path / "train.jsonl"
    data.write_text("{}\n")
    rc = main(
        [
            "train",
            "/dev/null",
            f"model.path={tiny_model_dir}",
            f"data.train={data}",
            "nats.url=nats://127.0.0.1:1",
            "nats.connect_timeout_s=2",
            f"run.dir={tmp_path / 'r'}",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "cannot reach NATS at nats://127.0.0.1:1" in err and "Traceback" not in err


def test_sigterm_stops_the_whole_run(tmp_path):
    pidfile = tmp_path / "pids"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_run_local import make_cfg, stand_ins
        from meshrl.launch.local import run_local
        from meshrl.launch.supervisor import StopRequested
        import meshrl.launch.local as local
        cfg = make_cfg(steps=3)
        argv_for = stand_ins(__import__("pathlib").Path({str(pidfile)!r}))
        def slow_learner(spec, *a):
            return [sys.executable, "-c", "import time; time.sleep(600)"] if spec.name == "learner" else argv_for(spec, *a)
        try:
            run_local(cfg, {str(tmp_path / "run")!r}, progress=False, argv_for=slow_learner)
        except StopRequested:
            print("stopped", flush=True)
    """)
    proc = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while (not pidfile.exists() or len(pidfile.read_text().split()) < 3) and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = [int(p) for p in pidfile.read_text().split()]
    nats_pids = [
        c.pid for c in psutil.Process(proc.pid).children(recursive=True) if "nats-server" in " ".join(c.cmdline())
    ]
    assert len(pids) == 3 and len(nats_pids) == 1
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert "stopped" in out
    assert not any(alive(p) for p in pids + nats_pids)
