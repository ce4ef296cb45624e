"""A local run's processes: the supervisor that starts and stops them, and what they leave in
/dev/shm, freed once they are gone.

    with run_processes(run_dir, run_id, grace_s=15.0) as procs:
        start_services(procs.sup, specs, commands)  # specs.py
        procs.scan_now_and_then()                   # in the launcher's loop: note what each maps
        procs.free_left("rollout-1")                # a replica restarted or retired: free what it left
    # every process stopped, then the psm_* segments they mapped and the run's /dev/shm files removed

Before anything starts, what a killed launcher of the same run noted and could not free is
reclaimed (shm.py). However the block ends (a start that failed included) the segments the live
processes map are noted before the supervisor stops them, so they are freed after.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from meshrl.launch.shm import ShmTracker, freed_segments, freed_shm, reclaim
from meshrl.launch.supervisor import Supervisor
from meshrl.run_layout import RunDir

SHM_SCAN_S = 0.5  # how often the run's processes are checked for shared-memory segments


@dataclass
class RunProcesses:
    sup: Supervisor
    shm: ShmTracker
    scanned_at: float = float("-inf")

    def groups(self) -> dict[str, int]:
        """child key -> its process group (every child leads its own)."""
        return {key: child.popen.pid for key, child in self.sup.children.items()}

    def scan(self) -> None:
        """Note the segments each child's process group maps now."""
        self.scanned_at = time.monotonic()
        self.shm.scan(self.groups())

    def scan_now_and_then(self) -> None:
        """`scan`, at most once per SHM_SCAN_S however often it is called."""
        if time.monotonic() - self.scanned_at >= SHM_SCAN_S:
            self.scan()

    def free_left(self, key: str) -> None:
        """Free what child `key` (restarted or retired) mapped that no live child maps."""
        self.shm.free([key], live=self.groups())


@contextlib.contextmanager
def run_processes(run_dir: Path, run_id: str, *, grace_s: float) -> Iterator[RunProcesses]:
    """A supervisor logging to RUN_DIR/logs for the block; on the way out every process is
    stopped (`grace_s` each, the learner its own first) and what they left in /dev/shm freed."""
    layout = RunDir(run_dir)
    reclaim(layout.shm_segments)  # what a killed launcher of this run could not free
    tracker = ShmTracker(record=layout.shm_segments)
    with freed_shm(run_id), freed_segments(tracker), Supervisor(layout.logs, grace_s=grace_s) as sup:
        procs = RunProcesses(sup, tracker)
        try:
            yield procs
        finally:
            procs.scan()  # what was made since the last scan, before the supervisor stops it
