"""Shared-memory segments (`psm_*`, as vLLM's engine core makes them) that a run's process
made and that outlive it (a SIGKILL takes Python's resource tracker along) are found through
/proc/PID/maps and unlinked; a segment of a process outside the run is left alone."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from meshrl.launch.shm import ShmTracker, mapped_segments, reclaim

PY = sys.executable
# Makes a 1 MiB segment the way vLLM does, unregisters it from the resource tracker (as a
# SIGKILLed tracker would never clean it), prints its name, keeps it mapped.
MAKER = textwrap.dedent("""
    import time
    from multiprocessing import resource_tracker, shared_memory
    shm = shared_memory.SharedMemory(create=True, size=1 << 20)
    resource_tracker.unregister(shm._name, "shared_memory")
    print(shm.name, flush=True)
    time.sleep(600)
""")

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/maps").exists() or not Path("/dev/shm").is_dir(), reason="needs Linux /proc and /dev/shm"
)


def start_maker():
    proc = subprocess.Popen([PY, "-c", MAKER], stdout=subprocess.PIPE, text=True, start_new_session=True)
    return proc, proc.stdout.readline().strip()


def kill_group(proc):
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def scans_only() -> ShmTracker:
    """A tracker whose `free` leaves strays alone: what another test on the host leaks meanwhile
    must not change what these tests see freed."""
    tracker = ShmTracker()
    tracker.stray_grace_s = 3600.0
    return tracker


def test_a_segment_left_by_a_killed_process_is_freed_and_others_are_kept():
    ours, ours_name = start_maker()
    stranger, stranger_name = start_maker()  # another run's: never scanned
    try:
        assert ours_name.startswith("psm_") and ours_name in mapped_segments(ours.pid)
        tracker = scans_only()
        tracker.scan({"rollout-0": ours.pid})
        assert tracker.owners == {ours_name: "rollout-0"}
        kill_group(ours)
        assert Path("/dev/shm", ours_name).exists()  # the leak this fixes
        assert tracker.free() == [ours_name]
        assert not Path("/dev/shm", ours_name).exists()
        assert Path("/dev/shm", stranger_name).exists()
    finally:
        kill_group(stranger)
        Path("/dev/shm", stranger_name).unlink(missing_ok=True)


def test_a_restart_frees_only_what_no_live_process_maps():
    dead, dead_name = start_maker()
    live, live_name = start_maker()
    try:
        tracker = scans_only()
        tracker.scan({"rollout-0": dead.pid, "rollout-1": live.pid})
        kill_group(dead)
        groups = {"rollout-0": dead.pid, "rollout-1": live.pid}
        assert tracker.free(["rollout-0", "rollout-1"], live=groups) == [dead_name]
        assert Path("/dev/shm", live_name).exists()
        assert tracker.owners == {live_name: "rollout-1"}  # still tracked for the end of the run
    finally:
        kill_group(live)
        Path("/dev/shm", live_name).unlink(missing_ok=True)


def test_a_segment_of_a_process_killed_before_any_scan_is_freed_as_a_stray():
    """Made and leaked between two scans: never seen mapped, freed because it was made during
    the run and nothing maps it. One leaked before the run and one still mapped are kept."""
    before, before_name = start_maker()
    kill_group(before)  # leaked before the run started: not the run's
    time.sleep(0.01)
    tracker = ShmTracker()
    tracker.stray_grace_s = 0.0
    quick, quick_name = start_maker()
    kill_group(quick)  # no scan ever saw it
    live, live_name = start_maker()  # made during the run, still mapped by its maker
    try:
        assert tracker.owners == {} and Path("/dev/shm", quick_name).exists()
        removed = tracker.free(["rollout-0"])
        assert quick_name in removed and not Path("/dev/shm", quick_name).exists()
        assert Path("/dev/shm", before_name).exists() and Path("/dev/shm", live_name).exists()
    finally:
        kill_group(live)
        for name in (before_name, live_name):
            Path("/dev/shm", name).unlink(missing_ok=True)


def test_a_killed_launchers_segments_are_reclaimed_by_the_next_one(tmp_path):
    """The launcher dies with its services (SIGKILL: nothing freed); its record lets the next
    launcher of the run free the dead one's segment, and leave the one a live process maps."""
    dead, dead_name = start_maker()
    live, live_name = start_maker()
    record = tmp_path / "shm_segments.json"
    try:
        tracker = ShmTracker(record=record)
        tracker.scan({"rollout-0": dead.pid, "rollout-1": live.pid})
        assert json.loads(record.read_text()) == {dead_name: "rollout-0", live_name: "rollout-1"}
        kill_group(dead)
        del tracker  # the launcher is gone: nobody calls free()
        assert Path("/dev/shm", dead_name).exists()
        assert reclaim(record) == [dead_name]
        assert not Path("/dev/shm", dead_name).exists() and Path("/dev/shm", live_name).exists()
        assert not record.exists() and reclaim(record) == []
    finally:
        kill_group(live)
        Path("/dev/shm", live_name).unlink(missing_ok=True)
