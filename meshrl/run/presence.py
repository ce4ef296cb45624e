"""The running launcher: its calling card `RUN_DIR/launcher.json`, there exactly while it runs,
and its lock `RUN_DIR/launcher.lock`, held for its whole life.

    with launcher_presence(run_dir, LauncherInfo(pid, run_id, nats_url, learner_grpc, replicas)):
        ...                                        # the run (holds the launch lock, writes the card)
    info = find_launcher(run_dir)                  # from `meshrl scale` / `meshrl status`
    holds_launch_lock(info.pid, run_dir)           # the gateway, before it signals that pid

What another process on this machine needs to talk to a local run: the launcher's pid (is it
still running?), the run id and NATS url (the run id is made at start and is in no config
file), the learner's control address, and the replica counts the launcher keeps per
scalable service. `find_launcher` raises LaunchError, with what to do, when no launcher is
running for RUN_DIR (no file, or its pid is gone: a launcher killed with SIGKILL leaves it).

The lock tells who the launcher is by the kernel rather than by a file in the run:
`launcher.json` names the launcher's pid, but anything that can write the run dir (a
submitted run's own processes, as the gateway's user) can rewrite it: StopRun would then
signal any process of that user (the gateway itself, another run's launcher). So the
launcher also holds an exclusive flock on `RUN_DIR/launcher.lock`, and
`holds_launch_lock(pid, run_dir)` asks the kernel (/proc/locks: holder pid and the file's
device and inode) whether that pid holds it. A process can hold the lock only of a file it
can open; no run can make another process hold its lock. The lock also keeps a second
launcher off a run dir that has one.

Simplification: a pid reused by another process after a SIGKILLed launcher is taken for the
launcher; `meshrl scale` then writes a request nobody reads (harmless).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from meshrl import run_layout as layout
from meshrl.errors import LaunchError

PRESENCE_FILE = layout.PRESENCE
LOCKS = Path("/proc/locks")


@dataclass
class LauncherInfo:
    pid: int
    run_id: str
    nats_url: str
    learner_grpc: str
    replicas: dict[str, int] = field(default_factory=dict)  # scalable service -> count kept
    started_unix: float = field(default_factory=time.time)


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old or the new file, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_presence(run_dir: Path, info: LauncherInfo) -> None:
    write_atomically(Path(run_dir) / PRESENCE_FILE, json.dumps(asdict(info), indent=1) + "\n")


@contextlib.contextmanager
def launcher_presence(run_dir: Path, info: LauncherInfo) -> Iterator[LauncherInfo]:
    """Hold the run's launch lock (below: who the launcher is, for whoever would signal it) and
    write launcher.json, for the block's duration; removed however the block ends."""
    with launch_lock(run_dir):
        write_presence(run_dir, info)
        try:
            yield info
        finally:
            (Path(run_dir) / PRESENCE_FILE).unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def find_launcher(run_dir: Path) -> LauncherInfo:
    """The live launcher of RUN_DIR, or LaunchError saying why there is none."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise LaunchError(f"{run_dir} is not a directory; pass the run dir of a running `meshrl train`")
    path = run_dir / PRESENCE_FILE
    if not path.is_file():
        raise LaunchError(
            f"no launcher is running for {run_dir} (no {PRESENCE_FILE} there): "
            f"start the run with `meshrl train` (or `meshrl train --resume {run_dir}`)"
        )
    try:
        info = LauncherInfo(**json.loads(path.read_text()))
    except (ValueError, TypeError) as err:
        raise LaunchError(f"{path} is not a launcher file meshrl can read ({err})") from None
    if not pid_alive(info.pid):
        raise LaunchError(
            f"the launcher of {run_dir} (pid {info.pid}) is not running any more; "
            f"continue the run with `meshrl train --resume {run_dir}`"
        )
    return info


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
