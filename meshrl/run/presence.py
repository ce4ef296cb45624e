"""The running launcher's calling card: `RUN_DIR/launcher.json`, there exactly while it runs.

    with launcher_presence(run_dir, LauncherInfo(pid, run_id, nats_url, learner_grpc, replicas)):
        ...                                        # the run
    info = find_launcher(run_dir)                  # from `meshrl scale` / `meshrl status`

What another process on this machine needs to talk to a local run: the launcher's pid (is it
still running?), the run id and NATS url (the run id is made at start and is in no config
file), the learner's control address, and the replica counts the launcher keeps per
scalable service. `find_launcher` raises LaunchError, with what to do, when no launcher is
running for RUN_DIR (no file, or its pid is gone: a launcher killed with SIGKILL leaves it).

Simplification: a pid reused by another process after a SIGKILLed launcher is taken for the
launcher; `meshrl scale` then writes a request nobody reads (harmless).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from meshrl.errors import LaunchError
from meshrl.run import layout
from meshrl.run.launch_lock import launch_lock

PRESENCE_FILE = layout.PRESENCE


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
    """Hold the run's launch lock (launch_lock.py: who the launcher is, for whoever would signal
    it) and write launcher.json, for the block's duration; removed however the block ends."""
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
