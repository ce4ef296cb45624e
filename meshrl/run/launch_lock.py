"""Which process is a run dir's launcher, told by the kernel rather than by a file in the run.

`launcher.json` names the launcher's pid, but anything that can write the run dir (a
submitted run's own processes, as the gateway's user) can rewrite it: StopRun would then
signal any process of that user (the gateway itself, another run's launcher). So the
launcher also holds an exclusive flock on `RUN_DIR/launcher.lock` for its whole life, and
`holds_launch_lock(pid, run_dir)` asks the kernel (/proc/locks: holder pid and the file's
device and inode) whether that pid holds it. A process can hold the lock only of a file it
can open; no run can make another process hold its lock. The lock also keeps a second
launcher off a run dir that has one.

    with launch_lock(run_dir): ...                 # the launcher (meshrl.run.presence)
    holds_launch_lock(info.pid, run_dir)           # the gateway, before it signals that pid
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

from meshrl.errors import LaunchError
from meshrl.run import layout

LOCKS = Path("/proc/locks")


@contextlib.contextmanager
def launch_lock(run_dir: Path) -> Iterator[None]:
    """Hold RUN_DIR/launcher.lock for the block (not inherited by the services it starts)."""
    path = Path(run_dir) / layout.LAUNCH_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LaunchError(
            f"another launcher is running for {run_dir} (it holds {path}): stop it first, "
            f"or scale it with `meshrl scale {run_dir} ...`"
        ) from None
    try:
        yield
    finally:
        os.close(fd)


def _lock_key(path: Path) -> str:
    """How /proc/locks names the file: MAJOR:MINOR:INODE, the device numbers in hex."""
    st = os.stat(path, follow_symlinks=False)
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"


def holds_launch_lock(pid: int, run_dir: Path) -> bool:
    """Whether process `pid` holds RUN_DIR/launcher.lock (False when there is none)."""
    try:
        key, table = _lock_key(Path(run_dir) / layout.LAUNCH_LOCK), LOCKS.read_text()
    except OSError:
        return False
    for line in table.splitlines():
        fields = line.split()  # "1: FLOCK  ADVISORY  WRITE 12345 00:2e:1234567 0 EOF" ("1: ->" = a waiter)
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[4] == str(pid) and fields[5] == key:
            return True
    return False


def launcher_problem(pid: int, nats_url: str, learner_grpc: str, run_dir: Path) -> str | None:
    """Why launcher.json's pid and addresses are not the run's own launcher and servers, or None.
    Simplification: a run on an external NATS (not a process of the launcher) is refused too."""
    from meshrl.run.owned_ports import served_by_tree  # /proc walks: only when a live run is looked at

    if not holds_launch_lock(pid, run_dir):
        return f"pid {pid} does not hold the run's launch lock ({layout.LAUNCH_LOCK})"
    for what, address in (("learner_grpc", learner_grpc), ("nats_url", nats_url)):
        if address and not served_by_tree(address, pid):
            return f"{what} {address} is not served by the launcher (pid {pid}) or one of its processes"
    return None
